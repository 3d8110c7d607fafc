/* dispatch/round.c — the claim round (D-31..D-41): wake-ups set a flag,
 * the round runs once the loop has drained its I/O, one claim statement
 * for every stage with free capacity, its rows handed to the pools; and
 * the release of due paused rows (D-92, D-93). */
#include "dispatch/runner.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

static void claim_round(struct runner *r);

/* ---- the claim round ---- */

static void claim_requeue_rows(struct runner *r, const struct claim_row *rows, int nrows, int from)
{
    int n = nrows - from;
    if (n <= 0)
        return;
    int64_t *ids = xcalloc((size_t)n, sizeof *ids);
    const char **stages = xcalloc((size_t)n, sizeof *stages);
    for (int i = 0; i < n; i++) {
        ids[i] = rows[from + i].id;
        stages[i] = rows[from + i].stage;
    }
    requeue_ids(r, stages, ids, (size_t)n);
    free(ids);
    free(stages);
}

/* Hands the claimed rows to their stages' pools; what no worker can take
 * goes straight back. Rows come grouped by stage (one LATERAL per stage). */
static void claim_assign(struct runner *r, const struct claim_row *rows, int n)
{
    int64_t *ids = xcalloc((size_t)(n ? n : 1), sizeof *ids);
    const char **back_st = xcalloc((size_t)(n ? n : 1), sizeof *back_st);
    int64_t *back = xcalloc((size_t)(n ? n : 1), sizeof *back);
    size_t nback = 0;
    uint64_t now = now_ms();

    for (int i = 0; i < n;) {
        const char *name = rows[i].stage;
        int j = i;
        size_t k = 0;
        while (j < n && strcmp(rows[j].stage, name) == 0)
            ids[k++] = rows[j++].id;
        struct stage *s = stage_by_name(r, name);
        if (s)
            s->claim_got += (int)k;
        size_t taken = s ? stage_assign(s, ids, k, now) : 0;
        for (size_t m = taken; m < k; m++) {
            back[nback] = ids[m];
            back_st[nback++] = rows[i + (int)m].stage;
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
    int n;
    struct claim_row *rows = claim_rows(res, &n);
    r->dstats.claimed += n;
    if (n > 0) {
        r->traffic_since_gc = r->traffic_since_flush = true;
        log_debug(COMPONENT, "claimed %d message(s)", n);
    }
    /* -L debug: one line per message event (issue 15); the level is
     * checked once, so that a claim costs no formatting otherwise. */
    for (int i = 0; log_enabled(PLOG_DEBUG) && i < n; i++)
        log_debug(rows[i].stage, "message=%lld claimed sender=\"%s\"", (long long)rows[i].id,
                  rows[i].sender ? rows[i].sender : "");
    if (r->shutting_down) {
        claim_requeue_rows(r, rows, n, 0);
    } else {
        claimer_claimed(r->claimer, rows, n, now_ms()); /* D-49: charged at once */
        claim_assign(r, rows, n);
        for (size_t i = 0; i < r->tabs->n_stages; i++) {
            struct stage *s = &r->tabs->stages[i];
            stage_adapt(s, s->claim_asked, s->claim_got);
        }
    }
    free(rows);
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
        stages[i]->claim_asked = caps[i];
        stages[i]->claim_got = 0;
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
        /* Prepared once per connection: the claim is the runner's hot
         * statement, and its parse and plan were a quarter of an idle
         * claim's round trip (issue 19). */
        db_query(&r->db, q.sql, q.n, (const char *const *)q.params, DB_PREPARED, claim_done, r);
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
void wake(void *arg)
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

void heartbeat_cb(uv_timer_t *t)
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

void release_paused(struct runner *r)
{
    db_query(&r->db,
             "select released, ceil(extract(epoch from next_timeout - clock_timestamp()) * 1000)::bigint"
             " from pepsi.workqueue_release_paused(p_owner_slot => $1::int)",
             1, (const char *const[]){r->owner_slot}, 0, release_done, r);
}

static void paused_timer_cb(uv_timer_t *t)
{
    struct runner *r = t->data;
    r->paused_due_ms = 0;
    if (!r->shutting_down && db_connected(&r->db))
        release_paused(r);
}

/* Makes sure the paused sweep runs no later than delay_ms from now. */
void schedule_paused(struct runner *r, uint64_t delay_ms)
{
    uint64_t due = now_ms() + delay_ms + 5; /* a little late rather than early */
    if (r->paused_due_ms && r->paused_due_ms <= due)
        return;
    r->paused_due_ms = due;
    uv_timer_start(&r->paused_timer, paused_timer_cb, delay_ms + 5, 0);
}
