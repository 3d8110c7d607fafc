/* dispatch/runner.h — what the dispatcher's files share, not for use
 * outside dispatch/: struct runner, the state of `serve` (one per
 * process), its timing constants, and the functions one of its files
 * calls in another (issue 13 split dispatch.c by duty).
 * Owns: struct runner. Uses: dispatch/ (claim, maintain, vacuum, pool, signals,
 * stagetab, stats), lib/ (aconn, conf, db), libuv. */
#ifndef PEPSI_DISPATCH_RUNNER_H
#define PEPSI_DISPATCH_RUNNER_H

#include "dispatch/claim.h"
#include "dispatch/maintain.h"
#include "dispatch/vacuum.h"
#include "dispatch/pool.h"
#include "dispatch/signals.h"
#include "dispatch/stagetab.h"
#include "dispatch/stats.h"
#include "lib/aconn.h"
#include "lib/conf.h"
#include "lib/db.h"
#include "lib/service.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define COMPONENT "dispatch"
#define TICK_MS 1000
#define IDLE_FLUSH_MIN_MS 1000     /* idle flushes at most once a second (D-138) */
#define DEFER_74_MS 30000          /* status 74: pause for 30 s (D-100) */
#define DEFER_WRITE_MS 30000       /* how long the pause of a 74 may wait to be written (D-102) */
#define RECONNECT_MIN_MS 500
#define RECONNECT_MAX_MS 30000
#define SHUTDOWN_LIMIT_MS 30000    /* beyond the longest MAX_RUNTIME: give up waiting for workers and the
                                    * database (the units' TimeoutStopSec is longer still) */
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
    char owner_slot[16];           /* OWNER_SLOT as text: every claim and running-row operation's $n::int (issue 14) */

    uv_idle_t claim_idle;          /* keeps the poll phase from blocking while a claim is wanted */
    uv_check_t claim_check;        /* runs the claim round after the poll phase (D-37) */
    uv_timer_t heartbeat;          /* POLL_INTERVAL (D-29) */
    uv_timer_t stats_timer;        /* STATS_INTERVAL (D-138) */
    uv_timer_t tick;               /* pools' housekeeping, idle flush, shutdown progress */
    uv_timer_t paused_timer;       /* the earliest paused timeout (D-93) */
    uv_timer_t reconnect_timer;
    uv_timer_t reload_timer;       /* retries a reload whose overlay could not be read */
    uv_signal_t sigint, sigterm;
    uv_signal_t sighup;            /* re-reads the stage graph as config_changed does (issue 15) */
    uv_signal_t sigusr1, sigusr2;  /* logged with the runner's state, otherwise ignored */
    struct service_watchdog watchdog; /* WATCHDOG=1 from the loop when systemd asks */
    struct maintain maint;         /* reconciliation and anomaly runs, on their own connection (issue 12) */
    struct vacuum vacuum;          /* VACUUM of pepsi.workqueue past VACUUM_DEAD_TUPLES, own connection (issue 19) */
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
    bool answers_since_sweep;      /* a worker may have paused a message since, or an inject delayed one */

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

/* ---- dispatch.c ---- */

/* The stage called name in the current table, or NULL. */
struct stage *stage_by_name(struct runner *r, const char *name);

/* Messages in flight, over every stage table. */
int total_inflight(const struct runner *r);

/* Worker processes, over every stage table. */
int total_workers(const struct runner *r);

/* ---- writes.c ---- */

/* Status 74: the message is paused DEFER_74_MS (D-100..D-102). */
void defer_lost_connection(struct runner *r, struct stage *s, int64_t id);

/* struct pool_events: a worker could not connect for want of slots (75). */
void overload_cb(void *arg, struct stage *s);

/* struct pool_events: ids given back to the queue. */
void requeue_cb(void *arg, struct stage *s, const int64_t *ids, size_t n);

/* Gives ids (each of stages[i]) back to the queue in one call. */
void requeue_ids(struct runner *r, const char *const *stages, const int64_t *ids, size_t n);

/* struct pool_events: a worker died or hung (kind) holding message id: a strike. */
void strike_cb(void *arg, struct stage *s, int64_t id, const char *kind, const char *reason);

/* Status 75: requeued, and the busiest stage halved (D-95..D-98). */
void throttle_overload(struct runner *r, struct stage *s, int64_t id);

/* ---- round.c ---- */

/* POLL_INTERVAL: a claim round that also releases due paused rows (D-29). */
void heartbeat_cb(uv_timer_t *t);

/* Releases due paused rows and learns the next timeout (D-92, D-93). */
void release_paused(struct runner *r);

/* Makes sure the paused sweep runs no later than delay_ms from now. */
void schedule_paused(struct runner *r, uint64_t delay_ms);

/* Asks for a claim round once the loop has drained its I/O (D-31, D-37). */
void wake(void *arg);

/* ---- flush.c ---- */

/* Flushes the statistics deltas in one call (D-137..D-142). */
void stats_flush(struct runner *r, bool force);

/* STATS_INTERVAL: flush, body GC after traffic, systemd status. */
void stats_timer_cb(uv_timer_t *t);

/* Once a second: pools' housekeeping, retired tables, sweep, idle flush. */
void tick_cb(uv_timer_t *t);

/* ---- reload.c ---- */

/* A control channel's version moved: reload or retire workers. */
void control_act(void *arg, enum control_channel ch);

/* Re-reads the stage graph (file and overlay) as config_changed does. */
void reload_request(struct runner *r);

/* struct db_hooks: a notification on the coordinator's connection. */
void notify_cb(void *arg, const char *channel);

/* ---- lifecycle.c ---- */

/* Starts stopping with exit code code; kill_now: do not wait for workers. */
void begin_shutdown(struct runner *r, int code, bool kill_now);

/* uv_walk: closes every handle still open at teardown. */
void close_walk_cb(uv_handle_t *h, void *arg);

/* struct db_hooks: the coordinator's connection is lost: reconnect. */
void db_lost_cb(void *arg);

/* Stops the loop once workers and writes are done or the limit passed. */
void shutdown_progress(struct runner *r);

/* SIGINT/SIGTERM: the first stops gracefully, the second at once. */
void signal_cb(uv_signal_t *h, int signum);

/* SIGHUP: a reload, as config_changed (issue 15). */
void hup_cb(uv_signal_t *h, int signum);

/* SIGUSR1/SIGUSR2: one log line with the runner's state, nothing else. */
void usr_cb(uv_signal_t *h, int signum);

/* Start-up: connect, schema, lock, orphans, LISTEN, first table (D-12..D-18). */
PGconn *startup_connect(struct runner *r, int *code);

#endif
