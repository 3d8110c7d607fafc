/* reconcile.h — the dispatcher's two schedules of self-checks, run on its
 * own database connection, never in the claim:
 *   - a reconciliation pass, pepsi.reconcile(), every RECONCILE_INTERVAL
 *     (W-23) and at once on NOTIFY reconcile (W-24), which anomaly checks
 *     send when they start firing (W-41) and operators may send by hand;
 *   - the anomaly checks, pepsi.anomaly_run(), every ANOMALY_INTERVAL.
 * The two triggers of a pass are independent (W-25): a pass that fails is
 * logged and the timer keeps running; a notification runs a pass whatever
 * the schedule is doing. Passes on this connection run one after another
 * (a trigger during a pass queues one more); between runners and
 * sessions, the pass's advisory try-lock keeps one at a time (W-26, W-27). */
#ifndef PEPSI_RECONCILE_H
#define PEPSI_RECONCILE_H

#include "conf.h"
#include "db.h"
#include "stagetab.h"

#include <stdbool.h>
#include <uv.h>

struct reconcile {
    struct db *db;                   /* the coordinator's connection */
    struct stagetab *const *tabs;    /* the dispatcher's current stage table (limits) */
    int64_t pass_ms;                 /* RECONCILE_INTERVAL */
    int64_t anomaly_ms;              /* ANOMALY_INTERVAL */
    uv_timer_t pass_timer;
    uv_timer_t anomaly_timer;
    bool pass_inflight;
    const char *pass_again;          /* trigger of a pass asked for during one, or NULL */
    bool anomaly_inflight;
    bool stopped;
};

/* Starts both timers on loop; tabs points at the dispatcher's current
 * table, read at each pass. Returns 0, or a negative libuv error (logged).
 * The timers are closed with the loop's other handles. */
int reconcile_start(struct reconcile *rc, uv_loop_t *loop, struct db *db, const struct conf *conf,
                    struct stagetab *const *tabs);

/* NOTIFY reconcile arrived: a pass now (W-24). */
void reconcile_notify(struct reconcile *rc);

/* Stops the timers and starts nothing more (shutdown). */
void reconcile_stop(struct reconcile *rc);

/* The per-stage limits pepsi.reconcile() judges stuck messages by, as JSON:
 * {"<stage>": {"max_runtime_ms": N, "queue_limit": N}, ...} for the stages
 * of t (an empty object when t is NULL). malloc'd; NULL on failure. */
char *reconcile_limits_json(const struct stagetab *t);

#endif
