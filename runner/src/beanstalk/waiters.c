/* beanstalk/waiters.c — see waiters.h. Chained hashing over a power-of-two
 * table that doubles when it holds more entries than buckets; the hash is
 * FNV-1a 64 started from a random seed, so that clients, who choose the
 * names, cannot aim many at one bucket. */
#include "beanstalk/waiters.h"

#include "lib/tube.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_BUCKETS 256

static uint64_t hash_name(uint64_t seed, const char *s, size_t n)
{
    uint64_t h = TUBE_FNV_OFFSET_BASIS ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= TUBE_FNV_PRIME;
    }
    return h ^ (h >> 29); /* the bucket takes low bits: fold the high ones in */
}

int bs_waiters_init(struct bs_waiters *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->buckets = calloc(INITIAL_BUCKETS, sizeof *w->buckets);
    if (w->buckets == NULL)
        return -ENOMEM;
    w->n_buckets = INITIAL_BUCKETS;
    w->seed = seed;
    return 0;
}

void bs_waiters_free(struct bs_waiters *w)
{
    for (size_t i = 0; i < w->n_buckets; i++) {
        for (struct bs_wtube *t = w->buckets[i], *next; t; t = next) {
            next = t->chain;
            free(t);
        }
    }
    free(w->buckets);
    memset(w, 0, sizeof *w);
}

struct bs_wtube *bs_waiters_find(const struct bs_waiters *w, const char *name, size_t len)
{
    if (w->n_buckets == 0)
        return NULL;
    uint64_t h = hash_name(w->seed, name, len);
    for (struct bs_wtube *t = w->buckets[h & (w->n_buckets - 1)]; t; t = t->chain)
        if (t->hash == h && strlen(t->name) == len && memcmp(t->name, name, len) == 0)
            return t;
    return NULL;
}

/* Doubles the table. 0, or -ENOMEM (the table unchanged). */
static int grow(struct bs_waiters *w)
{
    size_t n = w->n_buckets * 2;
    struct bs_wtube **b = calloc(n, sizeof *b);
    if (b == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_buckets; i++) {
        for (struct bs_wtube *t = w->buckets[i], *next; t; t = next) {
            next = t->chain;
            t->chain = b[t->hash & (n - 1)];
            b[t->hash & (n - 1)] = t;
        }
    }
    free(w->buckets);
    w->buckets = b;
    w->n_buckets = n;
    return 0;
}

/* The entry of name, made when new. NULL: out of memory. */
static struct bs_wtube *tube_get(struct bs_waiters *w, const char *name)
{
    size_t len = strlen(name);
    struct bs_wtube *t = bs_waiters_find(w, name, len);
    if (t != NULL)
        return t;
    if (w->n_tubes >= w->n_buckets && grow(w) != 0)
        return NULL;
    t = calloc(1, sizeof *t + len + 1);
    if (t == NULL)
        return NULL;
    memcpy(t->name, name, len + 1);
    t->hash = hash_name(w->seed, name, len);
    t->chain = w->buckets[t->hash & (w->n_buckets - 1)];
    w->buckets[t->hash & (w->n_buckets - 1)] = t;
    w->n_tubes++;
    return t;
}

static void tube_drop(struct bs_waiters *w, struct bs_wtube *t)
{
    struct bs_wtube **p = &w->buckets[t->hash & (w->n_buckets - 1)];
    while (*p != t)
        p = &(*p)->chain;
    *p = t->chain;
    w->n_tubes--;
    free(t);
}

struct bs_wlink *bs_waiters_watch(struct bs_waiters *w, const char *name, void *owner)
{
    struct bs_wlink *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    struct bs_wtube *t = tube_get(w, name);
    if (t == NULL) {
        free(l);
        return NULL;
    }
    t->watchers++;
    l->tube = t;
    l->owner = owner;
    return l;
}

void bs_waiters_unwatch(struct bs_waiters *w, struct bs_wlink *l)
{
    if (l == NULL)
        return;
    bs_waiters_unlink(l);
    struct bs_wtube *t = l->tube;
    if (t->woken == l)
        t->woken = NULL;
    free(l);
    if (--t->watchers == 0)
        tube_drop(w, t);
}

void bs_waiters_link(struct bs_wlink *l)
{
    if (l->linked)
        return;
    struct bs_wtube *t = l->tube;
    l->prev = t->tail;
    l->next = NULL;
    if (t->tail)
        t->tail->next = l;
    else
        t->head = l;
    t->tail = l;
    t->n_waiting++;
    l->linked = true;
}

void bs_waiters_unlink(struct bs_wlink *l)
{
    if (!l->linked)
        return;
    struct bs_wtube *t = l->tube;
    if (l->prev)
        l->prev->next = l->next;
    else
        t->head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        t->tail = l->prev;
    l->prev = l->next = NULL;
    t->n_waiting--;
    l->linked = false;
}

struct bs_wlink *bs_waiters_rotate(struct bs_wtube *t)
{
    struct bs_wlink *l = t->head;
    if (l == NULL)
        return NULL;
    bs_waiters_unlink(l);
    bs_waiters_link(l);
    return l;
}
