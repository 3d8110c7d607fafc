/* beanstalk/waiters.h — the frontend's index of who waits on which tube
 * (issue 17 follow-up, NOTIFY flood): a hash table from tube name to the
 * tube's entry, which lists the links of the owners (sessions) that are in
 * a reserve and watch it, so that a NOTIFY naming a tube finds its waiters
 * in O(1) plus their number, never by walking every session's watch list.
 * A link is one owner's watch of one tube: made at watch time (the only
 * allocation: a failure is answered there, OUT_OF_MEMORY), put on its
 * tube's list while the owner is in a reserve, freed at ignore or end.
 * A tube's entry lives while some link names it. No I/O, no clock, no
 * libuv: the wake-up policy is session.c's.
 * Owns: the table, the entries and the links. Uses: lib/tube.h. */
#ifndef PEPSI_BEANSTALK_WAITERS_H
#define PEPSI_BEANSTALK_WAITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bs_wlink;

/* One tube that some owner watches. */
struct bs_wtube {
    struct bs_wtube *chain;        /* the next entry of its bucket */
    uint64_t hash;
    size_t watchers;               /* links naming it; the entry is freed with the last */
    struct bs_wlink *head, *tail;  /* links of owners in a reserve, in wake order */
    size_t n_waiting;              /* links on that list */
    uint64_t last_wake_ms;         /* session.c: when a waiter was last woken for it */
    struct bs_wlink *woken;        /* session.c: the link whose owner was woken for it and has not
                                    * answered yet, NULL: none (cleared when that link goes) */
    bool again;                    /* session.c: notified again while that owner's query ran */
    char name[];
};

/* One owner's watch of one tube. */
struct bs_wlink {
    struct bs_wtube *tube;
    void *owner;
    struct bs_wlink *prev, *next;  /* on tube->head's list while linked */
    bool linked;
};

/* The table. */
struct bs_waiters {
    struct bs_wtube **buckets;
    size_t n_buckets;              /* a power of two */
    size_t n_tubes;
    uint64_t seed;                 /* mixed into the hash: clients choose the names */
};

/* An empty table whose hash is seeded with seed. 0, or -ENOMEM. */
int bs_waiters_init(struct bs_waiters *w, uint64_t seed);

/* Frees the table; every link must have been unwatched. */
void bs_waiters_free(struct bs_waiters *w);

/* A new link: owner watches name (a valid tube name), not yet waiting.
 * NULL when memory runs out (nothing changed). */
struct bs_wlink *bs_waiters_watch(struct bs_waiters *w, const char *name, void *owner);

/* Ends a watch: unlinks it if linked, frees it, and frees its tube's entry
 * with the last link. NULL is ignored. */
void bs_waiters_unwatch(struct bs_waiters *w, struct bs_wlink *l);

/* The owner starts waiting on the link's tube: appended to its list. */
void bs_waiters_link(struct bs_wlink *l);

/* The owner stops waiting on the link's tube. */
void bs_waiters_unlink(struct bs_wlink *l);

/* The tube's first waiter goes to the end of its list (round robin);
 * returns it, NULL when none waits. */
struct bs_wlink *bs_waiters_rotate(struct bs_wtube *t);

/* The entry of name (len bytes), NULL when nobody watches it. */
struct bs_wtube *bs_waiters_find(const struct bs_waiters *w, const char *name, size_t len);

#endif
