/* dispatch/vacuum.c — see vacuum.h. */
#include "dispatch/vacuum.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "vacuum"
#define RETRY_MS 5000
/* The statistics, not the table: a read of shared memory, no lock. And
 * whether this login may vacuum the table at all (PostgreSQL 15: its
 * owner's rights, the database owner's, or a superuser). */
#define CHECK_SQL                                                                                    \
    "select s.n_dead_tup, pg_get_userbyid(c.relowner), current_user,"                              \
    " pg_has_role(current_user, c.relowner, 'USAGE')"                                              \
    " or pg_has_role(current_user, d.datdba, 'USAGE')"                                            \
    " or coalesce((select r.rolsuper from pg_roles r where r.rolname = current_user), false)"     \
    " from pg_stat_user_tables s join pg_class c on c.oid = s.relid"                               \
    " join pg_database d on d.datname = current_database()"                                        \
    " where s.relid = 'pepsi.workqueue'::regclass"
#define VACUUM_SQL "vacuum (skip_locked) pepsi.workqueue"
#define SQLSTATE_LOCK_NOT_AVAILABLE "55P03"

static void connect_now(struct vacuum *v);

static void schedule(struct vacuum *v, uint64_t ms, uv_timer_cb cb)
{
    if (!v->stopped && uv_timer_start(&v->timer, cb, ms, 0) != 0)
        log_error(COMPONENT, "cannot start the vacuum timer; no more checks");
}

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- the VACUUM ---- */

/* The server's warnings on this connection: while a VACUUM runs they say
 * why it did nothing (kept for vacuum_done); others are logged. */
static void notice_cb(void *arg, const PGresult *res)
{
    struct vacuum *v = arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (v->dead_before >= 0 && sev && strcmp(sev, "WARNING") == 0 && v->warn_state[0] == '\0') {
        char line[sizeof v->warn_text];
        copy(v->warn_state, sizeof v->warn_state, pgerr_sqlstate(res));
        copy(v->warn_text, sizeof v->warn_text, pgerr_fold(PQresultErrorMessage(res), line, sizeof line));
        return;
    }
    pgerr_notice_receiver((void *)COMPONENT, res);
}

/* A VACUUM that the server skipped with a WARNING: another vacuum holds
 * the table (55P03, normal), or the login may not vacuum it (PostgreSQL
 * 15 sends 01000 and does nothing): said once, with the grant. */
static void vacuum_skipped(struct vacuum *v)
{
    if (strcmp(v->warn_state, SQLSTATE_LOCK_NOT_AVAILABLE) == 0) {
        log_debug(COMPONENT, "vacuum of pepsi.workqueue skipped: another vacuum holds it");
        return;
    }
    if (v->refused_logged) {
        log_debug(COMPONENT, "vacuum of pepsi.workqueue skipped by the server: %s", v->warn_text);
        return;
    }
    v->refused_logged = true;
    log_warning(COMPONENT,
                "vacuum of pepsi.workqueue skipped by the server: %s sqlstate=%s; login \"%s\" does not own "
                "the table (owner \"%s\"): leaving it to autovacuum; either lower the server's "
                "autovacuum_naptime and set VACUUM_DEAD_TUPLES = 0, or let the runner vacuum: grant \"%s\" "
                "to \"%s\" (every right of the owner) or run the runner as the owner (README \"Vacuum\"); "
                "said once",
                v->warn_text, v->warn_state, v->login, v->owner, v->owner, v->login);
}

static void check_cb(uv_timer_t *t);

/* A login that may not vacuum the table gives its connection back (issue
 * 19: a role with a connection limit must keep its slots for workers; e2e
 * 31) and says so once; a restart checks again. Run from the timer, not
 * from the result's callback, which may not shut its own connection. */
static void release_cb(uv_timer_t *t)
{
    struct vacuum *v = t->data;
    if (v->stopped)
        return;
    log_warning(COMPONENT,
                "login \"%s\" may not vacuum pepsi.workqueue (owner \"%s\"): leaving it to autovacuum and "
                "closing this connection; either lower the server's autovacuum_naptime and set "
                "VACUUM_DEAD_TUPLES = 0, or let the runner vacuum: grant \"%s\" to \"%s\" (every right of the "
                "owner) or run the runner as the owner (README \"Vacuum\"), then restart it",
                v->login, v->owner, v->owner, v->login);
    v->stopped = true;
    db_shutdown(&v->db);
}

static void vacuum_done(struct db *db, PGresult *res, void *arg)
{
    struct vacuum *v = arg;
    v->inflight = false;
    if (res == NULL) {
        v->dead_before = -1;
        return; /* the connection is gone: lost_cb reconnects */
    }
    uint64_t took = now_ms() - v->started_ms;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        log_warning(COMPONENT, "vacuum of pepsi.workqueue failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                    pgerr_sqlstate(res));
    } else if (v->warn_state[0] != '\0') {
        vacuum_skipped(v);
    } else {
        v->vacuums++;
        log_info(COMPONENT, "vacuumed pepsi.workqueue in %s: dead_tuples_before=%lld bound=%d", LOG_DURATION(took),
                 v->dead_before, v->conf->vacuum_dead_tuples);
    }
    PQclear(res);
    v->dead_before = -1;
    schedule(v, VACUUM_CHECK_MS, check_cb);
}

static void vacuum_run(struct vacuum *v, long long dead)
{
    v->dead_before = dead;
    v->warn_state[0] = v->warn_text[0] = '\0';
    v->started_ms = now_ms();
    v->inflight = true;
    log_debug(COMPONENT, "pepsi.workqueue has %lld dead tuples (bound %d): vacuuming", dead,
              v->conf->vacuum_dead_tuples);
    db_query(&v->db, VACUUM_SQL, 0, NULL, 0, vacuum_done, v);
}

/* ---- the checks ---- */

static void check_done(struct db *db, PGresult *res, void *arg)
{
    struct vacuum *v = arg;
    v->inflight = false;
    if (res == NULL)
        return;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_warning(COMPONENT, "cannot read the dead tuples of pepsi.workqueue: %s sqlstate=%s",
                    pgerr_message(db->conn, res), pgerr_sqlstate(res));
        PQclear(res);
        schedule(v, RETRY_MS, check_cb);
        return;
    }
    long long dead = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    copy(v->owner, sizeof v->owner, PQgetvalue(res, 0, 1));
    copy(v->login, sizeof v->login, PQgetvalue(res, 0, 2));
    bool allowed = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
    PQclear(res);
    if (!allowed) {
        schedule(v, 0, release_cb);
        return;
    }
    if (dead > v->conf->vacuum_dead_tuples && !v->stopped)
        vacuum_run(v, dead);
    else
        schedule(v, VACUUM_CHECK_MS, check_cb);
}

static void check_cb(uv_timer_t *t)
{
    struct vacuum *v = t->data;
    if (v->stopped || v->inflight)
        return;
    if (!db_connected(&v->db)) {
        connect_now(v);
        return;
    }
    v->inflight = true;
    db_query(&v->db, CHECK_SQL, 0, NULL, 0, check_done, v);
}

/* ---- the connection ---- */

static void retry_cb(uv_timer_t *t)
{
    connect_now(t->data);
}

static void lost_cb(void *arg)
{
    struct vacuum *v = arg;
    v->inflight = false;
    log_warning(COMPONENT, "lost the database connection; reconnecting in %s", LOG_DURATION(RETRY_MS));
    schedule(v, RETRY_MS, retry_cb);
}

static void connected_cb(PGconn *c, const char *why, bool overload, void *arg)
{
    struct vacuum *v = arg;
    (void)overload;
    v->connecting = NULL;
    if (c == NULL) {
        log_warning(COMPONENT, "cannot connect to the database: %s; trying again in %s", why,
                    LOG_DURATION(RETRY_MS));
        schedule(v, RETRY_MS, retry_cb);
        return;
    }
    PQsetNoticeReceiver(c, notice_cb, v);
    if (db_attach(&v->db, c) != 0) {
        schedule(v, RETRY_MS, retry_cb);
        return;
    }
    db_open_gate(&v->db);
    log_debug(COMPONENT, "connected: pepsi.workqueue checked every %s, vacuumed past %d dead tuples",
              LOG_DURATION(VACUUM_CHECK_MS), v->conf->vacuum_dead_tuples);
    schedule(v, VACUUM_CHECK_MS, check_cb);
}

static void connect_now(struct vacuum *v)
{
    if (v->stopped || v->connecting || db_connected(&v->db))
        return;
    v->connecting = aconn_start(v->loop, v->conf->conninfo, v->conf->connect_timeout_ms, "pepsi-runner vacuum",
                                connected_cb, v);
    if (v->connecting == NULL)
        schedule(v, RETRY_MS, retry_cb);
}

static void noop_notify(void *arg, const char *channel)
{
    (void)arg;
    (void)channel;
}

int vacuum_start(struct vacuum *v, uv_loop_t *loop, const struct conf *conf)
{
    memset(v, 0, sizeof *v);
    v->loop = loop;
    v->conf = conf;
    v->dead_before = -1;
    if (conf->vacuum_dead_tuples <= 0) {
        v->stopped = true;
        log_info(COMPONENT, "VACUUM_DEAD_TUPLES = 0: pepsi.workqueue is left to autovacuum");
        return 0;
    }
    db_init(&v->db, loop, (struct db_hooks){noop_notify, lost_cb, v, NULL});
    int err = uv_timer_init(loop, &v->timer);
    if (err != 0) {
        log_error(COMPONENT, "cannot start the vacuum checks: %s", uv_strerror(err));
        v->stopped = true;
        return err;
    }
    v->timer.data = v;
    log_info(COMPONENT, "pepsi.workqueue is vacuumed once its dead tuples pass %d (checked every %s)",
             conf->vacuum_dead_tuples, LOG_DURATION(VACUUM_CHECK_MS));
    connect_now(v);
    return 0;
}

void vacuum_stop(struct vacuum *v)
{
    if (v->stopped || v->loop == NULL)
        return;
    v->stopped = true;
    uv_timer_stop(&v->timer);
    aconn_cancel(v->connecting);
    v->connecting = NULL;
    db_shutdown(&v->db);
}
