/* dispatch/lifecycle.c — the dispatcher's connection over its life:
 * start-up (schema check, lock, orphans reset, LISTEN, first stage table),
 * reconnecting without blocking the loop (issue 12), and shutdown (D-08). */
#include "dispatch/runner.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/rights.h"
#include "lib/schema.h"
#include "lib/topology.h"
#include "lib/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

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

void db_lost_cb(void *arg)
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
    char *ids = pgarray_of_int64(r->lost_claims, uc->n);
    const char *params[] = {ids, r->owner_slot};
    db_query(&r->db, "select pepsi.workqueue_unclaim($1::bigint[], $2::int)", 2, params, DB_UNGATED, unclaim_done,
             uc);
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

/* The map may have changed while the slot was free (an operator's
 * partition_map_set needs exactly that): confirm it again (T-08). */
static void retopology_done(struct db *db, PGresult *res, void *arg)
{
    struct runner *r = arg;
    if (res == NULL)
        return;
    int code = topology_judge(db->conn, res, r->conf, COMPONENT);
    PQclear(res);
    if (code == 0) {
        db_query(&r->db, LISTEN_SQL, 0, NULL, DB_UNGATED | DB_MULTI, listen_done, r);
    } else if (code == EXIT_CONFIG) {
        /* As relock_refused: off the database first (the connection is
         * not yet open to the gated writes a shutdown would queue), then
         * let the workers finish the messages in hand. */
        log_error(COMPONENT, "the topology changed while the connection was down; stopping");
        db_disconnect(&r->db, false);
        begin_shutdown(r, EXIT_CONFIG, false);
    } else {
        reconnect_again(r);
    }
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
    char slot[16];
    snprintf(slot, sizeof slot, "%d", r->conf->owner_slot);
    const char *params[] = {slot};
    if (got)
        db_query(&r->db, TOPOLOGY_CHECK_SQL, 1, params, DB_UNGATED, retopology_done, r);
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
        log_warning(COMPONENT, "cannot reconnect to the database: %s; trying again in %s", why,
                    LOG_DURATION(r->reconnect_delay_ms));
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
    db_query(&r->db, DISPATCH_LOCK_TRY_SQL, 1, params, DB_UNGATED,
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
        log_error(COMPONENT, "cannot start a connection attempt; trying again in %s", LOG_DURATION(r->reconnect_delay_ms));
        schedule_reconnect(r);
    }
}

/* ---- shutdown (D-08) ---- */

void close_walk_cb(uv_handle_t *h, void *arg)
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
void shutdown_progress(struct runner *r)
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

/* A worker asked to stop finishes what it holds under its stage's
 * MAX_RUNTIME: the whole stop waits for the longest of them. */
static int64_t longest_max_runtime(const struct runner *r)
{
    int64_t longest = 0;
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            if (t->stages[i].conf->max_runtime_ms > longest)
                longest = t->stages[i].conf->max_runtime_ms;
    return longest;
}

void begin_shutdown(struct runner *r, int code, bool kill_now)
{
    if (!r->shutting_down) {
        r->shutting_down = true;
        r->env.shutting_down = true;
        r->exit_code = code;
        r->shutdown_deadline_ms = now_ms() + (uint64_t)longest_max_runtime(r) + SHUTDOWN_LIMIT_MS;
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
        vacuum_stop(&r->vacuum);
    }
    stop_all(r, kill_now);
    shutdown_progress(r);
}

void signal_cb(uv_signal_t *h, int signum)
{
    struct runner *r = h->data;
    r->signals++;
    log_info(COMPONENT, "received %s", strsignal(signum));
    /* A second signal does not wait for workers to finish their message. */
    begin_shutdown(r, r->exit_code, r->signals > 1);
}

/* A reload on the operator's word rather than the database's: the same
 * path as a config_changed whose version moved (D-116..D-120). */
void hup_cb(uv_signal_t *h, int signum)
{
    struct runner *r = h->data;
    (void)signum;
    if (r->shutting_down) {
        log_notice(COMPONENT, "received SIGHUP while shutting down; nothing to reload");
        return;
    }
    log_notice(COMPONENT, "received SIGHUP; re-reading the stage graph (%s and the overlay) as config_changed does",
               r->config_path);
    reload_request(r);
}

/* The default action of SIGUSR1/2 would kill the runner without a word. */
void usr_cb(uv_signal_t *h, int signum)
{
    struct runner *r = h->data;
    log_notice(COMPONENT, "received %s; ignored (%d worker(s), %d message(s) in flight%s)",
               signum == SIGUSR1 ? "SIGUSR1" : "SIGUSR2", total_workers(r), total_inflight(r),
               r->shutting_down ? ", shutting down" : "");
}

/* ---- start-up ---- */

/* Publishes the first table's graph (issue 15): best effort, as a
 * dispatcher that cannot say what it serves still serves it. */
static void publish_stages_sync(struct runner *r, PGconn *c)
{
    char *json = stagetab_publish_json(r->tabs, r->config_path);
    char slot[16];
    snprintf(slot, sizeof slot, "%d", r->conf->owner_slot);
    const char *params[] = {slot, json};
    PGresult *res = json ? PQexecParams(c, STAGETAB_PUBLISH_SQL, 2, NULL, params, NULL, NULL, 0) : NULL;
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK)
        log_warning(COMPONENT, "cannot publish the stage graph to pepsi.stage_served: %s",
                    json ? pgerr_conn_message(c) : "out of memory");
    PQclear(res);
    free(json);
}

/* The first stage table: the file with the overlay (D-117). A graph that
 * cannot be parsed refuses to start (78). */
static int startup_stages(struct runner *r, PGconn *c, int *code)
{
    char err[1024];
    PGresult *res = PQexec(c, OVERLAY_SQL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot read the configuration overlay: %s", pgerr_conn_message(c));
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
    publish_stages_sync(r, c);
    return 0;
}

/* Connect, check the schema (D-12), take the lock (D-14..D-17), and only
 * then reset orphaned running rows (D-18) and LISTEN (D-29). Returns the
 * connection, or NULL with *code set to the exit status. */
PGconn *startup_connect(struct runner *r, int *code)
{
    PGconn *c = conn_open(r->conf->conninfo, r->conf->connect_timeout_ms, "pepsi-runner", COMPONENT, NULL);
    *code = 1;
    if (c == NULL)
        return NULL;
    /* A login without pepsi_runner's rights refuses at once (issue 15). */
    int rights = rights_check(c, &rights_runner, COMPONENT);
    if (rights != 0) {
        *code = rights;
        PQfinish(c);
        return NULL;
    }
    enum schema_verdict v = schema_verify(c, COMPONENT);
    if (v != SCHEMA_OK) {
        *code = v == SCHEMA_ERROR ? 1 : 78;
        PQfinish(c);
        return NULL;
    }
    /* One runner per owner slot (D-14, issue 14): a slot another runner
     * still holds after LOCK_WAIT is a configuration error (78). */
    int locked = conn_wait_dispatch_lock(c, r->conf->owner_slot, r->conf->lock_wait_ms, COMPONENT);
    if (locked != 0) {
        *code = locked == 1 ? EXIT_CONFIG : 1;
        PQfinish(c);
        return NULL;
    }
    /* The topology before anything is touched (T-08, T-41): 78 on a
     * mismatch, the running rows of the slot left as they are. */
    int topo = topology_confirm(c, r->conf, COMPONENT);
    if (topo != 0) {
        *code = topo;
        PQfinish(c);
        return NULL;
    }
    PGresult *res = PQexec(c, "select pepsi.claim_incarnation()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_error(COMPONENT, "cannot number this dispatcher's claims: %s", pgerr_conn_message(c));
        PQclear(res);
        PQfinish(c);
        return NULL;
    }
    r->incarnation = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    /* Only this slot's running rows: the other slots' are their runners'
     * (issue 14). */
    const char *slot[] = {r->owner_slot};
    res = PQexecParams(c, "select pepsi.workqueue_reset_running($1::int)", 1, NULL, slot, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot reset running messages: %s", pgerr_conn_message(c));
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
