/* dispatch/claim.c — see claim.h. */
#include "dispatch/claim.h"

#include "dispatch/fair.h"
#include "lib/pgarray.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INFLIGHT_BUCKETS 1024

/* A message in flight: whom it was charged to, where, and how much. */
struct charge {
    struct charge *next;
    int64_t id;
    char *stage;
    char *sender;
    double usec;
};

struct stage_fair {
    char *stage;
    struct fair *fair;
};

struct claimer {
    bool fair_on;
    bool unanswered;            /* the last claim carried leads and got no answer yet */
    int fifo_percent;
    uint64_t half_life_ms;
    struct stage_fair *tables;
    size_t n_tables;
    struct charge *buckets[INFLIGHT_BUCKETS];
    char owner_slot[16];        /* OWNER_SLOT as text: every claim's p_owner_slot (issue 14) */
};

struct claimer *claimer_new(const struct conf *conf)
{
    struct claimer *c = xcalloc(1, sizeof *c);
    c->fair_on = conf->fair_scheduling;
    c->fifo_percent = conf->fair_fifo_percent;
    c->half_life_ms = (uint64_t)conf->fair_half_life_ms;
    snprintf(c->owner_slot, sizeof c->owner_slot, "%d", conf->owner_slot);
    return c;
}

static void charge_free(struct charge *ch)
{
    free(ch->stage);
    free(ch->sender);
    free(ch);
}

void claimer_free(struct claimer *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < INFLIGHT_BUCKETS; i++)
        while (c->buckets[i]) {
            struct charge *ch = c->buckets[i];
            c->buckets[i] = ch->next;
            charge_free(ch);
        }
    for (size_t i = 0; i < c->n_tables; i++) {
        free(c->tables[i].stage);
        fair_free(c->tables[i].fair);
    }
    free(c->tables);
    free(c);
}

/* The leads of stage, made on first use. */
static struct fair *fair_of(struct claimer *c, const char *stage, uint64_t now)
{
    for (size_t i = 0; i < c->n_tables; i++)
        if (strcmp(c->tables[i].stage, stage) == 0)
            return c->tables[i].fair;
    c->tables = xrealloc(c->tables, (c->n_tables + 1) * sizeof *c->tables);
    c->tables[c->n_tables].stage = xstrdup(stage);
    c->tables[c->n_tables].fair = fair_new(c->half_life_ms, 0, now);
    return c->tables[c->n_tables++].fair;
}

/* ---- in-flight charges ---- */

static size_t bucket(int64_t id)
{
    return (size_t)((uint64_t)id * 11400714819323198485ull >> 54) % INFLIGHT_BUCKETS;
}

static void charge_put(struct claimer *c, int64_t id, const char *stage, const char *sender, double usec)
{
    struct charge *ch = xcalloc(1, sizeof *ch);
    ch->id = id;
    ch->stage = xstrdup(stage);
    ch->sender = xstrdup(sender);
    ch->usec = usec;
    size_t b = bucket(id);
    ch->next = c->buckets[b];
    c->buckets[b] = ch;
}

/* Unlinks and returns the charge of id, or NULL; the caller frees it. */
static struct charge *charge_take(struct claimer *c, int64_t id)
{
    for (struct charge **p = &c->buckets[bucket(id)]; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            struct charge *ch = *p;
            *p = ch->next;
            return ch;
        }
    }
    return NULL;
}

/* ---- building the statement ---- */

/* Every array parameter is built by lib/pgarray (issue 13). */

static int build_plain(const struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                       const char *claim_id, bool release, struct claim_query *q)
{
    struct pgarray st = PGARRAY_INIT, cp = PGARRAY_INIT;
    for (size_t i = 0; i < n; i++) {
        if (caps[i] <= 0)
            continue;
        pgarray_add_text(&st, stages[i]->name);
        pgarray_add_int64(&cp, caps[i]);
    }
    int included = (int)pgarray_count(&st);
    /* No p_now: the database's clock decides (issue 12). */
    q->sql = "select workqueue_id, stage, sender_key from pepsi.workqueue_claim($1::text[], $2::int[],"
             " p_release_paused => $3::boolean, p_claim_id => $4::bigint, p_owner_slot => $5::int)";
    q->n = 5;
    q->params[0] = pgarray_finish(&st);
    q->params[1] = pgarray_finish(&cp);
    q->params[2] = xstrdup(release ? "t" : "f");
    q->params[3] = xstrdup(claim_id);
    q->params[4] = xstrdup(c->owner_slot);
    return included;
}

/* p_window_size: senders cost index probes; a claim of a few slots needs
 * few of them (bench/claim-fair measured 8.7M instructions a one-slot
 * claim with 64, 3.1M with 8). */
static int window_size(const int *caps, size_t n)
{
    int max = 0;
    for (size_t i = 0; i < n; i++)
        if (caps[i] > max)
            max = caps[i];
    int w = 4 * max;
    return w < 8 ? 8 : w > 64 ? 64 : w;
}

/* The arrays of a fair claim, one per parameter. */
struct fair_arrays {
    struct pgarray st, cp, avg, base, scale, sync, ls, lsn, lv, wa, fc;
    bool synced;                /* some stage sends all its leads */
};

/* Stage s's part: its frame, window, credit, and the leads that changed
 * since its previous claim (all of them when it resyncs). A lead's value
 * and the frame go exactly: leads can be large (v grows with scale). */
static void add_stage(struct fair_arrays *a, struct fair *f, const char *stage, int cap, uint64_t now)
{
    pgarray_add_text(&a->st, stage);
    pgarray_add_int64(&a->cp, cap);
    pgarray_add_float8(&a->avg, fair_average(f), 3);
    double base, scale;
    fair_frame(f, now, &base, &scale);
    pgarray_add_float8(&a->base, base, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a->scale, scale, PGARRAY_FLOAT8_EXACT);
    pgarray_add_text(&a->wa, fair_window_after(f));
    int credit = fair_fifo_credit(f);
    if (credit < 0)
        pgarray_add_null(&a->fc);
    else
        pgarray_add_int64(&a->fc, credit);
    const char *const *senders;
    const double *values;
    bool sync;
    size_t k = fair_changes(f, &senders, &values, &sync);
    pgarray_add_bool(&a->sync, sync);
    a->synced |= sync;
    for (size_t j = 0; j < k; j++) {
        pgarray_add_text(&a->ls, stage);
        pgarray_add_text(&a->lsn, senders[j]);
        pgarray_add_float8(&a->lv, values[j], PGARRAY_FLOAT8_EXACT);
    }
}

static int build_fair(struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                      const char *claim_id, bool release, uint64_t now, struct claim_query *q)
{
    struct fair_arrays a = {.st = PGARRAY_INIT}; /* every builder empty */
    /* A claim that carried leads went unanswered (lost with the
     * connection, or failed): the copy may lack them; resend it all. */
    if (c->unanswered)
        for (size_t i = 0; i < c->n_tables; i++)
            fair_resync(c->tables[i].fair);
    for (size_t i = 0; i < n; i++)
        if (caps[i] > 0)
            add_stage(&a, fair_of(c, stages[i]->name, now), stages[i]->name, caps[i], now);
    int included = (int)pgarray_count(&a.st);
    c->unanswered = pgarray_count(&a.lsn) > 0 || a.synced;
    char num[16];
    q->sql = "select workqueue_id, stage, sender_key, window_next, window_lap, fifo_credit, lead_floor, leads_lost"
             " from pepsi.workqueue_claim_fair($1::text[], $2::int[], $3::float8[], $4::text[], $5::text[],"
             " $6::float8[], $7::int, $8::text[], $9::int[], p_release_paused => $10::boolean,"
             " p_window_size => $11::int, p_claim_id => $12::bigint, p_lead_base => $13::float8[],"
             " p_lead_scale => $14::float8[], p_lead_sync => $15::boolean[], p_owner_slot => $16::int)";
    q->n = 16;
    q->params[0] = pgarray_finish(&a.st);
    q->params[1] = pgarray_finish(&a.cp);
    q->params[2] = pgarray_finish(&a.avg);
    q->params[3] = pgarray_finish(&a.ls);
    q->params[4] = pgarray_finish(&a.lsn);
    q->params[5] = pgarray_finish(&a.lv);
    snprintf(num, sizeof num, "%d", c->fifo_percent);
    q->params[6] = xstrdup(num);
    q->params[7] = pgarray_finish(&a.wa);
    q->params[8] = pgarray_finish(&a.fc);
    q->params[9] = xstrdup(release ? "t" : "f");
    snprintf(num, sizeof num, "%d", window_size(caps, n));
    q->params[10] = xstrdup(num);
    q->params[11] = xstrdup(claim_id);
    q->params[12] = pgarray_finish(&a.base);
    q->params[13] = pgarray_finish(&a.scale);
    q->params[14] = pgarray_finish(&a.sync);
    q->params[15] = xstrdup(c->owner_slot);
    return included;
}

int claimer_build(struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                  int64_t claim_id, bool release_paused, uint64_t now_ms, struct claim_query *q)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)claim_id);
    memset(q, 0, sizeof *q);
    if (!c->fair_on)
        return build_plain(c, stages, caps, n, id, release_paused, q);
    return build_fair(c, stages, caps, n, id, release_paused, now_ms, q);
}

void claim_query_free(struct claim_query *q)
{
    for (int i = 0; i < q->n; i++)
        free(q->params[i]);
    memset(q, 0, sizeof *q);
}

/* ---- bookkeeping ---- */

/* A cell's text, or dflt when it is NULL or the column is not there. */
static const char *cell(const PGresult *res, int row, int col, const char *dflt)
{
    return col < 0 || PQgetisnull(res, row, col) ? dflt : PQgetvalue(res, row, col);
}

struct claim_row *claim_rows(const PGresult *res, int *n)
{
    int id = PQfnumber(res, "workqueue_id"), stage = PQfnumber(res, "stage");
    int sender = PQfnumber(res, "sender_key"), next = PQfnumber(res, "window_next");
    int lap = PQfnumber(res, "window_lap"), credit = PQfnumber(res, "fifo_credit");
    int floor = PQfnumber(res, "lead_floor"), lost = PQfnumber(res, "leads_lost");
    *n = PQntuples(res);
    struct claim_row *rows = xcalloc((size_t)(*n > 0 ? *n : 1), sizeof *rows);
    for (int i = 0; i < *n; i++) {
        struct claim_row *w = &rows[i];
        w->id = strtoll(cell(res, i, id, ""), NULL, 10);
        w->stage = cell(res, i, stage, "");
        w->sender = cell(res, i, sender, "");
        w->window_next = cell(res, i, next, NULL);
        w->window_lap = strcmp(cell(res, i, lap, ""), "t") == 0;
        w->fifo_credit = atoi(cell(res, i, credit, ""));
        w->lead_floor = strtod(cell(res, i, floor, ""), NULL);
        w->leads_lost = strcmp(cell(res, i, lost, ""), "t") == 0;
    }
    return rows;
}

void claimer_claimed(struct claimer *c, const struct claim_row *rows, int n, uint64_t now)
{
    if (!c->fair_on)
        return;
    c->unanswered = false;
    const char *stage = NULL;
    struct fair *f = NULL;
    for (int i = 0; i < n; i++) {
        const struct claim_row *w = &rows[i];
        if (stage == NULL || strcmp(stage, w->stage) != 0) {
            /* Rows come grouped by stage: the first row carries the
             * stage's window, credit and floor (workqueue_claim_fair). */
            stage = w->stage;
            f = fair_of(c, w->stage, now);
            fair_claimed(f, w->window_next, w->window_lap, w->fifo_credit, w->lead_floor, now);
            if (w->leads_lost)
                fair_resync(f); /* the copy of the leads was lost (or never sent) */
        }
        double charged = fair_charge_claim(f, w->sender, now);
        charge_put(c, w->id, w->stage, w->sender, charged);
    }
}

static double report_usec(const struct proto_status *st, const char *stage, uint64_t fallback)
{
    if (st->report_ok)
        for (size_t i = 0; i < st->n_report; i++)
            if (strcmp(st->report[i].stage, stage) == 0)
                return (double)st->report[i].usec;
    return (double)fallback;
}

void claimer_answered(struct claimer *c, const char *stage, int64_t id, const struct proto_status *st,
                      uint64_t usec, uint64_t now)
{
    struct charge *ch = charge_take(c, id);
    if (ch == NULL)
        return;
    struct fair *f = fair_of(c, ch->stage, now);
    if (st->status == 74 || st->status == 75) {
        fair_refund(f, ch->sender, ch->usec, now); /* it did not run */
    } else {
        fair_correct(f, ch->sender, ch->usec, report_usec(st, stage, usec), now);
        /* Fused stages' times count for their own stages (D-50). */
        for (size_t i = 0; st->report_ok && i < st->n_report; i++)
            if (strcmp(st->report[i].stage, stage) != 0)
                fair_correct(fair_of(c, st->report[i].stage, now), ch->sender, 0,
                             (double)st->report[i].usec, now);
    }
    charge_free(ch);
}

void claimer_requeued(struct claimer *c, int64_t id, uint64_t now)
{
    struct charge *ch = charge_take(c, id);
    if (ch == NULL)
        return;
    fair_refund(fair_of(c, ch->stage, now), ch->sender, ch->usec, now);
    charge_free(ch);
}

void claimer_struck(struct claimer *c, int64_t id, bool hang, int64_t max_runtime_ms, uint64_t now)
{
    struct charge *ch = charge_take(c, id);
    if (ch == NULL)
        return;
    if (hang)
        fair_timeout(fair_of(c, ch->stage, now), ch->sender, ch->usec, (double)max_runtime_ms * 1000.0, now);
    charge_free(ch);
}
