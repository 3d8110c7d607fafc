/* test_db.c — the coordinator connection's queue without a database:
 * queries that may be given up (db_query_until, D-102 / issue 12). */
#include "unit.h"

#include "lib/db.h"
#include "lib/util.h"

#include <stdlib.h>

struct seen {
    int calls;
    int null_answers;
};

static void count_cb(struct db *db, PGresult *res, void *arg)
{
    (void)db;
    struct seen *s = arg;
    s->calls++;
    if (res == NULL)
        s->null_answers++;
    else
        PQclear(res);
}

/* A callback that queues another query, as defer_done may log and a
 * caller may react: db_expire must cope with the queue changing. */
static void requeue_cb(struct db *db, PGresult *res, void *arg)
{
    count_cb(db, res, arg);
    db_query(db, "select 2", 0, NULL, DB_RESEND, count_cb, arg);
}

int main(void)
{
    uv_loop_t loop;
    struct db db;
    struct seen a = {0, 0}, b = {0, 0}, c = {0, 0};
    uint64_t t = now_ms();

    uv_loop_init(&loop);
    db_init(&db, &loop, (struct db_hooks){NULL, NULL, NULL, NULL});

    /* Disconnected: everything waits in the queue. */
    db_query_until(&db, "select 1", 0, NULL, DB_RESEND, t + 30000, count_cb, &a);
    db_query(&db, "select 1", 0, NULL, DB_RESEND, count_cb, &b);
    db_query_until(&db, "select 1", 0, NULL, DB_RESEND, t + 60000, requeue_cb, &c);
    CHECK(!db_idle(&db), "queries wait while there is no connection");
    CHECK_INT(db.n_until, 2, "two queries may be given up");

    db_expire(&db, t + 29999);
    CHECK_INT(a.calls, 0, "D-102: not given up before its time");

    db_expire(&db, t + 30000);
    CHECK_INT(a.calls, 1, "D-102: given up at its time, once");
    CHECK_INT(a.null_answers, 1, "D-102: the callback sees no answer (NULL)");
    CHECK_INT(b.calls, 0, "a query without a time waits on");
    CHECK_INT(c.calls, 0, "a later time waits on");
    CHECK_INT(db.n_until, 1, "one query left that may be given up");

    /* A reconnect keeps DB_RESEND queries; the time still counts. */
    db_disconnect(&db, true);
    CHECK_INT(c.calls, 0, "db_disconnect(keep) keeps a DB_RESEND query with a time");
    db_expire(&db, t + 90000);
    CHECK_INT(c.calls, 1, "D-102: given up after a reconnect too");
    CHECK_INT(c.calls - c.null_answers, 0, "with no answer");
    CHECK_INT(db.n_until, 0, "none left that may be given up");
    CHECK_INT(b.calls, 0, "the query without a time is still queued");

    /* Shutdown fails the rest, including what a callback queued meanwhile. */
    db_shutdown(&db);
    CHECK_INT(b.calls, 1, "shutdown answers the waiting query with NULL");
    CHECK_INT(c.calls, 2, "and the one queued by a callback");
    CHECK(db_idle(&db), "nothing is left queued");
    while (uv_run(&loop, UV_RUN_NOWAIT) != 0)
        ;
    CHECK_INT(uv_loop_close(&loop), 0, "the loop closes cleanly");
    return unit_done();
}
