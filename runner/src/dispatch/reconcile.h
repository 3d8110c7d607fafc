/* dispatch/reconcile.h — the two schedules of self-checks that maintenance
 * (maintain.h) runs on its own database connection, never the claim's:
 *   - a reconciliation pass, pepsi.reconcile(), every RECONCILE_INTERVAL
 *     (W-23) and at once on NOTIFY reconcile (W-24), which anomaly checks
 *     send when they start firing (W-41) and operators may send by hand;
 *   - the anomaly checks, pepsi.anomaly_run(), every ANOMALY_INTERVAL.
 * The two triggers of a pass are independent (W-25): a pass that fails is
 * logged and the timer keeps running; a notification runs a pass whatever
 * the schedule is doing. Passes on this connection run one after another
 * (a trigger during a pass queues one more); between runners and
 * sessions, the pass's advisory try-lock keeps one at a time (W-26, W-27).
 * Owns: the two schedules (timers) and their pending runs. Uses: lib/ (conf,
 * db, pgerr, log), libuv, jansson. */
#ifndef PEPSI_DISPATCH_RECONCILE_H
#define PEPSI_DISPATCH_RECONCILE_H

#include "lib/conf.h"
#include "lib/db.h"

#include <stdbool.h>
#include <uv.h>

/* The per-stage limits a pass judges stuck messages by, as JSON (see
 * reconcile_limits_json); malloc'd, NULL on failure. */
typedef char *(*reconcile_limits_fn)(void *arg);

struct reconcile {
    struct db *db;                   /* maintenance's own connection */
    reconcile_limits_fn limits;
    void *limits_arg;
    int64_t pass_ms;                 /* RECONCILE_INTERVAL */
    int64_t anomaly_ms;              /* ANOMALY_INTERVAL */
    uv_timer_t pass_timer;
    uv_timer_t anomaly_timer;
    bool pass_inflight;
    const char *pass_again;          /* trigger of a pass asked for during one, or NULL */
    bool anomaly_inflight;
    size_t anomaly_step;             /* views refreshed so far in the run under way */
    bool refresh_failed;             /* a view of this run was not refreshed */
    long long stamp_pending;         /* pepsi.reconcile_stamp() at the start of this run, -1 unknown */
    long long stamp_refreshed;       /* the stamp the views were last all refreshed at */
    bool stamp_known;
    bool stopped;
};

/* Starts both timers on loop; limits(arg) is asked at each pass.
 * Returns 0, or a negative libuv error (logged). The timers are closed
 * with the loop's other handles. */
int reconcile_start(struct reconcile *rc, uv_loop_t *loop, struct db *db, const struct conf *conf,
                    reconcile_limits_fn limits, void *arg);

/* NOTIFY reconcile arrived: a pass now (W-24). */
void reconcile_notify(struct reconcile *rc);

/* Stops the timers and starts nothing more (shutdown). */
void reconcile_stop(struct reconcile *rc);

/* The per-stage limits pepsi.reconcile() judges stuck messages by, as JSON:
 * {"<stage>": {"max_runtime_ms": N, "queue_limit": N}, ...} for the stages
 * of c (an empty object when c is NULL). malloc'd; NULL on failure. */
char *reconcile_limits_json(const struct conf *c);

#endif
