/* dispatch/claim.c — see claim.h. */
#include "dispatch/claim.h"

#include "dispatch/fair.h"
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
};

struct claimer *claimer_new(const struct conf *conf)
{
    struct claimer *c = xcalloc(1, sizeof *c);
    c->fair_on = conf->fair_scheduling;
    c->fifo_percent = conf->fair_fifo_percent;
    c->half_life_ms = (uint64_t)conf->fair_half_life_ms;
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

struct buf {
    char *s;
    size_t len, cap;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* An element of a text[] literal: NULL, or double-quoted with \ and "
 * escaped (sender keys can hold any character). */
static void put_elem(struct buf *b, const char *s, bool first)
{
    if (!first)
        put(b, ",", 1);
    if (s == NULL) {
        puts_(b, "NULL");
        return;
    }
    put(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            put(b, "\\", 1);
        put(b, s, 1);
    }
    put(b, "\"", 1);
}

static void put_num(struct buf *b, double v, bool integer, bool first)
{
    char num[40];
    snprintf(num, sizeof num, integer ? "%s%.0f" : "%s%.3f", first ? "" : ",", v);
    puts_(b, num);
}

/* A float8 exactly: leads in the frame can be large (v grows with scale). */
static void put_exact(struct buf *b, double v, bool first)
{
    char num[40];
    snprintf(num, sizeof num, "%s%.17g", first ? "" : ",", v);
    puts_(b, num);
}

static char *finish(struct buf *b)
{
    put(b, "}", 1);
    return b->s;
}

static int build_plain(struct stage *const *stages, const int *caps, size_t n, const char *claim_id,
                       bool release, struct claim_query *q)
{
    struct buf st = {0}, cp = {0};
    int included = 0;
    puts_(&st, "{");
    puts_(&cp, "{");
    for (size_t i = 0; i < n; i++) {
        if (caps[i] <= 0)
            continue;
        put_elem(&st, stages[i]->name, included == 0);
        put_num(&cp, caps[i], true, included == 0);
        included++;
    }
    /* No p_now: the database's clock decides (issue 12). */
    q->sql = "select workqueue_id, stage, sender_key from pepsi.workqueue_claim($1::text[], $2::int[],"
             " p_release_paused => $3::boolean, p_claim_id => $4::bigint)";
    q->n = 4;
    q->params[0] = finish(&st);
    q->params[1] = finish(&cp);
    q->params[2] = xstrdup(release ? "t" : "f");
    q->params[3] = xstrdup(claim_id);
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
    struct buf st, cp, avg, base, scale, sync, ls, lsn, lv, wa, fc;
    int included, nl;
    bool synced;                /* some stage sends all its leads */
};

/* Stage s's part: its frame, window, credit, and the leads that changed
 * since its previous claim (all of them when it resyncs). */
static void add_stage(struct fair_arrays *a, struct fair *f, const char *stage, int cap, uint64_t now)
{
    bool first = a->included == 0;
    put_elem(&a->st, stage, first);
    put_num(&a->cp, cap, true, first);
    put_num(&a->avg, fair_average(f), false, first);
    double base, scale;
    fair_frame(f, now, &base, &scale);
    put_exact(&a->base, base, first);
    put_exact(&a->scale, scale, first);
    put_elem(&a->wa, fair_window_after(f), first);
    int credit = fair_fifo_credit(f);
    if (credit < 0)
        puts_(&a->fc, first ? "NULL" : ",NULL");
    else
        put_num(&a->fc, credit, true, first);
    const char *const *senders;
    const double *values;
    bool sync;
    size_t k = fair_changes(f, &senders, &values, &sync);
    puts_(&a->sync, first ? (sync ? "t" : "f") : (sync ? ",t" : ",f"));
    a->synced |= sync;
    for (size_t j = 0; j < k; j++, a->nl++) {
        put_elem(&a->ls, stage, a->nl == 0);
        put_elem(&a->lsn, senders[j], a->nl == 0);
        put_exact(&a->lv, values[j], a->nl == 0);
    }
    a->included++;
}

static int build_fair(struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                      const char *claim_id, bool release, uint64_t now, struct claim_query *q)
{
    struct fair_arrays a = {0};
    struct buf *all[] = {&a.st, &a.cp, &a.avg, &a.base, &a.scale, &a.sync, &a.ls, &a.lsn, &a.lv, &a.wa, &a.fc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        puts_(all[i], "{");
    /* A claim that carried leads went unanswered (lost with the
     * connection, or failed): the copy may lack them; resend it all. */
    if (c->unanswered)
        for (size_t i = 0; i < c->n_tables; i++)
            fair_resync(c->tables[i].fair);
    for (size_t i = 0; i < n; i++)
        if (caps[i] > 0)
            add_stage(&a, fair_of(c, stages[i]->name, now), stages[i]->name, caps[i], now);
    c->unanswered = a.nl > 0 || a.synced;
    char num[16];
    q->sql = "select workqueue_id, stage, sender_key, window_next, window_lap, fifo_credit, lead_floor, leads_lost"
             " from pepsi.workqueue_claim_fair($1::text[], $2::int[], $3::float8[], $4::text[], $5::text[],"
             " $6::float8[], $7::int, $8::text[], $9::int[], p_release_paused => $10::boolean,"
             " p_window_size => $11::int, p_claim_id => $12::bigint, p_lead_base => $13::float8[],"
             " p_lead_scale => $14::float8[], p_lead_sync => $15::boolean[])";
    q->n = 15;
    q->params[0] = finish(&a.st);
    q->params[1] = finish(&a.cp);
    q->params[2] = finish(&a.avg);
    q->params[3] = finish(&a.ls);
    q->params[4] = finish(&a.lsn);
    q->params[5] = finish(&a.lv);
    snprintf(num, sizeof num, "%d", c->fifo_percent);
    q->params[6] = xstrdup(num);
    q->params[7] = finish(&a.wa);
    q->params[8] = finish(&a.fc);
    q->params[9] = xstrdup(release ? "t" : "f");
    snprintf(num, sizeof num, "%d", window_size(caps, n));
    q->params[10] = xstrdup(num);
    q->params[11] = xstrdup(claim_id);
    q->params[12] = finish(&a.base);
    q->params[13] = finish(&a.scale);
    q->params[14] = finish(&a.sync);
    return a.included;
}

int claimer_build(struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                  int64_t claim_id, bool release_paused, uint64_t now_ms, struct claim_query *q)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)claim_id);
    memset(q, 0, sizeof *q);
    if (!c->fair_on)
        return build_plain(stages, caps, n, id, release_paused, q);
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
