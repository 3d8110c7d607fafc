/* dispatch/flush.c — statistics flushed in one call of
 * pepsi.stats_flush() and the body GC after traffic (D-137..D-144); the
 * one-second tick: pools' housekeeping, retired stage tables freed, the
 * sweep after answers, the idle flush, shutdown progress. */
#include "dispatch/runner.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

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
void stats_flush(struct runner *r, bool force)
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

void stats_timer_cb(uv_timer_t *t)
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

void tick_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    uint64_t now = now_ms();
    for (struct stagetab *tab = r->tabs; tab; tab = tab->next)
        for (size_t i = 0; i < tab->n_stages; i++)
            stage_tick(&tab->stages[i], now);
    reap_retired(r);
    db_expire(&r->db, now); /* a 74's pause is given up after DEFER_WRITE_MS, connected or not (D-102) */
    /* A worker may have paused a message (D-92), or an inject delayed
     * one (NOTIFY workqueue, issue 16): a sweep learns its timeout, so
     * that the paused timer, not the heartbeat, brings it back (D-93).
     * At most once a tick, and only after answers or notifications. */
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
