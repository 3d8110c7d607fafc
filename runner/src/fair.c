/* fair.c — one stage's sender leads (D-48..D-57); see fair.h.
 *
 * Decay without a timer. All leads of a stage halve at the same rate, so
 * they are kept in one frame: an entry stores v, and its lead now is
 * (v - vmin) / scale(now) with scale(now) = 2^((now - frame_ms) / half_life).
 * Charging x µs adds x * scale(now) to v; raising the baseline (the least
 * served waiting sender, fair_level) adds to vmin; neither touches the other
 * entries. Once a half-life has passed the frame is moved to now (every v
 * rewritten as its lead: O(n) at most once per half-life), so scale stays
 * in [1, 2) and the values small; after 64 half-lives every lead is gone.
 *
 * The table: a dense array of entries (fair_export walks only those) and
 * an open-addressing index over it (linear probing, backward-shift
 * deletion, no tombstones), both sized once for max_senders. */
#include "fair.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct fair_entry {
    char *sender;   /* owned */
    uint64_t hash;  /* of sender */
    double v;       /* lead = (v - vmin) / scale, in the current frame */
};

struct fair {
    uint64_t half_life_ms;     /* 0: leads are forgotten at once */
    size_t max;                /* entries kept at most */
    struct fair_entry *e;      /* dense, n used */
    size_t n;
    uint32_t *slot;            /* entry index + 1, 0 = free */
    size_t mask;               /* slots - 1, slots a power of 2 >= 2 * max */
    uint64_t frame_ms;         /* when scale was 1 */
    double vmin;               /* the least-served waiting sender, frame units */
    double avg;                /* µs per message */
    bool measured;             /* avg has had a measurement */
    double acc;                /* smallest lead_floor since the last lap, frame units */
    char *window_after;        /* p_window_after of the next claim, or NULL */
    int fifo_credit;           /* p_fifo_credit of the next claim, -1: NULL */
};

/* ---- arithmetic ---- */

/* 2^x for 0 <= x < 64 without libm: the integer part by doubling, the
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
    if (f->half_life_ms == 0 || now_ms <= f->frame_ms)
        return 1.0;
    return pow2((double)(now_ms - f->frame_ms) / (double)f->half_life_ms);
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

/* Entry index of sender, or -1. */
static long find(const struct fair *f, const char *sender, uint64_t h)
{
    for (size_t s = (size_t)h & f->mask; f->slot[s]; s = (s + 1) & f->mask) {
        const struct fair_entry *e = &f->e[f->slot[s] - 1];
        if (e->hash == h && strcmp(e->sender, sender) == 0)
            return (long)(f->slot[s] - 1);
    }
    return -1;
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

static void entry_remove(struct fair *f, size_t i)
{
    slot_delete(f, slot_of(f, i));
    free(f->e[i].sender);
    size_t last = f->n - 1;
    if (i != last) {
        size_t s = slot_of(f, last);
        f->e[i] = f->e[last];
        f->slot[s] = (uint32_t)(i + 1);
    }
    f->n--;
}

static void entry_add(struct fair *f, const char *sender, uint64_t h, double v)
{
    size_t i = f->n++;
    f->e[i].sender = xstrdup(sender);
    f->e[i].hash = h;
    f->e[i].v = v;
    size_t s = (size_t)h & f->mask;
    while (f->slot[s])
        s = (s + 1) & f->mask;
    f->slot[s] = (uint32_t)(i + 1);
}

static void clear(struct fair *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].sender);
    f->n = 0;
    memset(f->slot, 0, (f->mask + 1) * sizeof *f->slot);
}

/* ---- leads ---- */

static double lead_of(const struct fair *f, size_t i, double scale)
{
    return (f->e[i].v - f->vmin) / scale;
}

/* Moves the frame to now once a half-life has passed (D-55). */
static void advance(struct fair *f, uint64_t now_ms)
{
    if (now_ms <= f->frame_ms)
        return;
    uint64_t elapsed = now_ms - f->frame_ms;
    if (f->half_life_ms == 0 || elapsed >= 64 * f->half_life_ms) {
        clear(f); /* every lead has decayed to nothing */
        f->vmin = 0;
        f->acc = INFINITY;
        f->frame_ms = now_ms;
        return;
    }
    if (elapsed < f->half_life_ms)
        return;
    double s = scale_at(f, now_ms);
    for (size_t i = 0; i < f->n; i++)
        f->e[i].v = lead_of(f, i, s);
    f->vmin = 0;
    f->acc /= s;
    f->frame_ms = now_ms;
}

/* A lead "worth less than one message" is forgotten (D-56): less than half
 * an average message, i.e. one that rounds to no message. Forgetting below
 * a whole average would forget, half of the time, the lead of a sender
 * that has just been served one ordinary message (its measured time is
 * about one average), and then its older rows would win every tie with a
 * newcomer forever: measured with one busy sender and one arriving. */
static double forget_below(const struct fair *f)
{
    return f->avg * 0.5;
}

/* Drops every entry worth less than one message (D-56). */
static void sweep(struct fair *f, double scale)
{
    for (size_t i = f->n; i-- > 0;)
        if (lead_of(f, i, scale) < forget_below(f))
            entry_remove(f, i);
}

/* Makes room for a sender whose lead would be lead_usec: the forgotten
 * go first, then the smallest lead if it is smaller. False: no room, the
 * new sender stays level with the least served (the smallest error). */
static bool make_room(struct fair *f, double lead_usec, double scale)
{
    if (f->n < f->max)
        return true;
    sweep(f, scale);
    if (f->n < f->max)
        return true;
    size_t min = 0;
    for (size_t i = 1; i < f->n; i++)
        if (f->e[i].v < f->e[min].v)
            min = i;
    if (lead_of(f, min, scale) >= lead_usec)
        return false;
    entry_remove(f, min);
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
    if (i >= 0) {
        if (lead_of(f, (size_t)i, s) < forget_below(f))
            f->e[i].v = f->vmin;
        f->e[i].v += delta_usec * s;
        if (lead_of(f, (size_t)i, s) < forget_below(f))
            entry_remove(f, (size_t)i);
        return;
    }
    if (delta_usec >= forget_below(f) && make_room(f, delta_usec, s))
        entry_add(f, sender, h, f->vmin + delta_usec * s);
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
    size_t slots = 16;
    while (slots < 2 * f->max)
        slots *= 2;
    f->mask = slots - 1;
    f->slot = xcalloc(slots, sizeof *f->slot);
    f->e = xcalloc(f->max, sizeof *f->e);
    f->frame_ms = now_ms;
    f->avg = FAIR_DEFAULT_AVG_USEC;
    f->acc = INFINITY;
    f->fifo_credit = -1;
    return f;
}

void fair_free(struct fair *f)
{
    if (!f)
        return;
    clear(f);
    free(f->e);
    free(f->slot);
    free(f->window_after);
    free(f);
}

double fair_average(const struct fair *f)
{
    return f->avg;
}

size_t fair_count(const struct fair *f)
{
    return f->n;
}

double fair_lead(struct fair *f, const char *sender, uint64_t now_ms)
{
    advance(f, now_ms);
    long i = find(f, sender, hash_of(sender));
    if (i < 0)
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

size_t fair_export(struct fair *f, uint64_t now_ms, const char **senders, double *leads_usec, size_t max)
{
    advance(f, now_ms);
    double s = scale_at(f, now_ms);
    size_t out = 0;
    for (size_t i = f->n; i-- > 0;) {
        double lead = lead_of(f, i, s);
        if (lead < forget_below(f)) {
            entry_remove(f, i); /* moves an entry already seen into i */
            continue;
        }
        if (out < max) {
            senders[out] = f->e[i].sender;
            leads_usec[out++] = lead;
        }
    }
    return out;
}
