/* dispatch/dispatch.c — see dispatch.h.
 *
 * The coordinator's rules (spec/dispatch.md):
 *  - every wake-up (a notification, a worker freed or dead, the heartbeat,
 *    a reconnect) only sets a flag; the claim round runs once the loop has
 *    drained its I/O, so a burst collapses into one claim (D-31, D-37);
 *  - one claim statement for all stages with free capacity (D-38);
 *  - a successful pass is never rewritten: it just brings the next claim
 *    (D-35, D-39);
 *  - every other write (requeue, strike, defer, statistics) is one SQL call,
 *    queued on the same connection and resent after a reconnect (D-20). */
#include "dispatch/dispatch.h"

#include "lib/aconn.h"
#include "dispatch/claim.h"
#include "lib/conn.h"
#include "lib/db.h"
#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"
#include "dispatch/pool.h"
#include "dispatch/maintain.h"
#include "lib/schema.h"
#include "dispatch/signals.h"
#include "dispatch/stagetab.h"
#include "dispatch/stats.h"
#include "lib/util.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#define COMPONENT "dispatch"
#define TICK_MS 1000
#define IDLE_FLUSH_MIN_MS 1000     /* idle flushes at most once a second (D-138) */
#define DEFER_74_MS 30000          /* status 74: pause for 30 s (D-100) */
#define DEFER_WRITE_MS 30000       /* how long the pause of a 74 may wait to be written (D-102) */
#define RECONNECT_MIN_MS 500
#define RECONNECT_MAX_MS 30000
#define SHUTDOWN_LIMIT_MS 60000    /* give up waiting for workers and the database */
#define RELOAD_RETRY_MS 5000       /* an overlay that could not be read (D-119) */
#define LISTEN_SQL "listen workqueue; listen config_changed; listen telemetry_changed"

struct runner {
    uv_loop_t *loop;
    struct conf *conf;             /* as read at start: [pepsi-dispatch] and [pepsi-postgres] (D-120) */
    const char *config_path;       /* re-read, with the overlay, on config_changed */
    struct db db;
    struct pool_env env;
    struct stagetab *tabs;         /* current stage table first, then retired ones */
    struct claimer *claimer;       /* the claim statement, and fair scheduling's leads */

    uv_idle_t claim_idle;          /* keeps the poll phase from blocking while a claim is wanted */
    uv_check_t claim_check;        /* runs the claim round after the poll phase (D-37) */
    uv_timer_t heartbeat;          /* POLL_INTERVAL (D-29) */
    uv_timer_t stats_timer;        /* STATS_INTERVAL (D-138) */
    uv_timer_t tick;               /* pools' housekeeping, idle flush, shutdown progress */
    uv_timer_t paused_timer;       /* the earliest paused timeout (D-93) */
    uv_timer_t reconnect_timer;
    uv_timer_t reload_timer;       /* retries a reload whose overlay could not be read */
    uv_signal_t sigint, sigterm;
    struct maintain maint;         /* reconciliation and anomaly runs, on their own connection (issue 12) */
    struct control_signals ctl;    /* which control notifications are news (issue 11) */

    bool claim_wanted;
    bool claim_inflight;
    bool heartbeat_due;            /* the next claim also releases due paused rows */
    int64_t incarnation;           /* pepsi.claim_incarnation(): claim ids are incarnation << 40 | n */
    int64_t claims_sent;           /* n of the last claim */
    int64_t claim_inflight_id;     /* the id of the claim in flight */
    int64_t *lost_claims;          /* claims whose answer was lost: given back after reconnecting */
    size_t n_lost_claims;
    uint64_t paused_due_ms;        /* when paused_timer fires, 0 when idle */
    bool answers_since_sweep;      /* a worker may have paused a message since */

    struct dispatch_delta dstats;
    uint64_t last_flush_ms;
    bool flush_inflight;
    bool gc_inflight;
    bool traffic_since_gc;
    bool traffic_since_flush;

    bool reload_inflight;
    bool reload_again;             /* config_changed arrived during a reload */

    int reconnect_delay_ms;
    struct aconn *connecting;      /* a reconnect under way, or NULL */
    uint64_t lock_lost_since_ms;   /* reconnects that found the lock taken */

    bool shutting_down;
    uint64_t shutdown_deadline_ms;
    int signals;
    int exit_code;
    bool stopped;                  /* the loop is being torn down */
};

static void wake(void *arg);
static void claim_round(struct runner *r);
static void db_lost_cb(void *arg);
static void notify_cb(void *arg, const char *channel);
static void shutdown_progress(struct runner *r);
static void begin_shutdown(struct runner *r, int code, bool kill_now);

/* ---- helpers ---- */

/* The stage called name in the current table. */
static struct stage *stage_by_name(struct runner *r, const char *name)
{
    return stagetab_find(r->tabs, name);
}

static int total_inflight(const struct runner *r)
{
    int n = 0;
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            n += t->stages[i].inflight;
    return n;
}

static int total_workers(const struct runner *r)
{
    int n = 0;
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            n += t->stages[i].n_workers;
    return n;
}

/* Appends a PostgreSQL array element (names and numbers need no quoting
 * beyond double quotes: stage names are restricted, pepsi.stage_check). */
static void buf_append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

/* ---- queue writes other than the claim ---- */

static void requeue_done(struct db *db, PGresult *res, void *arg)
{
    (void)arg;
    if (res == NULL) {
        log_warning(COMPONENT, "could not requeue messages (no database); the next start resets them");
        return;
    }
    if (pgerr_classify(db->conn, res) != PGERR_NONE)
        log_error(COMPONENT, "requeue failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                  pgerr_sqlstate(res));
    PQclear(res);
}

static void requeue_ids(struct runner *r, const char *const *stages, const int64_t *ids, size_t n)
{
    size_t li = 0, ci = 0, ls = 0, cs = 0;
    char *idbuf = NULL, *stbuf = NULL, num[32];

    if (n == 0)
        return;
    buf_append(&idbuf, &li, &ci, "{");
    buf_append(&stbuf, &ls, &cs, "{");
    for (size_t i = 0; i < n; i++) {
        snprintf(num, sizeof num, "%s%lld", i ? "," : "", (long long)ids[i]);
        buf_append(&idbuf, &li, &ci, num);
        buf_append(&stbuf, &ls, &cs, i ? ",\"" : "\"");
        buf_append(&stbuf, &ls, &cs, stages[i]);
        buf_append(&stbuf, &ls, &cs, "\"");
    }
    buf_append(&idbuf, &li, &ci, "}");
    buf_append(&stbuf, &ls, &cs, "}");
    const char *params[] = {idbuf, stbuf};
    db_query(&r->db, "select pepsi.workqueue_requeue($1::bigint[], $2::text[])", 2, params, DB_RESEND,
             requeue_done, r);
    free(idbuf);
    free(stbuf);
}

static void requeue_cb(void *arg, struct stage *s, const int64_t *ids, size_t n)
{
    struct runner *r = arg;
    const char **stages = xcalloc(n, sizeof *stages);
    for (size_t i = 0; i < n; i++)
        stages[i] = s->name;
    s->delta.requeued += (int64_t)n;
    log_debug(s->name, "requeueing %zu unrun message(s)", n);
    for (size_t i = 0; i < n; i++)
        claimer_requeued(r->claimer, ids[i], now_ms()); /* D-51 */
    requeue_ids(r, stages, ids, n);
    free(stages);
}

static void schedule_paused(struct runner *r, uint64_t delay_ms);

struct strike_ctx {
    struct runner *r;
    int64_t id;
    char stage[64];
};

static void strike_done(struct db *db, PGresult *res, void *arg)
{
    struct strike_ctx *sc = arg;
    if (res == NULL) {
        log_warning(sc->stage, "could not record a strike for message %lld (no database)",
                    (long long)sc->id);
    } else if (pgerr_classify(db->conn, res) != PGERR_NONE) {
        const char *code = pgerr_sqlstate(res);
        /* PX004/PX005: the worker finished the message before it died. */
        if (strcmp(code, "PX004") == 0 || strcmp(code, "PX005") == 0)
            log_debug(sc->stage, "message %lld had moved on; no strike", (long long)sc->id);
        else
            log_error(sc->stage, "strike for message %lld failed: %s sqlstate=%s", (long long)sc->id,
                      pgerr_message(db->conn, res), code);
    } else {
        const char *status = PQgetvalue(res, 0, 0);
        if (strcmp(status, "paused") == 0)
            schedule_paused(sc->r, 60 * 1000);
        else
            log_warning(sc->stage, "message %lld is %s after its third strike", (long long)sc->id, status);
    }
    if (res)
        PQclear(res);
    free(sc);
}

static void strike_cb(void *arg, struct stage *s, int64_t id, const char *kind, const char *reason)
{
    struct runner *r = arg;
    struct strike_ctx *sc = xcalloc(1, sizeof *sc);
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%lld", (long long)id);
    sc->r = r;
    sc->id = id;
    snprintf(sc->stage, sizeof sc->stage, "%s", s->name);
    s->delta.strikes++;
    claimer_struck(r->claimer, id, strcmp(kind, "hang") == 0, s->conf->max_runtime_ms, now_ms()); /* D-52 */
    const char *params[] = {idtext, s->name, kind, reason};
    db_query(&r->db, "select pepsi.workqueue_strike($1::bigint, $2, $3, $4)", 4, params, DB_RESEND,
             strike_done, sc);
}

struct defer_ctx {
    struct runner *r;
    int64_t id;
    uint64_t give_up_ms;           /* D-102: the pause is not written after this */
};

static void defer_done(struct db *db, PGresult *res, void *arg)
{
    struct defer_ctx *dc = arg;
    struct runner *r = dc->r;
    if (res == NULL) {
        if (now_ms() >= dc->give_up_ms)
            log_warning(COMPONENT, "could not write the pause of message %lld within %d s (no database); "
                        "leaving it running: the next start of the runner resets it to pending",
                        (long long)dc->id, DEFER_WRITE_MS / 1000);
        else
            log_warning(COMPONENT, "could not defer message %lld (no database); the next start resets it",
                        (long long)dc->id);
    } else if (pgerr_classify(db->conn, res) != PGERR_NONE) {
        log_error(COMPONENT, "defer of message %lld failed: %s sqlstate=%s", (long long)dc->id,
                  pgerr_message(db->conn, res), pgerr_sqlstate(res));
    } else {
        schedule_paused(r, DEFER_74_MS);
    }
    if (res)
        PQclear(res);
    free(dc);
}

/* Status 74: the worker lost its connection; pause the message 30 s
 * without blame (D-100, D-101). The pause is resent after reconnects for
 * about 30 s, then given up: the message stays running, and the next
 * start resets it to pending (D-102; issue 12: it was resent for ever). */
static void defer_lost_connection(struct runner *r, struct stage *s, int64_t id)
{
    char idtext[40], until[40];
    snprintf(idtext, sizeof idtext, "{%lld}", (long long)id);
    snprintf(until, sizeof until, "%d milliseconds", DEFER_74_MS);
    log_warning(COMPONENT, "stage %s lost its database connection on message %lld; deferring it %d s",
                s->name, (long long)id, DEFER_74_MS / 1000);
    char stage[80];
    snprintf(stage, sizeof stage, "{\"%s\"}", s->name);
    const char *params[] = {idtext, stage, until};
    struct defer_ctx *dc = xcalloc(1, sizeof *dc);
    dc->r = r;
    dc->id = id;
    dc->give_up_ms = now_ms() + DEFER_WRITE_MS;
    db_query_until(&r->db,
                   "select pepsi.workqueue_defer($1::bigint[], $2::text[], now() + $3::interval,"
                   " 'worker lost its database connection')",
                   3, params, DB_RESEND, dc->give_up_ms, defer_done, dc);
}

/* Database overload reported by stage s: halve the parallelism of the
 * stage running the most workers for OVERLOAD_WINDOW (D-96..D-98); what
 * is appended to the reporter's name in the log. */
static void halve_busiest(struct runner *r, struct stage *s, const char *what)
{
    struct stage *big = s;
    for (size_t i = 0; i < r->tabs->n_stages; i++)
        if (r->tabs->stages[i].n_workers > big->n_workers)
            big = &r->tabs->stages[i];
    int cap = big->parallelism_cap / 2;
    big->parallelism_cap = cap < 1 ? 1 : cap;
    big->throttle_until_ms = now_ms() + (uint64_t)r->conf->overload_window_ms;
    log_warning(COMPONENT, "database overload reported by stage %s%s; stage %s limited to %d worker(s) "
                "for %lld ms", s->name, what, big->name, big->parallelism_cap,
                (long long)r->conf->overload_window_ms);
}

/* Status 75: database overload. Requeue, and halve the busiest stage
 * (D-95..D-98). */
static void throttle_overload(struct runner *r, struct stage *s, int64_t id)
{
    const char *stages[] = {s->name};
    requeue_ids(r, stages, &id, 1);
    halve_busiest(r, s, "");
}

/* A worker could not connect at start for want of connection slots (exit
 * 75 before ready): the same back-pressure as a status 75 (D-94); its ids
 * were requeued by the pool. */
static void overload_cb(void *arg, struct stage *s)
{
    struct runner *r = arg;
    s->delta.tempfailed++;
    halve_busiest(r, s, " at worker start (no connection slot)");
}

/* ---- answers from workers ---- */

static void account_runs(struct runner *r, struct stage *s, const struct proto_status *st, uint64_t usec)
{
    if (st->report_ok && st->n_report > 0) {
        for (size_t i = 0; i < st->n_report; i++) {
            struct stage *f = stage_by_name(r, st->report[i].stage);
            if (f == NULL) {
                log_debug(s->name, "report names unknown stage \"%s\"", st->report[i].stage);
                continue;
            }
            f->delta.runs++;
            f->delta.run_usec += st->report[i].usec;
        }
        return;
    }
    s->delta.runs++;
    s->delta.run_usec += (int64_t)usec;
}

static void answered_cb(void *arg, struct stage *s, int64_t id, const struct proto_status *st,
                        uint64_t usec)
{
    struct runner *r = arg;
    claimer_answered(r->claimer, s->name, id, st, usec, now_ms());
    s->delta.stages_executed++;
    r->traffic_since_gc = r->traffic_since_flush = true;
    account_runs(r, s, st, usec);
    switch (st->status) {
    case 0:
        s->delta.succeeded++;
        r->answers_since_sweep = true;
        break;
    case EXIT_TEMPFAIL:
        s->delta.tempfailed++;
        throttle_overload(r, s, id);
        break;
    case EXIT_IOERR:
        /* Logged, counted nowhere else (D-101). */
        defer_lost_connection(r, s, id);
        break;
    default:
        /* The worker has already failed the row (D-79). */
        s->delta.failed++;
        log_debug(s->name, "message %lld failed with status %d", (long long)id, st->status);
        break;
    }
}

/* ---- the claim round ---- */

static void claim_requeue_rows(struct runner *r, PGresult *res, int from)
{
    int n = PQntuples(res) - from;
    if (n <= 0)
        return;
    int64_t *ids = xcalloc((size_t)n, sizeof *ids);
    const char **stages = xcalloc((size_t)n, sizeof *stages);
    for (int i = 0; i < n; i++) {
        ids[i] = strtoll(PQgetvalue(res, from + i, 0), NULL, 10);
        stages[i] = PQgetvalue(res, from + i, 1);
    }
    requeue_ids(r, stages, ids, (size_t)n);
    free(ids);
    free(stages);
}

/* Hands the claimed rows to their stages' pools; what no worker can take
 * goes straight back. Rows come grouped by stage (one LATERAL per stage). */
static void claim_assign(struct runner *r, PGresult *res)
{
    int n = PQntuples(res);
    int64_t *ids = xcalloc((size_t)(n ? n : 1), sizeof *ids);
    const char **back_st = xcalloc((size_t)(n ? n : 1), sizeof *back_st);
    int64_t *back = xcalloc((size_t)(n ? n : 1), sizeof *back);
    size_t nback = 0;
    uint64_t now = now_ms();

    for (int i = 0; i < n;) {
        const char *name = PQgetvalue(res, i, 1);
        int j = i;
        size_t k = 0;
        while (j < n && strcmp(PQgetvalue(res, j, 1), name) == 0)
            ids[k++] = strtoll(PQgetvalue(res, j++, 0), NULL, 10);
        struct stage *s = stage_by_name(r, name);
        size_t taken = s ? stage_assign(s, ids, k, now) : 0;
        for (size_t m = taken; m < k; m++) {
            back[nback] = ids[m];
            back_st[nback++] = PQgetvalue(res, i + (int)m, 1);
            claimer_requeued(r->claimer, ids[m], now);
        }
        if (s && taken < k)
            s->delta.requeued += (int64_t)(k - taken);
        i = j;
    }
    if (nback)
        requeue_ids(r, back_st, back, nback);
    free(ids);
    free(back);
    free(back_st);
}

static void claim_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    r->claim_inflight = false;
    if (res == NULL) {
        /* The claim may have committed without our reading it: remember
         * its token, give its rows back after reconnecting. */
        r->lost_claims = xrealloc(r->lost_claims, (r->n_lost_claims + 1) * sizeof *r->lost_claims);
        r->lost_claims[r->n_lost_claims++] = r->claim_inflight_id;
        log_warning(COMPONENT, "the answer to claim %lld was lost with the connection; it goes back after "
                    "reconnecting", (long long)r->claim_inflight_id);
        return;
    }
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "claim failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                  pgerr_sqlstate(res));
        PQclear(res);
        return;
    }
    int n = PQntuples(res);
    r->dstats.claimed += n;
    if (n > 0) {
        r->traffic_since_gc = r->traffic_since_flush = true;
        log_debug(COMPONENT, "claimed %d message(s)", n);
    }
    if (r->shutting_down) {
        claim_requeue_rows(r, res, 0);
    } else {
        claimer_claimed(r->claimer, res, now_ms()); /* D-49: charged at once */
        claim_assign(r, res);
    }
    PQclear(res);
    if (r->claim_wanted)
        wake(r);
    if (r->shutting_down)
        shutdown_progress(r);
}

static void claim_round(struct runner *r)
{
    struct claim_query q;
    uint64_t now = now_ms();

    if (r->claim_inflight || r->shutting_down || !db_connected(&r->db) || r->db.gated)
        return;
    size_t n = r->tabs->n_stages;
    struct stage **stages = xcalloc(n ? n : 1, sizeof *stages);
    int *caps = xcalloc(n ? n : 1, sizeof *caps);
    int included = 0;
    for (size_t i = 0; i < n; i++) {
        stages[i] = &r->tabs->stages[i];
        caps[i] = stage_capacity(stages[i], now);
        included += caps[i] > 0;
    }
    r->claim_wanted = false;
    if (included > 0 || r->heartbeat_due) {
        bool release = r->heartbeat_due;
        r->heartbeat_due = false;
        r->claim_inflight_id = (r->incarnation << 40) | ++r->claims_sent;
        claimer_build(r->claimer, stages, caps, n, r->claim_inflight_id, release, now, &q);
        r->claim_inflight = true;
        r->dstats.claims++;
        db_query(&r->db, q.sql, q.n, (const char *const *)q.params, 0, claim_done, r);
        claim_query_free(&q);
    }
    free(stages);
    free(caps);
}

static void claim_idle_cb(uv_idle_t *h)
{
    (void)h; /* only keeps the poll phase non-blocking until the check runs */
}

static void claim_check_cb(uv_check_t *h)
{
    struct runner *r = h->data;
    uv_idle_stop(&r->claim_idle);
    uv_check_stop(&r->claim_check);
    if (r->claim_wanted && !r->claim_inflight) {
        r->dstats.wakeups++;
        claim_round(r);
    }
}

/* Every wake-up source ends here (D-36): remember, claim after the I/O. */
static void wake(void *arg)
{
    struct runner *r = arg;
    if (r->stopped)
        return;
    r->claim_wanted = true;
    if (r->claim_inflight)
        return; /* claim_done wakes again */
    uv_idle_start(&r->claim_idle, claim_idle_cb);
    uv_check_start(&r->claim_check, claim_check_cb);
}

static void heartbeat_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    r->heartbeat_due = true;
    wake(r);
}

/* ---- paused rows (D-92, D-93) ---- */

static void release_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    if (res == NULL)
        return;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_error(COMPONENT, "paused sweep failed: %s", pgerr_message(db->conn, res));
        PQclear(res);
        return;
    }
    int released = atoi(PQgetvalue(res, 0, 0));
    if (!PQgetisnull(res, 0, 1)) {
        long long ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
        schedule_paused(r, ms < 0 ? 0 : (uint64_t)ms);
    }
    PQclear(res);
    if (released > 0) {
        log_debug(COMPONENT, "released %d paused message(s)", released);
        wake(r);
    }
}

static void release_paused(struct runner *r)
{
    db_query(&r->db,
             "select released, ceil(extract(epoch from next_timeout - clock_timestamp()) * 1000)::bigint"
             " from pepsi.workqueue_release_paused()",
             0, NULL, 0, release_done, r);
}

static void paused_timer_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    r->paused_due_ms = 0;
    if (!r->shutting_down && db_connected(&r->db))
        release_paused(r);
}

/* Makes sure the paused sweep runs no later than delay_ms from now. */
static void schedule_paused(struct runner *r, uint64_t delay_ms)
{
    uint64_t due = now_ms() + delay_ms + 5; /* a little late rather than early */
    if (r->paused_due_ms && r->paused_due_ms <= due)
        return;
    r->paused_due_ms = due;
    uv_timer_start(&r->paused_timer, paused_timer_cb, delay_ms + 5, 0);
}

/* ---- statistics and body GC (D-137..D-144) ---- */

struct flush_ctx {
    struct runner *r;
    struct dispatch_delta dispatch;
    struct named_delta *stages;
    size_t n_stages;
};

static void flush_done(struct db *db, PGresult *res, void *arg)
{
    struct flush_ctx *fc = arg;
    struct runner *r = fc->r;
    r->flush_inflight = false;
    if (res == NULL || pgerr_classify(db->conn, res) != PGERR_NONE) {
        if (res)
            log_warning(COMPONENT, "statistics flush failed: %s", pgerr_message(db->conn, res));
        /* Best effort, but keep the figures for the next flush. */
        dispatch_delta_add(&r->dstats, &fc->dispatch);
        stagetab_return_deltas(r->tabs, fc->stages, fc->n_stages);
    }
    if (res)
        PQclear(res);
    named_deltas_free(fc->stages, fc->n_stages);
    free(fc);
    if (r->shutting_down)
        shutdown_progress(r);
}

/* The deltas as the two JSON arguments of pepsi.stats_flush. */
static int stats_json(const struct dispatch_delta *dd, const struct named_delta *d, size_t n,
                      char **stages_json, char **disp_json)
{
    json_t *arr = json_array();
    json_t *disp = dispatch_delta_to_json(dd);
    int rc = (arr && disp) ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = stage_delta_to_json(d[i].name, &d[i].d, arr);
    *stages_json = rc == 0 ? json_dumps(arr, JSON_COMPACT) : NULL;
    *disp_json = rc == 0 ? json_dumps(disp, JSON_COMPACT) : NULL;
    json_decref(arr);
    json_decref(disp);
    return (*stages_json && *disp_json) ? 0 : -1;
}

/* Writes the deltas in one call; nothing when there are none (D-139). */
static void stats_flush(struct runner *r, bool force)
{
    if (r->flush_inflight || !db_connected(&r->db))
        return;
    struct flush_ctx *fc = xcalloc(1, sizeof *fc);
    fc->r = r;
    fc->n_stages = stagetab_take_deltas(r->tabs, &fc->stages);
    if (fc->n_stages == 0 && !(force ? dispatch_delta_any(&r->dstats) : dispatch_delta_worth_writing(&r->dstats))) {
        /* Nothing but the heartbeat's counts: they wait (D-139). */
        named_deltas_free(fc->stages, fc->n_stages);
        free(fc);
        return;
    }
    fc->dispatch = r->dstats;
    memset(&r->dstats, 0, sizeof r->dstats);
    char *stages_json = NULL, *disp_json = NULL;
    if (stats_json(&fc->dispatch, fc->stages, fc->n_stages, &stages_json, &disp_json) != 0) {
        log_error(COMPONENT, "cannot encode statistics");
        free(stages_json);
        free(disp_json);
        flush_done(&r->db, NULL, fc);
        return;
    }
    char slot[16];
    snprintf(slot, sizeof slot, "%d", r->conf->owner_slot);
    const char *params[] = {slot, stages_json, disp_json};
    r->flush_inflight = true;
    r->last_flush_ms = now_ms();
    r->traffic_since_flush = false;
    db_query(&r->db, "select pepsi.stats_flush($1::int, $2::jsonb, $3::jsonb)", 3, params, 0,
             flush_done, fc);
    free(stages_json);
    free(disp_json);
}

static void gc_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    r->gc_inflight = false;
    if (res == NULL)
        return;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        int n = atoi(PQgetvalue(res, 0, 0));
        r->dstats.bodies_collected += n;
        if (n > 0)
            log_info(COMPONENT, "collected %d orphaned message bodies", n);
    } else {
        log_warning(COMPONENT, "body collection failed: %s", pgerr_message(db->conn, res));
    }
    PQclear(res);
}

static void stats_timer_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    if (r->shutting_down || !db_connected(&r->db))
        return;
    stats_flush(r, false);
    /* An idle queue orphans no bodies: collect only after traffic (D-143). */
    if (r->traffic_since_gc && !r->gc_inflight) {
        r->traffic_since_gc = false;
        r->gc_inflight = true;
        db_query(&r->db, "select pepsi.workqueue_body_gc()", 0, NULL, 0, gc_done, r);
    }
    char status[160];
    snprintf(status, sizeof status, "STATUS=serving %zu stage(s), %d worker(s), %d message(s) in flight",
             r->tabs->n_stages, total_workers(r), total_inflight(r));
    sd_notify(0, status);
}

/* Frees retired stage tables whose workers are all gone. */
static void reap_retired(struct runner *r)
{
    struct stagetab **p = &r->tabs->next;
    while (*p) {
        struct stagetab *t = *p;
        if (!stagetab_quiet(t)) {
            p = &t->next;
            continue;
        }
        /* Statistics of its stages go with the next flush, under their names. */
        struct named_delta *d;
        size_t n = stagetab_take_deltas_one(t, &d);
        stagetab_return_deltas(r->tabs, d, n);
        named_deltas_free(d, n);
        *p = t->next;
        stagetab_free(t);
        log_debug(COMPONENT, "a retired stage table is gone");
    }
}

static void tick_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    uint64_t now = now_ms();
    for (struct stagetab *tab = r->tabs; tab; tab = tab->next)
        for (size_t i = 0; i < tab->n_stages; i++)
            stage_tick(&tab->stages[i], now);
    reap_retired(r);
    db_expire(&r->db, now); /* a 74's pause is given up after DEFER_WRITE_MS, connected or not (D-102) */
    /* A worker may have paused a message (D-92): a sweep learns its
     * timeout, so that the paused timer, not the heartbeat, brings it
     * back (D-93). At most once a tick, and only after answers. */
    if (!r->shutting_down && r->answers_since_sweep && db_connected(&r->db) && !r->db.gated) {
        r->answers_since_sweep = false;
        release_paused(r);
    }
    /* The pipeline went idle: show the burst's figures now (D-138). */
    if (!r->shutting_down && r->traffic_since_flush && total_inflight(r) == 0 &&
        now >= r->last_flush_ms + IDLE_FLUSH_MIN_MS && db_connected(&r->db))
        stats_flush(r, false);
    if (r->shutting_down)
        shutdown_progress(r);
}

/* ---- notifications and reconnects ---- */

/* ---- configuration reload (D-116..D-120) ---- */

static void reload(struct runner *r);

static void reload_timer_cb(uv_timer_t *t)
{
    reload(t->data);
}

/* Swaps in the new table: the old one is retired, its workers finish what
 * they hold, the next message runs with the new values (D-117). */
static void install_stagetab(struct runner *r, struct stagetab *t)
{
    int workers = total_workers(r);
    stagetab_retire(r->tabs);
    t->next = r->tabs;
    r->tabs = t;
    log_notice(COMPONENT, "configuration reloaded: %zu stage(s); retiring %d worker(s)", t->n_stages,
               workers);
    wake(r);
}

static void reload_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    char err[1024];
    r->reload_inflight = false;
    if (r->shutting_down) {
        if (res)
            PQclear(res);
        return;
    }
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        /* Not a new configuration: keep the graph, try again (D-119). */
        log_warning(COMPONENT, "cannot read the configuration overlay (%s); keeping the current "
                    "stage graph and retrying", res ? pgerr_message(db->conn, res) : "no database");
        if (res)
            PQclear(res);
        uv_timer_start(&r->reload_timer, reload_timer_cb, RELOAD_RETRY_MS, 0);
        return;
    }
    struct stagetab *t = stagetab_load(r->config_path, res, &r->env, err, sizeof err);
    PQclear(res);
    if (t == NULL) {
        /* Never route by a graph the workers no longer share (D-118). */
        log_error(COMPONENT, "configuration reload failed: %s; shutting down", err);
        begin_shutdown(r, 78, false);
        return;
    }
    install_stagetab(r, t);
    if (r->reload_again) {
        r->reload_again = false;
        reload(r);
    }
}

static void reload(struct runner *r)
{
    if (r->shutting_down)
        return;
    if (r->reload_inflight) {
        r->reload_again = true;
        return;
    }
    r->reload_inflight = true;
    db_query(&r->db, OVERLAY_SQL, 0, NULL, 0, reload_done, r);
}

/* SHARE_TELEMETRY changed in the file: workers read it once, so retire
 * them all; the stage table stays (D-116). */
static void retire_workers(struct runner *r)
{
    log_notice(COMPONENT, "telemetry setting changed; retiring %d worker(s)", total_workers(r));
    for (size_t i = 0; i < r->tabs->n_stages; i++)
        stage_retire_workers(&r->tabs->stages[i]);
    wake(r);
}

/* A control channel's version moved: the change is the owner's, act on it. */
static void control_act(void *arg, enum control_channel ch)
{
    struct runner *r = arg;
    switch (ch) {
    case CONTROL_CONFIG:
        reload(r);
        break;
    case CONTROL_TELEMETRY:
        retire_workers(r);
        break;
    case CONTROL_RECONCILE:
        break; /* maintenance listens on its own connection */
    default:
        break;
    }
}

static void notify_cb(void *arg, const char *channel)
{
    struct runner *r = arg;
    if (strcmp(channel, "workqueue") == 0) {
        r->dstats.notifications++;
        wake(r);
    } else if (control_channel_of(channel) >= 0) {
        if (!r->shutting_down)
            control_signals_check(&r->ctl, channel);
    } else {
        log_debug(COMPONENT, "ignoring notification on \"%s\"", channel);
    }
}

static void reconnect_cb(uv_timer_t *t);

static void schedule_reconnect(struct runner *r)
{
    if (r->stopped)
        return;
    uv_timer_start(&r->reconnect_timer, reconnect_cb, (uint64_t)r->reconnect_delay_ms, 0);
    r->reconnect_delay_ms *= 2;
    if (r->reconnect_delay_ms > RECONNECT_MAX_MS)
        r->reconnect_delay_ms = RECONNECT_MAX_MS;
}

static void db_lost_cb(void *arg)
{
    struct runner *r = arg;
    r->reconnect_delay_ms = RECONNECT_MIN_MS;
    if (r->shutting_down) {
        log_warning(COMPONENT, "lost the database during shutdown; the next start resets what is left running");
        shutdown_progress(r);
        return;
    }
    schedule_reconnect(r);
}

/* ---- reconnecting without blocking the loop (issue 12) ---- */

struct unclaim_ctx {
    struct runner *r;
    size_t n;                      /* the first n lost claims were sent */
};

static void unclaim_done(struct db *db, PGresult *res, void *arg)
{
    struct unclaim_ctx *uc = arg;
    struct runner *r = uc->r;
    if (res == NULL) {
        free(uc); /* kept in the list: the next reconnect tries again */
        return;
    }
    if (PQresultStatus(res) == PGRES_TUPLES_OK) {
        log_notice(COMPONENT, "gave back %s message(s) of %zu claim(s) whose answer was lost", PQgetvalue(res, 0, 0),
                   uc->n);
        memmove(r->lost_claims, r->lost_claims + uc->n, (r->n_lost_claims - uc->n) * sizeof *r->lost_claims);
        r->n_lost_claims -= uc->n;
    } else {
        log_error(COMPONENT, "cannot give back lost claims: %s", pgerr_message(db->conn, res));
    }
    PQclear(res);
    free(uc);
}

/* Gives back every claim whose answer was lost, in one call, before any
 * new claim (issue 12: any number of them). */
static void unclaim_lost(struct runner *r)
{
    if (r->n_lost_claims == 0)
        return;
    struct unclaim_ctx *uc = xcalloc(1, sizeof *uc);
    uc->r = r;
    uc->n = r->n_lost_claims;
    char *ids = pg_int64_array(r->lost_claims, uc->n);
    const char *params[] = {ids};
    db_query(&r->db, "select pepsi.workqueue_unclaim($1::bigint[])", 1, params, DB_UNGATED, unclaim_done, uc);
    free(ids);
}

/* The set-up failed on the new connection: drop it and try again later. */
static void reconnect_again(struct runner *r)
{
    db_disconnect(&r->db, true);
    schedule_reconnect(r);
}

/* The new connection holds the lock and listens: the lost claims go back
 * first, then everything waiting runs and the loop catches up. */
static void reconnect_finished(struct runner *r)
{
    r->lock_lost_since_ms = 0;
    log_notice(COMPONENT, "reconnected to the database");
    unclaim_lost(r);
    db_open_gate(&r->db);
    release_paused(r);
    control_signals_check(&r->ctl, NULL); /* one may have been missed while disconnected */
    r->heartbeat_due = true;
    wake(r); /* a reconnect is a wake-up (D-36) */
}

static void listen_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    if (res == NULL)
        return; /* lost again: db_lost_cb schedules the next attempt */
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        log_error(COMPONENT, "LISTEN failed on the new connection: %s", pgerr_message(db->conn, res));
    PQclear(res);
    if (ok)
        reconnect_finished(r);
    else
        reconnect_again(r);
}

/* Another session took the slot while we were away (D-15): wait up to
 * LOCK_WAIT for it, then give up. */
static void relock_refused(struct runner *r)
{
    uint64_t now = now_ms();
    if (r->lock_lost_since_ms == 0)
        r->lock_lost_since_ms = now;
    if (now >= r->lock_lost_since_ms + (uint64_t)r->conf->lock_wait_ms) {
        log_error(COMPONENT, "another dispatcher or session took owner slot %d while the connection was down; "
                  "stopping this one", r->conf->owner_slot);
        db_disconnect(&r->db, false);
        begin_shutdown(r, 1, true);
        return;
    }
    reconnect_again(r);
}

static void relock_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    if (res == NULL)
        return;
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    bool got = ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    if (!ok)
        log_error(COMPONENT, "cannot take the dispatcher lock again: %s", pgerr_message(db->conn, res));
    PQclear(res);
    if (got)
        db_query(&r->db, LISTEN_SQL, 0, NULL, DB_UNGATED | DB_MULTI, listen_done, r);
    else if (ok)
        relock_refused(r);
    else
        reconnect_again(r);
}

static void reconnected_cb(PGconn *c, const char *why, bool overload, void *arg)
{
    struct runner *r = arg;
    (void)overload;
    r->connecting = NULL;
    if (c == NULL) {
        log_warning(COMPONENT, "cannot reconnect to the database: %s; trying again in %d ms", why,
                    r->reconnect_delay_ms);
        schedule_reconnect(r);
        return;
    }
    if (db_attach(&r->db, c) != 0) {
        schedule_reconnect(r);
        return;
    }
    /* The lock first: another dispatcher may have taken the slot (D-14). */
    char slot[16];
    snprintf(slot, sizeof slot, "%d", r->conf->owner_slot);
    const char *params[] = {slot};
    db_query(&r->db, "select pg_try_advisory_lock(" DISPATCH_LOCK_CLASS_SQL ", $1::int)", 1, params, DB_UNGATED,
             relock_done, r);
}

static void reconnect_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    if (r->shutting_down || r->connecting || db_connected(&r->db))
        return;
    r->connecting = aconn_start(r->loop, r->conf->conninfo, r->conf->connect_timeout_ms, "pepsi-runner",
                                reconnected_cb, r);
    if (r->connecting == NULL) {
        log_error(COMPONENT, "cannot start a connection attempt; trying again in %d ms", r->reconnect_delay_ms);
        schedule_reconnect(r);
    }
}

/* ---- shutdown (D-08) ---- */

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static bool stages_quiet(const struct runner *r)
{
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        if (!stagetab_quiet(t))
            return false;
    return true;
}

static void stop_all(struct runner *r, bool kill_now)
{
    for (struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            stage_stop(&t->stages[i], kill_now);
}

/* Called as workers exit and queries finish: once every worker is gone
 * and the writes are done, flush statistics and stop the loop. */
static void shutdown_progress(struct runner *r)
{
    if (r->stopped)
        return;
    bool timed_out = now_ms() >= r->shutdown_deadline_ms;
    if (!timed_out && (!stages_quiet(r) || r->claim_inflight))
        return;
    if (!timed_out && db_connected(&r->db)) {
        if (!r->flush_inflight)
            stats_flush(r, true);
        if (!db_idle(&r->db))
            return;
    }
    if (timed_out)
        log_warning(COMPONENT, "shutdown took too long; stopping with %d worker(s) left", total_workers(r));
    r->stopped = true;
    stop_all(r, true);
    db_shutdown(&r->db);
    uv_stop(r->loop);
}

static void begin_shutdown(struct runner *r, int code, bool kill_now)
{
    if (!r->shutting_down) {
        r->shutting_down = true;
        r->env.shutting_down = true;
        r->exit_code = code;
        r->shutdown_deadline_ms = now_ms() + SHUTDOWN_LIMIT_MS;
        sd_notify(0, "STOPPING=1");
        log_info(COMPONENT, "shutting down: %d worker(s), %d message(s) in flight", total_workers(r),
                 total_inflight(r));
        uv_timer_stop(&r->heartbeat);
        uv_timer_stop(&r->paused_timer);
        uv_timer_stop(&r->reconnect_timer);
        aconn_cancel(r->connecting);
        r->connecting = NULL;
        uv_timer_stop(&r->reload_timer);
        maintain_stop(&r->maint);
    }
    stop_all(r, kill_now);
    shutdown_progress(r);
}

static void signal_cb(uv_signal_t *h, int signum)
{
    struct runner *r = h->data;
    r->signals++;
    log_info(COMPONENT, "received %s", strsignal(signum));
    /* A second signal does not wait for workers to finish their message. */
    begin_shutdown(r, r->exit_code, r->signals > 1);
}

/* ---- start-up ---- */

/* The first stage table: the file with the overlay (D-117). A graph that
 * cannot be parsed refuses to start (78). */
static int startup_stages(struct runner *r, PGconn *c, int *code)
{
    char err[1024];
    PGresult *res = PQexec(c, OVERLAY_SQL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot read the configuration overlay: %s", PQerrorMessage(c));
        PQclear(res);
        return -1;
    }
    r->tabs = stagetab_load(r->config_path, res, &r->env, err, sizeof err);
    PQclear(res);
    if (r->tabs == NULL) {
        log_error(COMPONENT, "%s", err);
        *code = 78;
        return -1;
    }
    if (r->tabs->n_stages == 0)
        log_warning(COMPONENT, "no [stage-*] section in %s or the overlay; waiting for config_changed",
                    r->config_path);
    return 0;
}

/* Connect, check the schema (D-12), take the lock (D-14..D-17), and only
 * then reset orphaned running rows (D-18) and LISTEN (D-29). Returns the
 * connection, or NULL with *code set to the exit status. */
static PGconn *startup_connect(struct runner *r, int *code)
{
    PGconn *c = conn_open(r->conf->conninfo, r->conf->connect_timeout_ms, "pepsi-runner", COMPONENT, NULL);
    *code = 1;
    if (c == NULL)
        return NULL;
    enum schema_verdict v = schema_verify(c, COMPONENT);
    if (v != SCHEMA_CURRENT) {
        *code = v == SCHEMA_ERROR ? 1 : 78;
        PQfinish(c);
        return NULL;
    }
    if (conn_wait_dispatch_lock(c, r->conf->owner_slot, r->conf->lock_wait_ms, COMPONENT) != 0) {
        PQfinish(c);
        return NULL;
    }
    PGresult *res = PQexec(c, "select pepsi.claim_incarnation()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_error(COMPONENT, "cannot number this dispatcher's claims: %s", PQerrorMessage(c));
        PQclear(res);
        PQfinish(c);
        return NULL;
    }
    r->incarnation = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    res = PQexec(c, "select pepsi.workqueue_reset_running()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot reset running messages: %s", PQerrorMessage(c));
        PQclear(res);
        PQfinish(c);
        return NULL;
    }
    int reset = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (reset > 0)
        log_notice(COMPONENT, "reset %d message(s) left running by an earlier dispatcher", reset);
    /* LISTEN, then the versions, then the table: a change made in between
     * comes with a notification and a version not yet seen. */
    if (conn_exec(c, LISTEN_SQL, COMPONENT) != 0 || control_signals_read_now(&r->ctl, c, COMPONENT) != 0) {
        PQfinish(c);
        return NULL;
    }
    if (startup_stages(r, c, code) != 0) {
        PQfinish(c);
        return NULL;
    }
    *code = 0;
    return c;
}

static void init_handles(struct runner *r)
{
    uv_idle_init(r->loop, &r->claim_idle);
    uv_check_init(r->loop, &r->claim_check);
    uv_timer_init(r->loop, &r->heartbeat);
    uv_timer_init(r->loop, &r->stats_timer);
    uv_timer_init(r->loop, &r->tick);
    uv_timer_init(r->loop, &r->paused_timer);
    uv_timer_init(r->loop, &r->reconnect_timer);
    uv_timer_init(r->loop, &r->reload_timer);
    uv_signal_init(r->loop, &r->sigint);
    uv_signal_init(r->loop, &r->sigterm);
    r->claim_idle.data = r->claim_check.data = r->heartbeat.data = r->stats_timer.data = r;
    r->tick.data = r->paused_timer.data = r->reconnect_timer.data = r->reload_timer.data = r;
    r->sigint.data = r->sigterm.data = r;
}

/* The stage limits of the current table, for reconciliation passes. */
static char *stage_limits(void *arg)
{
    struct runner *r = arg;
    return reconcile_limits_json(r->tabs ? &r->tabs->conf : NULL);
}

static int start_handles(struct runner *r)
{
    uint64_t poll = (uint64_t)r->conf->poll_interval_ms, stats = (uint64_t)r->conf->stats_interval_ms;
    int rc = uv_timer_start(&r->heartbeat, heartbeat_cb, poll, poll);
    rc = rc ? rc : uv_timer_start(&r->stats_timer, stats_timer_cb, stats, stats);
    rc = rc ? rc : uv_timer_start(&r->tick, tick_cb, TICK_MS, TICK_MS);
    rc = rc ? rc : uv_signal_start(&r->sigint, signal_cb, SIGINT);
    rc = rc ? rc : uv_signal_start(&r->sigterm, signal_cb, SIGTERM);
    if (rc == 0 && r->conf->maintenance)
        rc = maintain_start(&r->maint, r->loop, r->conf, r->config_path, stage_limits, r);
    if (rc != 0)
        log_error(COMPONENT, "cannot start the event loop's timers: %s", uv_strerror(rc));
    return rc;
}

static void runner_init(struct runner *r, struct conf *conf, uv_loop_t *loop, const char *config_path,
                        const char *self_dir, const struct worker_auth *auth)
{
    memset(r, 0, sizeof *r);
    r->loop = loop;
    r->conf = conf;
    r->config_path = config_path;
    r->env.loop = loop;
    r->env.config_file = conf->config_file;
    r->env.config_path = config_path;
    r->env.conninfo = auth->conninfo;
    r->env.passfile = auth->passfile;
    r->env.self_dir = self_dir;
    r->env.cooldown_ms = conf->cooldown_ms;
    r->env.dstats = &r->dstats;
    r->env.ev = (struct pool_events){answered_cb, requeue_cb, strike_cb, overload_cb, wake, r};
    r->claimer = claimer_new(conf);
    db_init(&r->db, loop, (struct db_hooks){notify_cb, db_lost_cb, r});
    control_signals_init(&r->ctl, &r->db, COMPONENT, control_act, r);
    init_handles(r);
}

static void runner_teardown(struct runner *r)
{
    uv_walk(r->loop, close_walk_cb, NULL);
    while (uv_run(r->loop, UV_RUN_DEFAULT) != 0)
        ;
    while (r->tabs) {
        struct stagetab *t = r->tabs;
        r->tabs = t->next;
        stagetab_free(t);
    }
    claimer_free(r->claimer);
    free(r->lost_claims);
}

int dispatch_serve(struct conf *conf, const char *config_path, const char *self_dir,
                   const struct worker_auth *auth)
{
    uv_loop_t loop;
    struct runner r;
    int code;

    if (uv_loop_init(&loop) != 0) {
        log_error(COMPONENT, "cannot create the event loop");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN); /* a dead worker's stdin must not kill the runner */
    runner_init(&r, conf, &loop, config_path, self_dir, auth);
    PGconn *c = startup_connect(&r, &code);
    if (c == NULL || db_attach(&r.db, c) != 0 || start_handles(&r) != 0) {
        runner_teardown(&r);
        uv_loop_close(&loop);
        return c ? 1 : code;
    }
    db_open_gate(&r.db);
    release_paused(&r);
    r.heartbeat_due = true;
    wake(&r); /* claim once at start-up */
    log_info(COMPONENT, "serving %zu stage(s) as owner slot %d", r.tabs->n_stages, conf->owner_slot);
    sd_notifyf(0, "READY=1\nSTATUS=serving %zu stage(s)\nMAINPID=%lu", r.tabs->n_stages,
               (unsigned long)getpid());

    uv_run(&loop, UV_RUN_DEFAULT);
    code = r.exit_code;
    runner_teardown(&r);
    if (uv_loop_close(&loop) != 0)
        log_warning(COMPONENT, "event loop closed with handles still open");
    log_info(COMPONENT, "stopped");
    return code;
}
