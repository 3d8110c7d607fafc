/* dispatch/maintain.h — the runner's maintenance: reconciliation passes and
 * anomaly runs (W-20..W-45) on a connection of their own, never the
 * claiming one, so that their full scans and refreshes cost the claim
 * nothing (issue 12). `pepsi-runner serve` runs it beside the dispatcher
 * unless [pepsi-dispatch] MAINTENANCE = no; `pepsi-runner maintain` runs
 * it alone (W-25: passes happen whether or not serve runs, e.g. for
 * pull-only deployments). Every pass and run takes its own advisory
 * try-lock in SQL, so any number of hosts may schedule them.
 * The anomaly run is split into short transactions: each materialized
 * view is refreshed by a statement of its own, then the checks are
 * evaluated, so that no transaction holds the xmin horizon of
 * pepsi.workqueue for the whole suite.
 * Owns: its connection (reconnected without blocking), the schedules.
 * Uses: db, aconn, reconcile, signals, conf, log. */
#ifndef PEPSI_DISPATCH_MAINTAIN_H
#define PEPSI_DISPATCH_MAINTAIN_H

#include "lib/aconn.h"
#include "lib/conf.h"
#include "lib/db.h"
#include "dispatch/reconcile.h"
#include "dispatch/signals.h"

#include <stdbool.h>
#include <uv.h>

struct maintain {
    uv_loop_t *loop;
    const struct conf *conf;         /* [pepsi-postgres] and the intervals */
    const char *config_path;         /* standalone: file re-read with the overlay on config_changed */
    struct conf *own_conf;           /* standalone: the stage limits, file and overlay; NULL under serve */
    struct db db;
    struct aconn *connecting;
    uv_timer_t retry;
    int delay_ms;
    struct reconcile recon;
    struct control_signals ctl;
    bool stopped;
};

/* Starts maintenance on loop with its own connection. limits/arg give the
 * per-stage limits a pass judges stuck messages by (see reconcile.h);
 * NULL: read from config_path and the overlay (standalone). Returns 0, or
 * a negative libuv error (logged). */
int maintain_start(struct maintain *m, uv_loop_t *loop, const struct conf *conf, const char *config_path,
                   reconcile_limits_fn limits, void *arg);

/* Stops the schedules and drops the connection; the handles are closed
 * with the loop's. */
void maintain_stop(struct maintain *m);

/* `pepsi-runner maintain`: runs maintenance alone until SIGINT or SIGTERM.
 * Returns the exit status. */
int maintain_command(struct conf *conf, const char *config_path);

#endif
