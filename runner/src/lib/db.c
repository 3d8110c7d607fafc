/* lib/db.c — see db.h. */
#include "lib/db.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

#define DB_RETRIES 3

struct db_op {
    struct db_op *next;
    char *sql;
    int n;
    char **params;
    unsigned flags;
    uint64_t give_up_ms;   /* 0: never given up */
    int retries;
    db_cb cb;
    void *arg;
};

static void db_pump(struct db *db);
static void db_poll_cb(uv_poll_t *h, int status, int events);

void db_init(struct db *db, uv_loop_t *loop, struct db_hooks hooks)
{
    memset(db, 0, sizeof *db);
    db->loop = loop;
    db->hooks = hooks;
    db->gated = true;
}

bool db_connected(const struct db *db)
{
    return db->conn != NULL;
}

bool db_idle(const struct db *db)
{
    return db->queue == NULL && db->inflight == NULL;
}

static void op_free(struct db *db, struct db_op *op)
{
    if (op->give_up_ms)
        db->n_until--;
    for (int i = 0; i < op->n; i++)
        free(op->params[i]);
    free(op->params);
    free(op->sql);
    free(op);
}

static void queue_push_front(struct db *db, struct db_op *op)
{
    op->next = db->queue;
    db->queue = op;
    if (db->queue_tail == NULL)
        db->queue_tail = op;
}

static void queue_push_back(struct db *db, struct db_op *op)
{
    op->next = NULL;
    if (db->queue_tail)
        db->queue_tail->next = op;
    else
        db->queue = op;
    db->queue_tail = op;
}

/* The first queued op allowed to run now, unlinked; NULL if none. */
static struct db_op *queue_take_runnable(struct db *db)
{
    struct db_op *prev = NULL;
    for (struct db_op *op = db->queue; op; prev = op, op = op->next) {
        if (db->gated && !(op->flags & DB_UNGATED))
            continue;
        if (prev)
            prev->next = op->next;
        else
            db->queue = op->next;
        if (db->queue_tail == op)
            db->queue_tail = prev;
        op->next = NULL;
        return op;
    }
    return NULL;
}

static void poll_close_cb(uv_handle_t *h)
{
    free(h);
}

static void poll_stop(struct db *db)
{
    if (db->poll) {
        uv_poll_stop(db->poll);
        uv_close((uv_handle_t *)db->poll, poll_close_cb);
        db->poll = NULL;
    }
    db->poll_events = 0;
}

static void poll_watch(struct db *db, int events)
{
    if (db->poll == NULL || db->poll_events == events)
        return;
    int rc = uv_poll_start(db->poll, events, db_poll_cb);
    if (rc != 0)
        log_error("db", "cannot poll the database socket: %s", uv_strerror(rc));
    db->poll_events = events;
}

int db_attach(struct db *db, PGconn *conn)
{
    int fd = PQsocket(conn);
    if (fd < 0 || PQsetnonblocking(conn, 1) != 0) {
        log_error("db", "cannot make the connection non-blocking: %s", pgerr_conn_message(conn));
        PQfinish(conn);
        return -1;
    }
    db->poll = xmalloc(sizeof *db->poll);
    int rc = uv_poll_init_socket(db->loop, db->poll, fd);
    if (rc != 0) {
        log_error("db", "cannot poll the database socket: %s", uv_strerror(rc));
        free(db->poll);
        db->poll = NULL;
        PQfinish(conn);
        return -1;
    }
    db->poll->data = db;
    db->conn = conn;
    db->gated = true;
    db->poll_events = 0;
    poll_watch(db, UV_READABLE);
    db_pump(db);
    return 0;
}

void db_open_gate(struct db *db)
{
    db->gated = false;
    db_pump(db);
}

void db_query(struct db *db, const char *sql, int n, const char *const *params,
              unsigned flags, db_cb cb, void *arg)
{
    db_query_until(db, sql, n, params, flags, 0, cb, arg);
}

void db_query_until(struct db *db, const char *sql, int n, const char *const *params,
                    unsigned flags, uint64_t give_up_ms, db_cb cb, void *arg)
{
    struct db_op *op = xcalloc(1, sizeof *op);
    op->give_up_ms = give_up_ms;
    if (give_up_ms)
        db->n_until++;
    op->sql = xstrdup(sql);
    op->n = n;
    op->params = n ? xcalloc((size_t)n, sizeof *op->params) : NULL;
    for (int i = 0; i < n; i++)
        op->params[i] = params[i] ? xstrdup(params[i]) : NULL;
    op->flags = flags;
    op->cb = cb;
    op->arg = arg;
    queue_push_back(db, op);
    db_pump(db);
}

/* Hands an answer (or NULL) to the op's callback, or logs a failure when
 * the op has none. */
static void op_finish(struct db *db, struct db_op *op, PGresult *res)
{
    if (op->cb) {
        op->cb(db, res, op->arg);
    } else if (res) {
        if (pgerr_classify(db->conn, res) != PGERR_NONE)
            log_warning("db", "query failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                        pgerr_sqlstate(res));
        PQclear(res);
    }
    op_free(db, op);
}

void db_expire(struct db *db, uint64_t now)
{
    struct db_op *expired = NULL, **tail = &expired, *prev = NULL;
    if (db->n_until == 0)
        return;
    for (struct db_op *op = db->queue, *next; op; op = next) {
        next = op->next;
        if (op->give_up_ms == 0 || now < op->give_up_ms) {
            prev = op;
            continue;
        }
        if (prev)
            prev->next = next;
        else
            db->queue = next;
        if (db->queue_tail == op)
            db->queue_tail = prev;
        op->next = NULL;
        *tail = op;
        tail = &op->next;
    }
    /* Unlinked first: a callback may queue more. */
    for (struct db_op *op = expired, *next; op; op = next) {
        next = op->next;
        op_finish(db, op, NULL);
    }
}

/* ---- prepared statements (DB_PREPARED) ---- */

static int prepared_find(const struct db *db, const char *sql)
{
    for (int i = 0; i < db->n_prepared; i++)
        if (strcmp(db->prepared[i].sql, sql) == 0)
            return i;
    return -1;
}

static void prepared_drop(struct db *db, int k)
{
    free(db->prepared[k].sql);
    db->prepared[k] = db->prepared[--db->n_prepared];
    memset(&db->prepared[db->n_prepared], 0, sizeof db->prepared[0]);
}

/* A new connection has none of the old one's statements. */
static void prepared_forget(struct db *db)
{
    while (db->n_prepared > 0)
        prepared_drop(db, db->n_prepared - 1);
    db->preparing = false;
    db->names = 0;
}

/* Sends op's Prepare (under a name never used on this connection), its
 * prepared execution, or, past DB_MAX_PREPARED texts, the op unprepared. */
static int send_prepared(struct db *db, struct db_op *op)
{
    int k = prepared_find(db, op->sql);
    if (k >= 0)
        return PQsendQueryPrepared(db->conn, db->prepared[k].name, op->n, (const char *const *)op->params, NULL,
                                   NULL, 0);
    if (db->n_prepared == DB_MAX_PREPARED)
        return PQsendQueryParams(db->conn, op->sql, op->n, NULL, (const char *const *)op->params, NULL, NULL, 0);
    struct db_prepared *p = &db->prepared[db->n_prepared];
    snprintf(p->name, sizeof p->name, "pepsi_%lu", ++db->names);
    db->preparing = true;
    return PQsendPrepare(db->conn, p->name, op->sql, op->n, NULL);
}

/* The Prepare of the inflight op came back: on success the op goes back
 * to the front of the queue to run prepared; returns false when it
 * failed (res is then the op's answer). */
static bool prepare_done(struct db *db, struct db_op *op, PGresult *res)
{
    db->preparing = false;
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        return false;
    struct db_prepared *p = &db->prepared[db->n_prepared++];
    p->sql = xstrdup(op->sql);
    log_debug("db", "prepared %s: %.60s", p->name, op->sql);
    PQclear(res);
    queue_push_front(db, op);
    return true;
}

/* A prepared statement the server no longer has (26000), or whose cached
 * plan can no longer give the result type it was prepared with (0A000:
 * a function it calls was replaced by a deploy): forgotten, so that the
 * op is prepared again under a new name. Returns whether to retry. */
static bool prepared_stale(struct db *db, struct db_op *op, const PGresult *res)
{
    if (!(op->flags & DB_PREPARED) || op->retries >= DB_RETRIES)
        return false;
    const char *state = pgerr_sqlstate(res);
    int k = prepared_find(db, op->sql);
    if (k < 0 || (strcmp(state, "26000") != 0 && strcmp(state, "0A000") != 0))
        return false;
    log_notice("db", "prepared statement %s is stale (%s); preparing it again", db->prepared[k].name,
               pgerr_message(db->conn, res));
    prepared_drop(db, k);
    return true;
}

/* Sends the next runnable op when the connection is free; one whose time
 * is up is given up rather than sent. */
static void db_send_next(struct db *db)
{
    if (db->conn == NULL || db->inflight)
        return;
    db_expire(db, now_ms());
    if (db->conn == NULL || db->inflight)
        return;
    struct db_op *op = queue_take_runnable(db);
    if (op == NULL)
        return;
    int sent = (op->flags & DB_MULTI) && op->n == 0 ? PQsendQuery(db->conn, op->sql)
               : (op->flags & DB_PREPARED)      ? send_prepared(db, op)
                                                : PQsendQueryParams(db->conn, op->sql, op->n, NULL,
                                                                    (const char *const *)op->params, NULL, NULL, 0);
    if (!sent) {
        log_warning("db", "cannot send a query: %s", pgerr_conn_message(db->conn));
        queue_push_front(db, op);
        db_disconnect(db, true);
        if (db->hooks.lost)
            db->hooks.lost(db->hooks.arg);
        return;
    }
    db->inflight = op;
    int f = PQflush(db->conn);
    poll_watch(db, f == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE);
}

static void db_lost(struct db *db)
{
    char why[512];
    conn_error_line(PQerrorMessage(db->conn), why, sizeof why);
    log_warning("db", "lost the database connection: %s", why);
    db_disconnect(db, true);
    if (db->hooks.lost)
        db->hooks.lost(db->hooks.arg);
}

/* The inflight query's results are complete: retry or deliver. */
static void db_complete(struct db *db)
{
    struct db_op *op = db->inflight;
    PGresult *res = db->answer;
    db->inflight = NULL;
    db->answer = NULL;
    if (db->preparing && prepare_done(db, op, res))
        return;
    db->queries++;
    if (prepared_stale(db, op, res)) {
        op->retries++;
        PQclear(res);
        queue_push_front(db, op);
        return;
    }
    if (pgerr_classify(db->conn, res) == PGERR_RETRY && op->retries < DB_RETRIES) {
        op->retries++;
        log_debug("db", "retrying a query after sqlstate=%s", pgerr_sqlstate(res));
        PQclear(res);
        queue_push_front(db, op);
        return;
    }
    op_finish(db, op, res);
}

static void db_read_notifies(struct db *db)
{
    PGnotify *n;
    while (db->conn && (n = PQnotifies(db->conn)) != NULL) {
        if (db->hooks.notify)
            db->hooks.notify(db->hooks.arg, n->relname);
        if (db->hooks.notify_payload)
            db->hooks.notify_payload(db->hooks.arg, n->relname, n->extra);
        PQfreemem(n);
    }
}

/* Reads what the server sent: results of the inflight query, notifies. */
static void db_read(struct db *db)
{
    if (!PQconsumeInput(db->conn)) {
        db_lost(db);
        return;
    }
    while (db->conn && db->inflight && !PQisBusy(db->conn)) {
        PGresult *res = PQgetResult(db->conn);
        if (res == NULL) {
            db_complete(db);
            break;
        }
        if (db->answer == NULL) {
            db->answer = res;
        } else if (pgerr_classify(db->conn, res) != PGERR_NONE && pgerr_classify(db->conn, db->answer) == PGERR_NONE) {
            PQclear(db->answer); /* of several statements, the first error is the answer */
            db->answer = res;
        } else {
            PQclear(res);
        }
    }
    if (db->conn)
        db_read_notifies(db);
}

static void db_poll_cb(uv_poll_t *h, int status, int events)
{
    struct db *db = h->data;
    if (db->conn == NULL || db->poll != h)
        return;
    if (status < 0) {
        log_warning("db", "poll error on the database socket: %s", uv_strerror(status));
        db_lost(db);
        return;
    }
    if (events & UV_WRITABLE) {
        int f = PQflush(db->conn);
        if (f < 0) {
            db_lost(db);
            return;
        }
        poll_watch(db, f == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE);
    }
    if (events & UV_READABLE)
        db_read(db);
    db_pump(db);
}

/* Sends the next query when the connection is free. */
static void db_pump(struct db *db)
{
    db_send_next(db);
}

void db_disconnect(struct db *db, bool keep)
{
    struct db_op *failed = NULL, **tail = &failed;

    poll_stop(db);
    if (db->conn) {
        PQfinish(db->conn);
        db->conn = NULL;
    }
    prepared_forget(db);
    if (db->answer) {
        PQclear(db->answer);
        db->answer = NULL;
    }
    if (db->inflight) {
        queue_push_front(db, db->inflight);
        db->inflight = NULL;
    }
    /* Split the queue: ops to resend stay, the rest fail now. */
    struct db_op *keep_head = NULL, **keep_tail = &keep_head, *last_kept = NULL;
    for (struct db_op *op = db->queue, *next; op; op = next) {
        next = op->next;
        op->next = NULL;
        if (keep && (op->flags & DB_RESEND) && !(op->flags & DB_UNGATED)) {
            *keep_tail = op;
            keep_tail = &op->next;
            last_kept = op;
        } else {
            *tail = op;
            tail = &op->next;
        }
    }
    db->queue = keep_head;
    db->queue_tail = last_kept;
    db->gated = true;
    for (struct db_op *op = failed, *next; op; op = next) {
        next = op->next;
        op_finish(db, op, NULL);
    }
}

void db_shutdown(struct db *db)
{
    /* Callbacks of failed queries may queue more; fail those too. */
    for (int round = 0; round < 8; round++) {
        db_disconnect(db, false);
        if (db->queue == NULL)
            return;
    }
    log_warning("db", "queries still queued at shutdown were dropped");
    while (db->queue) {
        struct db_op *op = db->queue;
        db->queue = op->next;
        op_free(db, op);
    }
    db->queue_tail = NULL;
}
