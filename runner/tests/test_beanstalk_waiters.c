/* test_beanstalk_waiters.c — the beanstalkd frontend's waiter index (issue
 * 17 follow-up, NOTIFY flood): a NOTIFY's tube is found without walking
 * the sessions, lists exactly the owners in a reserve that watch it, in
 * round-robin order; entries live exactly as long as a watch names them;
 * the table grows and keeps every entry; a woken link that goes is
 * forgotten by its tube. */
#include "unit.h"

#include "beanstalk/waiters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct bs_wtube *find(const struct bs_waiters *w, const char *name)
{
    return bs_waiters_find(w, name, strlen(name));
}

/* The owners on t's list, as "a,b,c" (owners are char * names). */
static const char *listed(const struct bs_wtube *t, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const struct bs_wlink *l = t ? t->head : NULL; l && n < cap; l = l->next)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", (const char *)l->owner);
    return buf;
}

static bool has_woken(const struct bs_wtube *t)
{
    return t->woken != NULL;
}

static void check_basics(void)
{
    struct bs_waiters w;
    char buf[256];
    CHECK_INT(bs_waiters_init(&w, 42), 0, "an empty index");
    CHECK(find(&w, "default") == NULL, "nobody watches default: not found");
    struct bs_wlink *a = bs_waiters_watch(&w, "default", "a");
    struct bs_wlink *b = bs_waiters_watch(&w, "default", "b");
    struct bs_wlink *c = bs_waiters_watch(&w, "default", "c");
    struct bs_wlink *a2 = bs_waiters_watch(&w, "jobs", "a");
    if (!CHECK(a && b && c && a2, "four watches made"))
        return;
    struct bs_wtube *t = find(&w, "default");
    CHECK(t != NULL && a->tube == t && b->tube == t && c->tube == t, "one entry for default, shared");
    CHECK_INT((int64_t)t->watchers, 3, "default has three watchers");
    CHECK_INT((int64_t)w.n_tubes, 2, "two tubes indexed");
    CHECK_STR(listed(t, buf, sizeof buf), "", "watching is not waiting: nobody on the list");
    CHECK(bs_waiters_find(&w, "defaultx", 7) == t, "found by length: a payload is not read past len");
    CHECK(find(&w, "defaul") == NULL && find(&w, "Default") == NULL, "no prefix, no case folding");

    bs_waiters_link(b);
    bs_waiters_link(a);
    bs_waiters_link(a);
    CHECK_STR(listed(t, buf, sizeof buf), "b,a", "waiters in the order they started; a second link is a no-op");
    CHECK_INT((int64_t)t->n_waiting, 2, "two waiting");
    CHECK_STR(listed(find(&w, "jobs"), buf, sizeof buf), "", "a waits on default only: jobs lists nobody");
    bs_waiters_link(c);
    CHECK(bs_waiters_rotate(t) == b, "rotate gives the first waiter");
    CHECK_STR(listed(t, buf, sizeof buf), "a,c,b", "and puts it last (round robin)");
    bs_waiters_unlink(c);
    bs_waiters_unlink(c);
    CHECK_STR(listed(t, buf, sizeof buf), "a,b", "unlink takes it off once");
    CHECK(t->tail == b && t->head == a, "head and tail follow");

    t->woken = a;
    bs_waiters_unwatch(&w, a);
    CHECK(!has_woken(t), "a woken link that goes is forgotten by its tube");
    CHECK_STR(listed(t, buf, sizeof buf), "b", "an unwatched waiter leaves the list");
    bs_waiters_unwatch(&w, b);
    CHECK(find(&w, "default") != NULL, "default stays while c watches it");
    bs_waiters_unwatch(&w, c);
    CHECK(find(&w, "default") == NULL, "the last watch gone: the entry is gone");
    CHECK_INT((int64_t)w.n_tubes, 1, "one tube left");
    bs_waiters_unwatch(&w, a2);
    bs_waiters_unwatch(&w, NULL);
    CHECK_INT((int64_t)w.n_tubes, 0, "empty again");
    CHECK(bs_waiters_rotate(&(struct bs_wtube){0}) == NULL, "rotate of a tube nobody waits on: NULL");
    bs_waiters_free(&w);
}

/* 5,000 tubes, each watched by its own owner: the table grows past its
 * first size and every entry is still found, with its own waiter. */
static void check_growth(void)
{
    enum { N = 5000 };
    struct bs_waiters w;
    static struct bs_wlink *links[N];
    static char names[N][16];
    CHECK_INT(bs_waiters_init(&w, 7), 0, "an index");
    size_t first = w.n_buckets;
    bool made = true;
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        links[i] = bs_waiters_watch(&w, names[i], names[i]);
        made = made && links[i] != NULL;
        if (links[i] && i % 2 == 0)
            bs_waiters_link(links[i]);
    }
    CHECK(made, "%d watches made", N);
    CHECK(w.n_buckets > first, "the table grew (%zu buckets from %zu)", w.n_buckets, first);
    int found = 0, right = 0;
    for (int i = 0; i < N; i++) {
        struct bs_wtube *t = find(&w, names[i]);
        found += t != NULL;
        right += t != NULL && (i % 2 == 0 ? t->head == links[i] && t->n_waiting == 1 : t->head == NULL);
    }
    CHECK_INT(found, N, "every tube found after growing");
    CHECK_INT(right, N, "each lists exactly its own waiter (or none)");
    for (int i = 0; i < N; i++)
        bs_waiters_unwatch(&w, links[i]);
    CHECK_INT((int64_t)w.n_tubes, 0, "all gone with their watches");
    bs_waiters_free(&w);
}

/* Two seeds place the same names differently (a client cannot aim names
 * at one bucket without knowing the seed), and both find them. */
static void check_seed(void)
{
    struct bs_waiters w1, w2;
    CHECK_INT(bs_waiters_init(&w1, 1) | bs_waiters_init(&w2, 2), 0, "two indexes");
    struct bs_wlink *l1 = bs_waiters_watch(&w1, "same", "x");
    struct bs_wlink *l2 = bs_waiters_watch(&w2, "same", "x");
    if (!CHECK(l1 && l2, "two watches made"))
        return;
    CHECK(l1->tube->hash != l2->tube->hash, "the seed changes the hash");
    CHECK(find(&w1, "same") == l1->tube && find(&w2, "same") == l2->tube, "both find it");
    bs_waiters_unwatch(&w1, l1);
    bs_waiters_unwatch(&w2, l2);
    bs_waiters_free(&w1);
    bs_waiters_free(&w2);
}

int main(void)
{
    check_basics();
    check_growth();
    check_seed();
    return unit_done();
}
