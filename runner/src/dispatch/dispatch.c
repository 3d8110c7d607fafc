/* dispatch/dispatch.c — see dispatch.h: `serve` wired together. The
 * runner's state (struct runner, dispatch/runner.h), what a worker's answer
 * means (statistics, 74/75, strikes), and the loop from start to stop. The
 * other duties have a file each (issue 13): the claim round and paused
 * rows (round.c), the queue writes other than the claim (writes.c),
 * statistics and body GC (flush.c), notifications and reloads (reload.c),
 * start-up, reconnects and shutdown (lifecycle.c).
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
#include "dispatch/runner.h"

#include "lib/log.h"
#include "lib/util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

/* ---- helpers ---- */

/* The stage called name in the current table. */
struct stage *stage_by_name(struct runner *r, const char *name)
{
    return stagetab_find(r->tabs, name);
}

int total_inflight(const struct runner *r)
{
    int n = 0;
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            n += t->stages[i].inflight;
    return n;
}

int total_workers(const struct runner *r)
{
    int n = 0;
    for (const struct stagetab *t = r->tabs; t; t = t->next)
        for (size_t i = 0; i < t->n_stages; i++)
            n += t->stages[i].n_workers;
    return n;
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

/* ---- start-up ---- */

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
    uv_signal_init(r->loop, &r->sighup);
    uv_signal_init(r->loop, &r->sigusr1);
    uv_signal_init(r->loop, &r->sigusr2);
    r->claim_idle.data = r->claim_check.data = r->heartbeat.data = r->stats_timer.data = r;
    r->tick.data = r->paused_timer.data = r->reconnect_timer.data = r->reload_timer.data = r;
    r->sigint.data = r->sigterm.data = r->sighup.data = r->sigusr1.data = r->sigusr2.data = r;
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
    rc = rc ? rc : uv_signal_start(&r->sighup, hup_cb, SIGHUP);
    rc = rc ? rc : uv_signal_start(&r->sigusr1, usr_cb, SIGUSR1);
    rc = rc ? rc : uv_signal_start(&r->sigusr2, usr_cb, SIGUSR2);
    if (rc == 0 && r->conf->maintenance)
        rc = maintain_start(&r->maint, r->loop, r->conf, r->config_path, stage_limits, r);
    rc = rc ? rc : vacuum_start(&r->vacuum, r->loop, r->conf);
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
    r->env.max_hops = conf->max_hops;
    r->env.worker_synchronous_commit = conf->worker_synchronous_commit;
    r->env.dstats = &r->dstats;
    r->env.ev = (struct pool_events){answered_cb, requeue_cb, strike_cb, overload_cb, wake, r};
    snprintf(r->owner_slot, sizeof r->owner_slot, "%d", conf->owner_slot);
    r->claimer = claimer_new(conf);
    db_init(&r->db, loop, (struct db_hooks){notify_cb, db_lost_cb, r, NULL});
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
    service_started();
    if (service_watchdog_start(&r.watchdog, &loop, COMPONENT) != 0)
        begin_shutdown(&r, 1, false);

    uv_run(&loop, UV_RUN_DEFAULT);
    code = r.exit_code;
    runner_teardown(&r);
    if (uv_loop_close(&loop) != 0)
        log_warning(COMPONENT, "event loop closed with handles still open");
    log_info(COMPONENT, "stopped");
    return code;
}
