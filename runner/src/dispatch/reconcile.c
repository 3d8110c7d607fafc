/* dispatch/reconcile.c — see reconcile.h. */
#include "dispatch/reconcile.h"

#include "lib/log.h"
#include "lib/pgerr.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "reconcile"
/* A scheduled pass over unchanged data is skipped without a write (D-139). */
#define PASS_SQL "select ran, run_id, findings, unchanged from pepsi.reconcile(now(), $1, $2::jsonb, $1 = 'schedule')"
#define ANOMALY_SQL                                                                                  \
    "select count(*) filter (where state = 'firing'), count(*) filter (where state = 'firing' and changed)," \
    " count(*) filter (where state = 'error'), count(*)"                                             \
    " from pepsi.anomaly_run(now(), false)"

char *reconcile_limits_json(const struct conf *c)
{
    json_t *obj = json_object();
    int rc = obj ? 0 : -1;
    for (size_t i = 0; c && rc == 0 && i < c->n_stages; i++) {
        const struct stage_conf *s = &c->stages[i];
        /* The most a message may wait behind in one worker's queue: the
         * adaptive hand-out's maximum when QUEUE_LIMIT is unset (issue 19). */
        json_t *lim = json_pack("{s:I,s:i}", "max_runtime_ms", (json_int_t)s->max_runtime_ms, "queue_limit",
                                conf_stage_hand_max(s));
        rc = lim ? json_object_set_new(obj, s->name, lim) : -1;
    }
    char *text = rc == 0 ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(obj);
    return text;
}

/* Whether a query may go out now: connected, not setting up, not stopping. */
static bool can_query(const struct reconcile *rc)
{
    return !rc->stopped && db_connected(rc->db) && !rc->db->gated;
}

/* ---- passes ---- */

static void pass_run(struct reconcile *rc, const char *trigger);

/* Logs what one pass did. */
static void pass_report(PGconn *conn, PGresult *res, const char *trigger)
{
    if (res == NULL) {
        log_warning(COMPONENT, "reconciliation pass (%s) lost: no database; the next trigger tries again", trigger);
    } else if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_warning(COMPONENT, "reconciliation pass (%s) failed: %s sqlstate=%s", trigger, pgerr_message(conn, res),
                    pgerr_sqlstate(res));
    } else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0 && strcmp(PQgetvalue(res, 0, 3), "t") == 0) {
        log_debug(COMPONENT, "reconciliation pass (%s) skipped: nothing changed since the last one", trigger);
    } else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
        log_info(COMPONENT, "reconciliation pass (%s) skipped: another pass holds the lock", trigger);
    } else if (atoi(PQgetvalue(res, 0, 2)) > 0) {
        log_notice(COMPONENT, "reconciliation pass run=%s (%s): %s finding(s); see pepsi.reconcile_findings",
                   PQgetvalue(res, 0, 1), trigger, PQgetvalue(res, 0, 2));
    } else {
        log_debug(COMPONENT, "reconciliation pass run=%s (%s): nothing found", PQgetvalue(res, 0, 1), trigger);
    }
}

struct pass_ctx {
    struct reconcile *rc;
    const char *trigger;             /* a string literal */
};

static void pass_done(struct db *db, PGresult *res, void *arg)
{
    struct pass_ctx *pc = arg;
    struct reconcile *rc = pc->rc;
    pass_report(db->conn, res, pc->trigger);
    if (res)
        PQclear(res);
    free(pc);
    rc->pass_inflight = false;
    if (rc->pass_again && can_query(rc)) {
        const char *again = rc->pass_again;
        rc->pass_again = NULL;
        pass_run(rc, again);
    }
}

/* Runs a pass unless one is in flight on this connection, in which case
 * one more follows it. Without a connection, nothing: the next tick or
 * notification after the reconnect runs one. */
static void pass_run(struct reconcile *rc, const char *trigger)
{
    if (!can_query(rc)) {
        log_debug(COMPONENT, "reconciliation pass (%s) not started: no database", trigger);
        return;
    }
    if (rc->pass_inflight) {
        rc->pass_again = trigger;
        return;
    }
    char *limits = rc->limits(rc->limits_arg);
    if (limits == NULL) {
        log_error(COMPONENT, "cannot encode the stage limits; reconciliation pass (%s) not started", trigger);
        return;
    }
    struct pass_ctx *pc = malloc(sizeof *pc);
    if (pc == NULL) {
        log_error(COMPONENT, "out of memory; reconciliation pass (%s) not started", trigger);
        free(limits);
        return;
    }
    pc->rc = rc;
    pc->trigger = trigger;
    rc->pass_inflight = true;
    const char *params[] = {trigger, limits};
    db_query(rc->db, PASS_SQL, 2, params, 0, pass_done, pc);
    free(limits);
}

static void pass_timer_cb(uv_timer_t *t)
{
    pass_run(t->data, "schedule");
}

void reconcile_notify(struct reconcile *rc)
{
    if (rc->stopped)
        return;
    log_debug(COMPONENT, "NOTIFY reconcile: a pass now");
    pass_run(rc, "notify");
}

/* ---- anomaly checks ---- */

static void anomaly_done(struct db *db, PGresult *res, void *arg)
{
    struct reconcile *rc = arg;
    rc->anomaly_inflight = false;
    if (res == NULL) {
        log_warning(COMPONENT, "anomaly checks lost: no database; they run again in %s",
                    LOG_DURATION(rc->anomaly_ms));
        return;
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_warning(COMPONENT, "anomaly checks failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                    pgerr_sqlstate(res));
    } else if (atoi(PQgetvalue(res, 0, 3)) == 0) {
        log_debug(COMPONENT, "anomaly checks skipped: another run holds the lock");
    } else if (atoi(PQgetvalue(res, 0, 1)) > 0) {
        /* anomaly_run has sent NOTIFY reconcile: a pass follows (W-41). */
        log_warning(COMPONENT, "anomaly checks: %s firing (%s new), %s in error; see pepsi.anomaly_dashboard",
                    PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
    } else {
        log_debug(COMPONENT, "anomaly checks: %s firing, %s in error", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2));
    }
    PQclear(res);
}

/* The views, refreshed one statement (one short transaction) each, in
 * the order anomaly_refresh(NULL) uses; then the run without a refresh. */
static const char *const anomaly_views[] = {"anomaly_event_mv", "anomaly_queue_mv", "anomaly_orphan_mv",
                                            "anomaly_gap_mv"};
#define N_ANOMALY_VIEWS (sizeof anomaly_views / sizeof anomaly_views[0])

static void anomaly_step(struct reconcile *rc);

static void refresh_done(struct db *db, PGresult *res, void *arg)
{
    struct reconcile *rc = arg;
    if (res == NULL) {
        rc->anomaly_inflight = false;
        log_warning(COMPONENT, "anomaly checks lost: no database; they run again in %s",
                    LOG_DURATION(rc->anomaly_ms));
        return;
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_warning(COMPONENT, "refresh of pepsi.%s failed: %s sqlstate=%s", anomaly_views[rc->anomaly_step - 1],
                    pgerr_message(db->conn, res), pgerr_sqlstate(res));
        rc->refresh_failed = true;
    } else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
        rc->refresh_failed = true; /* another session was refreshing it: not known current */
    }
    PQclear(res);
    if (rc->anomaly_step == N_ANOMALY_VIEWS && !rc->refresh_failed && rc->stamp_pending >= 0) {
        rc->stamp_refreshed = rc->stamp_pending;
        rc->stamp_known = true;
    }
    anomaly_step(rc);
}

/* The next statement of a run: a view's refresh, or the evaluation. */
static void anomaly_step(struct reconcile *rc)
{
    if (!can_query(rc)) {
        rc->anomaly_inflight = false;
        return;
    }
    if (rc->anomaly_step < N_ANOMALY_VIEWS) {
        const char *params[] = {anomaly_views[rc->anomaly_step++]};
        db_query(rc->db, "select pepsi.anomaly_refresh($1)", 1, params, 0, refresh_done, rc);
        return;
    }
    db_query(rc->db, ANOMALY_SQL, 0, NULL, 0, anomaly_done, rc);
}

/* Whether the data moved since the views were last refreshed: an idle
 * queue needs no refresh, and a refresh writes (its temporary tables go
 * into the catalog) — D-139. */
static void stamp_done(struct db *db, PGresult *res, void *arg)
{
    struct reconcile *rc = arg;
    if (res == NULL) {
        rc->anomaly_inflight = false;
        return;
    }
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        rc->stamp_pending = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        if (rc->stamp_known && rc->stamp_pending == rc->stamp_refreshed)
            rc->anomaly_step = N_ANOMALY_VIEWS; /* the views are current */
    } else {
        log_warning(COMPONENT, "cannot read the data stamp: %s; refreshing the views", pgerr_message(db->conn, res));
        rc->stamp_pending = -1;
    }
    PQclear(res);
    anomaly_step(rc);
}

static void anomaly_timer_cb(uv_timer_t *t)
{
    struct reconcile *rc = t->data;
    if (rc->anomaly_inflight || !can_query(rc))
        return;
    rc->anomaly_inflight = true;
    rc->anomaly_step = 0;
    rc->refresh_failed = false;
    db_query(rc->db, "select pepsi.reconcile_stamp()", 0, NULL, 0, stamp_done, rc);
}

/* ---- start and stop ---- */

int reconcile_start(struct reconcile *rc, uv_loop_t *loop, struct db *db, const struct conf *conf,
                    reconcile_limits_fn limits, void *arg)
{
    memset(rc, 0, sizeof *rc);
    rc->db = db;
    rc->limits = limits;
    rc->limits_arg = arg;
    rc->pass_ms = conf->reconcile_interval_ms;
    rc->anomaly_ms = conf->anomaly_interval_ms;
    int err = uv_timer_init(loop, &rc->pass_timer);
    err = err ? err : uv_timer_init(loop, &rc->anomaly_timer);
    if (err == 0) {
        rc->pass_timer.data = rc->anomaly_timer.data = rc;
        err = uv_timer_start(&rc->pass_timer, pass_timer_cb, (uint64_t)rc->pass_ms, (uint64_t)rc->pass_ms);
    }
    err = err ? err : uv_timer_start(&rc->anomaly_timer, anomaly_timer_cb, (uint64_t)rc->anomaly_ms,
                                     (uint64_t)rc->anomaly_ms);
    if (err != 0)
        log_error(COMPONENT, "cannot start the reconciliation timers: %s", uv_strerror(err));
    else
        log_info(COMPONENT, "reconciliation every %s and on NOTIFY reconcile; anomaly checks every %s",
                 LOG_DURATION(rc->pass_ms), LOG_DURATION(rc->anomaly_ms));
    return err;
}

void reconcile_stop(struct reconcile *rc)
{
    rc->stopped = true;
    rc->pass_again = NULL;
    if (uv_is_active((uv_handle_t *)&rc->pass_timer))
        uv_timer_stop(&rc->pass_timer);
    if (uv_is_active((uv_handle_t *)&rc->anomaly_timer))
        uv_timer_stop(&rc->anomaly_timer);
}
