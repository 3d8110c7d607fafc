/* dispatch/reload.c — notifications on the coordinator's connection: a
 * workqueue NOTIFY wakes the claim round; a control channel whose version
 * moved (issue 11) reloads the configuration (D-116..D-120) or retires the
 * workers for a telemetry change. */
#include "dispatch/runner.h"

#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- notifications and reconnects ---- */

/* ---- configuration reload (D-116..D-120) ---- */

static void reload(struct runner *r);

static void reload_timer_cb(uv_timer_t *t)
{
    reload(t->data);
}

/* Tells SQL the graph now served (issue 15); best effort: a failure is
 * logged by db_query and the next reload publishes again. */
static void publish_stages(struct runner *r)
{
    char *json = stagetab_publish_json(r->tabs, r->config_path);
    if (json == NULL) {
        log_warning(COMPONENT, "cannot encode the stage graph for pepsi.stage_served");
        return;
    }
    char slot[16];
    snprintf(slot, sizeof slot, "%d", r->conf->owner_slot);
    const char *params[] = {slot, json};
    db_query(&r->db, STAGETAB_PUBLISH_SQL, 2, params, 0, NULL, NULL);
    free(json);
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
    publish_stages(r);
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

void reload_request(struct runner *r)
{
    reload(r);
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
void control_act(void *arg, enum control_channel ch)
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

void notify_cb(void *arg, const char *channel)
{
    struct runner *r = arg;
    if (strcmp(channel, "workqueue") == 0) {
        r->dstats.notifications++;
        /* An inject may have queued a delayed message (p_run_at, issue
         * 16): it waits paused, and the next tick's sweep learns its time
         * so that the paused timer claims it when due, not the
         * POLL_INTERVAL heartbeat. At most one sweep a tick. */
        r->answers_since_sweep = true;
        wake(r);
    } else if (control_channel_of(channel) >= 0) {
        if (!r->shutting_down)
            control_signals_check(&r->ctl, channel);
    } else {
        log_debug(COMPONENT, "ignoring notification on \"%s\"", channel);
    }
}
