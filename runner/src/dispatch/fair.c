/* dispatch/fair.c — one stage's sender leads (D-48..D-57); see fair.h.
 *
 * Decay without a timer. All leads of a stage halve at the same rate, so
 * they are kept in one frame: an entry stores v, and its lead now is
 * (v - vmin) / scale(now) with scale(now) = 2^((now - frame_ms) / half_life).
 * Charging x µs adds x * scale(now) to v; raising the baseline (the least
 * served waiting sender, fair_level) adds to vmin; neither touches the other
 * entries, and time passing touches none. The claim reads the same formula
 * from the copy in pg_temp.fair_lead with vmin and scale passed as the
 * stage's p_lead_base and p_lead_scale, so a lead changes the copy only
 * when it is charged, corrected or forgotten (issue 12).
 *
 * Only the charge paths (add_lead, fair_level) move the frame or sweep,
 * never a read and never the clock alone (an idle dispatcher sends
 * nothing, D-139):
 *   - once a half-life has passed since the last sweep, entries worth less
 *     than half an average are forgotten (D-56); a forgotten entry that
 *     the copy holds is sent once more, with v = vmin (lead 0: deleted);
 *   - once REBASE_HALF_LIVES have passed since the frame was set, every
 *     v is rewritten as its lead and the frame moved to now, so that scale
 *     stays below 2^REBASE_HALF_LIVES; then the copy is resent in full
 *     (sync). Anything charged before the frame has halved that many
 *     times, so little is left to resend.
 *
 * The table: an array of entries with stable indices (holes reused through
 * a free list), an open-addressing index over it (linear probing,
 * backward-shift deletion, no tombstones), and a list of the entries
 * whose v changed since the last fair_changes. Both grow with the senders
 * up to max_senders. */
#include "dispatch/fair.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

/* The frame moves after this many half-lives (scale < 2^32). */
#define REBASE_HALF_LIVES 32
/* A scale past 2^SCALE_MAX_EXP makes every lead 0; kept finite for SQL. */
#define SCALE_MAX_EXP 900.0
#define INITIAL_ENTRIES 16

struct fair_entry {
    char *sender;   /* owned; NULL: a free entry */
    uint64_t hash;  /* of sender */
    double v;       /* lead = (v - vmin) / scale, in the current frame */
    bool live;      /* has a lead (else: waiting to be sent as forgotten) */
    bool stored;    /* the copy (pg_temp.fair_lead) holds it, as last sent */
    bool dirty;     /* in the changed list */
};

struct fair {
    uint64_t half_life_ms;     /* 0: leads are forgotten once the clock moves */
    size_t max;                /* live entries kept at most */
    struct fair_entry *e;      /* entries [0, n_alloc), cap_e allocated */
    size_t n_alloc, cap_e;
    size_t n_used;             /* entries not free (live or waiting to be sent) */
    size_t n_live;
    uint32_t *free_idx;        /* free entries below n_alloc */
    size_t n_free;
    uint32_t *slot;            /* entry index + 1, 0 = free */
    size_t mask;               /* slots - 1, slots a power of 2 >= 2 * cap_e */
    uint32_t *changed;         /* entries with dirty set */
    size_t n_changed, cap_changed;
    uint64_t frame_ms;         /* when scale was 1 */
    uint64_t swept_ms;         /* the last sweep */
    double vmin;               /* the least-served waiting sender, frame units */
    double avg;                /* µs per message */
    bool measured;             /* avg has had a measurement */
    double acc;                /* smallest lead_floor since the last lap, frame units */
    char *window_after;        /* p_window_after of the next claim, or NULL */
    int fifo_credit;           /* p_fifo_credit of the next claim, -1: NULL */
    bool need_sync;            /* the copy must be resent in full */
    bool stored_any;           /* the copy may hold rows of this stage */
    /* What fair_changes returned, valid until the next call. */
    const char **out_s;
    double *out_v;
    size_t cap_out;
    char **grave;              /* names of entries freed while returned */
    size_t n_grave, cap_grave;
};

/* ---- arithmetic ---- */

/* 2^x for 0 <= x without libm: the integer part by doubling, the
 * fraction by the exponential series of x * ln 2 (< 0.7: 20 terms are
 * exact to the last bit). */
static double pow2(double x)
{
    double r = 1.0;
    while (x >= 1.0) {
        r *= 2.0;
        x -= 1.0;
    }
    double y = x * 0.69314718055994530942, term = 1.0, sum = 1.0;
    for (int k = 1; k < 20; k++) {
        term *= y / k;
        sum += term;
    }
    return r * sum;
}

static double scale_at(const struct fair *f, uint64_t now_ms)
{
    if (now_ms <= f->frame_ms)
        return 1.0;
    if (f->half_life_ms == 0)
        return pow2(SCALE_MAX_EXP);
    double x = (double)(now_ms - f->frame_ms) / (double)f->half_life_ms;
    return pow2(x < SCALE_MAX_EXP ? x : SCALE_MAX_EXP);
}

static uint64_t hash_of(const char *s)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- the index ---- */

/* The slot that holds entry index i (which must be present). */
static size_t slot_of(const struct fair *f, size_t i)
{
    size_t s = (size_t)f->e[i].hash & f->mask;
    while (f->slot[s] != i + 1)
        s = (s + 1) & f->mask;
    return s;
}

/* Entry index of sender (live or waiting to be sent), or -1. */
static long find(const struct fair *f, const char *sender, uint64_t h)
{
    for (size_t s = (size_t)h & f->mask; f->slot[s]; s = (s + 1) & f->mask) {
        const struct fair_entry *e = &f->e[f->slot[s] - 1];
        if (e->hash == h && strcmp(e->sender, sender) == 0)
            return (long)(f->slot[s] - 1);
    }
    return -1;
}

static void slot_put(struct fair *f, size_t i)
{
    size_t s = (size_t)f->e[i].hash & f->mask;
    while (f->slot[s])
        s = (s + 1) & f->mask;
    f->slot[s] = (uint32_t)(i + 1);
}

/* Empties slot s and shifts back the entries that probed past it. */
static void slot_delete(struct fair *f, size_t s)
{
    f->slot[s] = 0;
    for (size_t j = (s + 1) & f->mask; f->slot[j]; j = (j + 1) & f->mask) {
        size_t home = (size_t)f->e[f->slot[j] - 1].hash & f->mask;
        /* The entry at j may move to s when its home is not in (s, j]. */
        bool stays = (s < j) ? (home > s && home <= j) : (home > s || home <= j);
        if (!stays) {
            f->slot[s] = f->slot[j];
            f->slot[j] = 0;
            s = j;
        }
    }
}

/* Room for one more entry: the entry array doubles, and the index with
 * it (rebuilt), so that it stays at most half full. */
static void grow(struct fair *f)
{
    if (f->n_alloc < f->cap_e || f->n_free > 0)
        return;
    size_t cap = f->cap_e * 2;
    f->e = xrealloc(f->e, cap * sizeof *f->e);
    memset(f->e + f->cap_e, 0, (cap - f->cap_e) * sizeof *f->e);
    f->free_idx = xrealloc(f->free_idx, cap * sizeof *f->free_idx);
    f->cap_e = cap;
    size_t slots = (f->mask + 1) * 2;
    free(f->slot);
    f->slot = xcalloc(slots, sizeof *f->slot);
    f->mask = slots - 1;
    for (size_t i = 0; i < f->n_alloc; i++)
        if (f->e[i].sender)
            slot_put(f, i);
}

static size_t entry_new(struct fair *f, const char *sender, uint64_t h)
{
    grow(f);
    size_t i = f->n_free > 0 ? f->free_idx[--f->n_free] : f->n_alloc++;
    f->e[i] = (struct fair_entry){.sender = xstrdup(sender), .hash = h};
    slot_put(f, i);
    f->n_used++;
    return i;
}

/* Frees entry i; its name goes to the graveyard when fair_changes has just
 * returned it (keep_name), else at once. */
static void entry_free(struct fair *f, size_t i, bool keep_name)
{
    slot_delete(f, slot_of(f, i));
    if (keep_name) {
        if (f->n_grave == f->cap_grave) {
            f->cap_grave = f->cap_grave ? f->cap_grave * 2 : 16;
            f->grave = xrealloc(f->grave, f->cap_grave * sizeof *f->grave);
        }
        f->grave[f->n_grave++] = f->e[i].sender;
    } else {
        free(f->e[i].sender);
    }
    f->e[i] = (struct fair_entry){0};
    f->free_idx[f->n_free++] = (uint32_t)i;
    f->n_used--;
}

static void mark_changed(struct fair *f, size_t i)
{
    if (f->e[i].dirty)
        return;
    if (f->n_changed == f->cap_changed) {
        f->cap_changed = f->cap_changed ? f->cap_changed * 2 : 16;
        f->changed = xrealloc(f->changed, f->cap_changed * sizeof *f->changed);
    }
    f->changed[f->n_changed++] = (uint32_t)i;
    f->e[i].dirty = true;
}

/* Entry i gets v (a lead again if it had none). */
static void entry_set(struct fair *f, size_t i, double v)
{
    if (!f->e[i].live) {
        f->e[i].live = true;
        f->n_live++;
    }
    f->e[i].v = v;
    mark_changed(f, i);
}

/* Entry i loses its lead: it stays until the copy has been told (stored
 * or already in the changed list), else it goes at once. */
static void entry_forget(struct fair *f, size_t i)
{
    if (!f->e[i].live)
        return;
    f->e[i].live = false;
    f->n_live--;
    if (f->e[i].dirty)
        return;
    if (f->e[i].stored)
        mark_changed(f, i);
    else
        entry_free(f, i, false);
}

/* ---- leads ---- */

static double lead_of(const struct fair *f, size_t i, double scale)
{
    return (f->e[i].v - f->vmin) / scale;
}

/* A lead "worth less than one message" is forgotten (D-56): less than half
 * an average message, i.e. one that rounds to no message. Forgetting below
 * a whole average would forget, half of the time, the lead of a sender
 * that has just been served one ordinary message (its measured time is
 * about one average), and then its older rows would win every tie with a
 * newcomer forever: measured with one busy sender and one arriving.
 * workqueue_claim_fair applies the same rule to the copy. */
static double forget_below(const struct fair *f)
{
    return f->avg * 0.5;
}

/* Forgets every entry worth less than one message (D-56). */
static void sweep(struct fair *f, double scale, uint64_t now_ms)
{
    for (size_t i = 0; i < f->n_alloc; i++)
        if (f->e[i].live && lead_of(f, i, scale) < forget_below(f))
            entry_forget(f, i);
    f->swept_ms = now_ms;
}

/* On a charge path: sweeps once a half-life, moves the frame once every
 * REBASE_HALF_LIVES (D-55, D-56). */
static void advance(struct fair *f, uint64_t now_ms)
{
    if (now_ms <= f->frame_ms)
        return;
    uint64_t hl = f->half_life_ms;
    if (hl == 0 || now_ms - f->frame_ms >= REBASE_HALF_LIVES * hl) {
        double s = scale_at(f, now_ms);
        for (size_t i = 0; i < f->n_alloc; i++)
            if (f->e[i].live)
                f->e[i].v = lead_of(f, i, s);
        f->vmin = 0;
        f->acc /= s;
        f->frame_ms = now_ms;
        sweep(f, 1.0, now_ms);
        if (f->n_live > 0 || f->stored_any)
            f->need_sync = true; /* every v of the copy is of the old frame */
        return;
    }
    if (now_ms - f->swept_ms >= hl)
        sweep(f, scale_at(f, now_ms), now_ms);
}

/* Makes room for a sender whose lead would be lead_usec: the forgotten
 * go first, then the smallest lead if it is smaller. False: no room, the
 * new sender stays level with the least served (the smallest error). */
static bool make_room(struct fair *f, double lead_usec, double scale, uint64_t now_ms)
{
    if (f->n_live < f->max)
        return true;
    sweep(f, scale, now_ms);
    if (f->n_live < f->max)
        return true;
    size_t min = SIZE_MAX;
    for (size_t i = 0; i < f->n_alloc; i++)
        if (f->e[i].live && (min == SIZE_MAX || f->e[i].v < f->e[min].v))
            min = i;
    if (min == SIZE_MAX || lead_of(f, min, scale) >= lead_usec)
        return false;
    entry_forget(f, min);
    return true;
}

/* Adds delta_usec to sender's lead; a lead under one average counts as 0
 * before and is forgotten after (D-54, D-56). */
static void add_lead(struct fair *f, const char *sender, double delta_usec, uint64_t now_ms)
{
    if (!isfinite(delta_usec))
        return;
    advance(f, now_ms);
    double s = scale_at(f, now_ms);
    uint64_t h = hash_of(sender);
    long i = find(f, sender, h);
    if (i >= 0 && f->e[i].live) {
        double v = lead_of(f, (size_t)i, s) < forget_below(f) ? f->vmin : f->e[i].v;
        entry_set(f, (size_t)i, v + delta_usec * s);
        if (lead_of(f, (size_t)i, s) < forget_below(f))
            entry_forget(f, (size_t)i);
        return;
    }
    if (delta_usec < forget_below(f) || !make_room(f, delta_usec, s, now_ms))
        return;
    i = find(f, sender, h); /* make_room may have freed it */
    if (i < 0)
        i = (long)entry_new(f, sender, h);
    entry_set(f, (size_t)i, f->vmin + delta_usec * s);
}

static void measure(struct fair *f, double usec)
{
    if (!(usec >= 0) || !isfinite(usec))
        return;
    if (f->measured)
        f->avg += (usec - f->avg) * FAIR_AVG_WEIGHT;
    else
        f->avg = usec;
    f->measured = true;
    if (f->avg < 1.0)
        f->avg = 1.0; /* workqueue_claim_fair needs an average > 0 */
}

/* ---- the API ---- */

struct fair *fair_new(uint64_t half_life_ms, size_t max_senders, uint64_t now_ms)
{
    struct fair *f = xcalloc(1, sizeof *f);
    f->half_life_ms = half_life_ms;
    f->max = max_senders ? max_senders : FAIR_DEFAULT_MAX_SENDERS;
    if (f->max > UINT32_MAX / 4)
        f->max = UINT32_MAX / 4;
    f->cap_e = INITIAL_ENTRIES;
    f->e = xcalloc(f->cap_e, sizeof *f->e);
    f->free_idx = xcalloc(f->cap_e, sizeof *f->free_idx);
    f->mask = 2 * f->cap_e - 1;
    f->slot = xcalloc(f->mask + 1, sizeof *f->slot);
    f->frame_ms = f->swept_ms = now_ms;
    f->need_sync = true; /* the copy may hold an earlier incarnation's leads */
    f->avg = FAIR_DEFAULT_AVG_USEC;
    f->acc = INFINITY;
    f->fifo_credit = -1;
    return f;
}

static void bury(struct fair *f)
{
    for (size_t i = 0; i < f->n_grave; i++)
        free(f->grave[i]);
    f->n_grave = 0;
}

void fair_free(struct fair *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_alloc; i++)
        free(f->e[i].sender);
    bury(f);
    free(f->grave);
    free(f->e);
    free(f->free_idx);
    free(f->slot);
    free(f->changed);
    free(f->out_s);
    free(f->out_v);
    free(f->window_after);
    free(f);
}

double fair_average(const struct fair *f)
{
    return f->avg;
}

size_t fair_count(const struct fair *f)
{
    return f->n_live;
}

double fair_lead(struct fair *f, const char *sender, uint64_t now_ms)
{
    long i = find(f, sender, hash_of(sender));
    if (i < 0 || !f->e[i].live)
        return 0;
    double lead = lead_of(f, (size_t)i, scale_at(f, now_ms));
    return lead < forget_below(f) ? 0 : lead;
}

double fair_charge_claim(struct fair *f, const char *sender, uint64_t now_ms)
{
    double charge = f->avg;
    add_lead(f, sender, charge, now_ms);
    return charge;
}

void fair_correct(struct fair *f, const char *sender, double charged_usec, double measured_usec,
                  uint64_t now_ms)
{
    add_lead(f, sender, measured_usec - charged_usec, now_ms);
    measure(f, measured_usec);
}

void fair_refund(struct fair *f, const char *sender, double charged_usec, uint64_t now_ms)
{
    add_lead(f, sender, -charged_usec, now_ms);
}

void fair_timeout(struct fair *f, const char *sender, double charged_usec, double max_runtime_usec,
                  uint64_t now_ms)
{
    add_lead(f, sender, max_runtime_usec - charged_usec, now_ms);
}

void fair_level(struct fair *f, double lead_floor_usec, enum fair_window window, uint64_t now_ms)
{
    advance(f, now_ms);
    double floor_v = (lead_floor_usec > 0 && isfinite(lead_floor_usec))
                         ? lead_floor_usec * scale_at(f, now_ms) : 0;
    double apply = 0;
    if (window == FAIR_WINDOW_WHOLE) {
        apply = floor_v;
        f->acc = INFINITY;
    } else {
        if (floor_v < f->acc)
            f->acc = floor_v;
        if (window == FAIR_WINDOW_LAP) {
            apply = f->acc;
            f->acc = floor_v - apply; /* the lap window's own floor, carried on */
        }
    }
    if (apply > 0)
        f->vmin += apply;
}

const char *fair_window_after(const struct fair *f)
{
    return f->window_after;
}

int fair_fifo_credit(const struct fair *f)
{
    return f->fifo_credit;
}

void fair_claimed(struct fair *f, const char *window_next, bool window_lap, int fifo_credit,
                  double lead_floor_usec, uint64_t now_ms)
{
    free(f->window_after);
    f->window_after = window_next ? xstrdup(window_next) : NULL;
    f->fifo_credit = (fifo_credit >= 0 && fifo_credit <= 99) ? fifo_credit : -1;
    enum fair_window w = !window_next ? FAIR_WINDOW_WHOLE : window_lap ? FAIR_WINDOW_LAP : FAIR_WINDOW_PART;
    fair_level(f, lead_floor_usec, w, now_ms);
}

void fair_frame(const struct fair *f, uint64_t now_ms, double *base, double *scale)
{
    *base = f->vmin;
    *scale = scale_at(f, now_ms);
}

void fair_resync(struct fair *f)
{
    f->need_sync = true;
    f->stored_any = true;
}

static void out_put(struct fair *f, size_t *n, const char *sender, double v)
{
    if (*n == f->cap_out) {
        f->cap_out = f->cap_out ? f->cap_out * 2 : 16;
        f->out_s = xrealloc(f->out_s, f->cap_out * sizeof *f->out_s);
        f->out_v = xrealloc(f->out_v, f->cap_out * sizeof *f->out_v);
    }
    f->out_s[*n] = sender;
    f->out_v[(*n)++] = v;
}

/* Every live entry, as the whole copy; the forgotten ones go. */
static size_t changes_all(struct fair *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_alloc; i++) {
        struct fair_entry *e = &f->e[i];
        if (!e->sender)
            continue;
        e->dirty = false;
        if (e->live) {
            e->stored = true;
            out_put(f, &n, e->sender, e->v);
        } else {
            entry_free(f, i, false);
        }
    }
    f->n_changed = 0;
    f->need_sync = false;
    f->stored_any = n > 0;
    return n;
}

/* The changed entries; a forgotten one the copy holds is sent as lead 0. */
static size_t changes_since(struct fair *f)
{
    size_t n = 0;
    for (size_t k = 0; k < f->n_changed; k++) {
        size_t i = f->changed[k];
        struct fair_entry *e = &f->e[i];
        e->dirty = false;
        if (e->live) {
            e->stored = true;
            f->stored_any = true;
            out_put(f, &n, e->sender, e->v);
        } else if (e->stored && !f->need_sync) {
            out_put(f, &n, e->sender, f->vmin);
            entry_free(f, i, true);
        } else {
            entry_free(f, i, false);
        }
    }
    f->n_changed = 0;
    return n;
}

size_t fair_changes(struct fair *f, const char *const **senders, const double **values, bool *sync)
{
    bury(f);
    size_t n;
    *sync = f->need_sync && (f->n_live > 0 || f->stored_any);
    if (*sync)
        n = changes_all(f);
    else
        n = changes_since(f); /* with need_sync left: nothing stored, nothing to delete */
    *senders = f->out_s;
    *values = f->out_v;
    return n;
}
