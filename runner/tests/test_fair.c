/* test_fair.c — the lead arithmetic of fair scheduling (runner/src/dispatch/fair.c):
 * charge, correct, refund, timeout, half-life decay on a moved clock,
 * the forget threshold, new and idle senders level with the least served,
 * the lap rule of fair_level, the changes sent to the claim's copy of the
 * leads (pepsi.fair_lead) and memory that keeps every sender (D-48..D-57,
 * issue 12). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/fair.h"
#include "unit.h"

#define H 60000 /* half-life, ms */

static bool near(double got, double want)
{
    double d = got - want, tol = 1e-9 * (want < 0 ? -want : want) + 1e-6;
    return d <= tol && -d <= tol;
}

#define CHECK_NEAR(got, want, ...)                                                              \
    do {                                                                                        \
        double got_ = (got), want_ = (want);                                                    \
        if (!CHECK(near(got_, want_), __VA_ARGS__))                                             \
            printf("#   got %.9g, expected %.9g\n", got_, want_);                               \
    } while (0)

static void test_charge(void)
{
    struct fair *f = fair_new(H, 0, 1000);
    CHECK_NEAR(fair_average(f), FAIR_DEFAULT_AVG_USEC, "the average starts at %g µs until measured",
               FAIR_DEFAULT_AVG_USEC);
    CHECK_NEAR(fair_lead(f, "user:a", 1000), 0, "D-54: an unknown sender has lead 0 (level with the least served)");
    double c = fair_charge_claim(f, "user:a", 1000);
    CHECK_NEAR(c, 1000, "D-49: a claim is charged the stage's average at once, and returns the charge");
    CHECK_NEAR(fair_lead(f, "user:a", 1000), 1000, "D-49: ... the sender's lead is one average");
    fair_charge_claim(f, "user:a", 1000);
    CHECK_NEAR(fair_lead(f, "user:a", 1000), 2000, "D-49: two claims, two averages");
    CHECK_INT(fair_count(f), 1, "one sender in the table");
    CHECK_NEAR(fair_lead(f, "user:b", 1000), 0, "another sender is untouched");
    fair_free(f);
}

static void test_correct(void)
{
    struct fair *f = fair_new(H, 0, 0);
    double c = fair_charge_claim(f, "ip:192.0.2.1", 0);
    fair_correct(f, "ip:192.0.2.1", c, 5000, 0);
    CHECK_NEAR(fair_lead(f, "ip:192.0.2.1", 0), 5000, "D-50: the charge is replaced by the measured time (1000 -> 5000)");
    CHECK_NEAR(fair_average(f), 5000, "the first measurement replaces the default average");
    c = fair_charge_claim(f, "ip:192.0.2.1", 0);
    CHECK_NEAR(c, 5000, "D-49: the next claim is charged the new average");
    fair_correct(f, "ip:192.0.2.1", c, 1000, 0);
    CHECK_NEAR(fair_lead(f, "ip:192.0.2.1", 0), 6000, "D-50: a cheaper run than charged lowers the lead (10000 - 4000)");
    CHECK_NEAR(fair_average(f), 4500, "the average moves by 1/8 of the difference (5000 -> 4500)");

    fair_correct(f, "from:example.org", 0, 7000, 0);
    CHECK_NEAR(fair_lead(f, "from:example.org", 0), 7000,
               "D-50: a fused stage's time (charged 0) is added to the sender's lead at that stage");
    fair_correct(f, "null:example.org", 0, 100, 0);
    CHECK_NEAR(fair_lead(f, "null:example.org", 0), 0,
               "D-56: a fused time under one average leaves a new sender level (forgotten)");

    double avg = fair_average(f);
    fair_correct(f, "user:x", 0, -1, 0);
    fair_correct(f, "user:x", 0, 0.0 / 0.0, 0);
    CHECK_NEAR(fair_average(f), avg, "a negative or NaN measurement does not move the average");
    CHECK_NEAR(fair_lead(f, "user:x", 0), 0, "... nor any lead");
    fair_free(f);

    f = fair_new(H, 0, 0);
    fair_correct(f, "user:fast", 0, 0, 0);
    CHECK(fair_average(f) >= 1.0, "the average never drops under 1 µs (the claim needs avg > 0)");
    fair_free(f);
}

static void test_refund_timeout(void)
{
    struct fair *f = fair_new(H, 0, 0);
    double c = fair_charge_claim(f, "user:r", 0);
    fair_refund(f, "user:r", c, 0);
    CHECK_NEAR(fair_lead(f, "user:r", 0), 0, "D-51: a message requeued without running is refunded");
    CHECK_INT(fair_count(f), 0, "D-51: ... and the sender leaves the table");
    fair_charge_claim(f, "user:r", 0);
    c = fair_charge_claim(f, "user:r", 0);
    fair_refund(f, "user:r", c, 0);
    CHECK_NEAR(fair_lead(f, "user:r", 0), 1000, "D-51: a refund takes back exactly one charge");

    c = fair_charge_claim(f, "user:t", 0);
    double avg = fair_average(f);
    fair_timeout(f, "user:t", c, 300e6, 0);
    CHECK_NEAR(fair_lead(f, "user:t", 0), 300e6, "D-52: a timed-out message is charged the whole MAX_RUNTIME (300 s)");
    CHECK_NEAR(fair_average(f), avg, "D-52: a timeout does not move the stage's average");
    fair_free(f);
}

static void test_decay(void)
{
    struct fair *f = fair_new(H, 0, 5000);
    for (int i = 0; i < 8; i++)
        fair_charge_claim(f, "user:d", 5000);
    CHECK_NEAR(fair_lead(f, "user:d", 5000), 8000, "setup: lead 8000 µs");
    CHECK_NEAR(fair_lead(f, "user:d", 5000 + H / 2), 8000 / 1.4142135623730951,
               "D-55: half a half-life later the lead is 1/sqrt(2) of it");
    CHECK_NEAR(fair_lead(f, "user:d", 5000 + H), 4000, "D-55: after FAIR_HALF_LIFE the lead has halved");
    CHECK_NEAR(fair_lead(f, "user:d", 5000 + 2 * H), 2000, "D-55: after two half-lives it is a quarter");
    fair_charge_claim(f, "user:d", 5000 + 2 * H);
    CHECK_NEAR(fair_lead(f, "user:d", 5000 + 3 * H), 1500, "D-55: a charge decays from when it was made");
    CHECK_NEAR(fair_lead(f, "user:d", 5000 + 2 * H), 3000, "issue 12: a read moves nothing: at 2 half-lives the lead is 3000 again");
    fair_free(f);

    f = fair_new(H, 0, 0);
    fair_timeout(f, "user:big", 0, 1e15, 0);
    fair_timeout(f, "user:huge", 0, 1e15, 0);
    CHECK_NEAR(fair_lead(f, "user:big", 30 * H), 1e15 / 1073741824.0, "D-55: 30 half-lives divide a lead by 2^30");
    CHECK_NEAR(fair_lead(f, "user:huge", 30 * H + 64 * H), 0, "D-55: 64 half-lives without a touch forget every lead");
    fair_charge_claim(f, "user:next", 30 * H + 64 * H);
    CHECK_INT(fair_count(f), 1, "... and the next charge empties the table of them");
    fair_free(f);

    f = fair_new(0, 0, 0);
    fair_charge_claim(f, "user:z", 0);
    fair_charge_claim(f, "user:z", 0);
    CHECK_NEAR(fair_lead(f, "user:z", 0), 2000, "half-life 0: leads last until the clock moves");
    CHECK_NEAR(fair_lead(f, "user:z", 1), 0, "half-life 0: ... and are gone a millisecond later");
    fair_free(f);
}

static void test_forget(void)
{
    struct fair *f = fair_new(H, 0, 0);
    fair_timeout(f, "user:f", 0, 1500, 0);
    CHECK_NEAR(fair_lead(f, "user:f", 0), 1500, "setup: lead 1.5 messages");
    CHECK_NEAR(fair_lead(f, "user:f", H / 2), 1500 / 1.4142135623730951, "D-56: 1.06 messages are still a lead");
    CHECK_NEAR(fair_lead(f, "user:f", H), 750, "D-56: 0.75 messages round to one message: still a lead");
    CHECK_NEAR(fair_lead(f, "user:f", 2 * H), 0, "D-56: a lead worth less than one message (375 < 500, half an average) is forgotten");
    fair_charge_claim(f, "user:other", 2 * H);
    CHECK_INT(fair_count(f), 1, "D-56: ... and leaves the table at the next charge (the sweep)");
    fair_charge_claim(f, "user:f", 2 * H);
    CHECK_NEAR(fair_lead(f, "user:f", 2 * H), 1000, "D-56: a forgotten sender starts again from 0, not from 375");
    fair_free(f);
}

static void test_level(void)
{
    struct fair *f = fair_new(H, 0, 0);
    fair_timeout(f, "user:a", 0, 5000, 0);
    fair_timeout(f, "user:b", 0, 3000, 0);
    fair_level(f, 3000, FAIR_WINDOW_WHOLE, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 2000,
               "D-48: leads count from the least-served waiting sender (lead_floor 3000 subtracted)");
    CHECK_NEAR(fair_lead(f, "user:b", 0), 0, "D-48: the least-served sender has lead 0");
    CHECK_NEAR(fair_lead(f, "user:new", 0), 0, "D-54: a new sender starts level with the least served");

    /* b and c keep being served while idle stays away. */
    for (int round = 0; round < 50; round++) {
        uint64_t now = (uint64_t)round * 100;
        fair_level(f, fair_lead(f, "user:b", now) < fair_lead(f, "user:c", now) ? fair_lead(f, "user:b", now)
                                                                                 : fair_lead(f, "user:c", now),
                   FAIR_WINDOW_WHOLE, now);
        double cb = fair_charge_claim(f, "user:b", now);
        double cc = fair_charge_claim(f, "user:c", now);
        fair_correct(f, "user:b", cb, 1000, now + 50);
        fair_correct(f, "user:c", cc, 1000, now + 50);
    }
    CHECK(fair_lead(f, "user:b", 5000) <= 2000 && fair_lead(f, "user:c", 5000) <= 2000,
          "D-48: senders served alike stay within a message or two of each other, not 50 messages up");
    CHECK_NEAR(fair_lead(f, "user:idle", 5000), 0,
               "D-54: a sender that stayed idle meanwhile comes back level, not 50 messages ahead");
    fair_free(f);
}

static void test_level_lap(void)
{
    struct fair *f = fair_new(H, 0, 0);
    fair_timeout(f, "user:a", 0, 10000, 0);
    fair_level(f, 3000, FAIR_WINDOW_PART, 0);
    fair_level(f, 2000, FAIR_WINDOW_PART, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 10000, "D-60: a window that saw part of the senders levels nothing yet");
    fair_level(f, 4000, FAIR_WINDOW_LAP, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 8000, "D-60: at the lap the smallest floor since the last lap is subtracted (2000)");
    fair_level(f, 5000, FAIR_WINDOW_LAP, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 6000,
               "D-60: the lap window's floor (4000 - 2000) is carried into the next lap (min 2000)");
    fair_level(f, 0, FAIR_WINDOW_LAP, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 6000, "D-54: a window with a level sender (floor 0) levels nothing");
    fair_level(f, 1000, FAIR_WINDOW_WHOLE, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 5000, "a whole window levels at once");
    fair_level(f, -5, FAIR_WINDOW_WHOLE, 0);
    fair_level(f, 0.0 / 0.0, FAIR_WINDOW_WHOLE, 0);
    CHECK_NEAR(fair_lead(f, "user:a", 0), 5000, "a negative or NaN floor levels nothing");
    fair_free(f);

    f = fair_new(H, 0, 0);
    fair_timeout(f, "user:a", 0, 40000, 0);
    fair_level(f, 8000, FAIR_WINDOW_PART, 0);
    fair_level(f, 20000, FAIR_WINDOW_LAP, 2 * H);
    CHECK_NEAR(fair_lead(f, "user:a", 2 * H), 8000,
               "D-55: a floor kept for the lap decays with the leads: 40000 / 4 - 8000 / 4 = 8000");
    fair_free(f);
}

static void test_claimed(void)
{
    struct fair *f = fair_new(H, 0, 0);
    CHECK(fair_window_after(f) == NULL, "D-60: the first claim's window starts at the first sender (NULL)");
    CHECK_INT(fair_fifo_credit(f), -1, "D-57: the first claim passes no FIFO credit (NULL: the share rounds up)");
    fair_timeout(f, "user:a", 0, 10000, 0);
    fair_claimed(f, "user:m", false, 42, 3000, 0);
    CHECK_STR(fair_window_after(f), "user:m", "D-60: window_next is kept for the next claim's p_window_after");
    CHECK_INT(fair_fifo_credit(f), 42, "D-57: fifo_credit is kept for the next claim");
    CHECK_NEAR(fair_lead(f, "user:a", 0), 10000, "D-60: a window that is part of the senders, no lap: nothing levelled yet");
    fair_claimed(f, "user:c", true, 52, 5000, 0);
    CHECK_STR(fair_window_after(f), "user:c", "D-60: the window rotates on");
    CHECK_NEAR(fair_lead(f, "user:a", 0), 7000, "D-60: at the lap the smallest floor of the laps' windows (3000) is subtracted");
    fair_claimed(f, NULL, true, 62, 1000, 0);
    CHECK(fair_window_after(f) == NULL, "D-60: a window that held every sender starts from the first sender again");
    CHECK_NEAR(fair_lead(f, "user:a", 0), 6000, "D-48: a whole window levels by its floor at once");
    fair_claimed(f, NULL, true, 100, 0, 0);
    CHECK_INT(fair_fifo_credit(f), -1, "a credit outside 0..99 is not passed on");
    fair_free(f);
}

/* The changes of one fair_changes call, looked up by sender. */
struct sent {
    size_t n;
    bool sync;
    const char *const *s;
    const double *v;
};

static struct sent changes(struct fair *f)
{
    struct sent x;
    x.n = fair_changes(f, &x.s, &x.v, &x.sync);
    return x;
}

/* The lead the claim reads from what was sent: (v - base) / scale, 0 under
 * half an average (workqueue_claim_fair); -1 when sender was not sent. */
static double sent_lead(const struct sent *x, struct fair *f, const char *sender, uint64_t now)
{
    double base, scale;
    fair_frame(f, now, &base, &scale);
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->s[i], sender) == 0) {
            double lead = (x->v[i] - base) / scale;
            return lead < fair_average(f) / 2 ? 0 : lead;
        }
    return -1;
}

static void test_changes(void)
{
    struct fair *f = fair_new(H, 0, 0);
    struct sent x = changes(f);
    CHECK(x.n == 0 && !x.sync, "issue 12: a new table sends nothing, not even a sync (an idle runner writes nothing)");
    fair_timeout(f, "user:x", 0, 3000, 0);
    fair_timeout(f, "user:y", 0, 2000, 0);
    x = changes(f);
    CHECK(x.n == 2 && x.sync, "issue 12: the first leads go out as a sync (every lead; older copies are dropped)");
    CHECK_NEAR(sent_lead(&x, f, "user:x", 0), 3000, "issue 12: the claim reads x's lead from what was sent");
    x = changes(f);
    CHECK(x.n == 0 && !x.sync, "issue 12: nothing changed since: nothing to send");
    CHECK_NEAR(fair_lead(f, "user:x", H + H / 2), 3000 / 2.8284271247461903, "setup: x's lead decays (D-55)");
    x = changes(f);
    CHECK(x.n == 0 && !x.sync, "D-139: time passing and reading leads send nothing (decay is in base and scale)");
    double base, scale;
    fair_frame(f, H + H / 2, &base, &scale);
    CHECK_NEAR(scale, 2.8284271247461903, "D-55: the frame's scale after 1.5 half-lives is 2^1.5");

    fair_charge_claim(f, "user:z", H + H / 2);
    x = changes(f);
    CHECK_INT(x.n, 1, "issue 12: a charge sends only the charged sender");
    CHECK(!x.sync, "issue 12: ... without a sync");
    CHECK_NEAR(sent_lead(&x, f, "user:z", H + H / 2), 1000, "issue 12: ... with its lead in the frame");
    CHECK_NEAR(sent_lead(&x, f, "user:z", 2 * H + H / 2), 500, "D-55: ... which decays in SQL as in memory");

    double c = fair_charge_claim(f, "user:w", H + H / 2);
    fair_refund(f, "user:w", c, H + H / 2);
    fair_charge_claim(f, "user:z", H + H / 2);
    fair_charge_claim(f, "user:z", H + H / 2);
    x = changes(f);
    CHECK_INT(x.n, 1, "issue 12: several charges of one sender are one change; a lead given back before it was sent is not sent");
    CHECK_NEAR(sent_lead(&x, f, "user:z", H + H / 2), 3000, "issue 12: ... z's lead after three charges");

    fair_refund(f, "user:z", 3000, H + H / 2);
    CHECK_NEAR(fair_lead(f, "user:z", H + H / 2), 0, "setup: z refunded to nothing");
    x = changes(f);
    CHECK(x.n == 1 && sent_lead(&x, f, "user:z", H + H / 2) == 0,
          "D-56, issue 12: a forgotten sender the copy holds is sent once with lead 0 (deleted)");
    x = changes(f);
    CHECK_INT(x.n, 0, "issue 12: ... and only once");

    fair_resync(f);
    x = changes(f);
    CHECK(x.sync && x.n == 2, "issue 12: after fair_resync every sender with a lead is sent, as a sync (x and y)");
    CHECK_NEAR(sent_lead(&x, f, "user:y", H + H / 2), 2000 / 2.8284271247461903, "issue 12: ... each with its lead");

    fair_charge_claim(f, "user:late", 40 * H);
    x = changes(f);
    CHECK(x.sync && x.n == 1, "D-55, issue 12: a charge after 32 half-lives moves the frame: a sync of what is left");
    fair_frame(f, 40 * H, &base, &scale);
    CHECK(base == 0 && scale == 1, "issue 12: ... the new frame starts at base 0, scale 1");
    CHECK_NEAR(sent_lead(&x, f, "user:late", 40 * H), 1000, "issue 12: ... the charge is in it");
    fair_free(f);

    /* Every lead is exact after a long idle gap too: the scale stays finite. */
    f = fair_new(1000, 0, 0);
    fair_charge_claim(f, "user:a", 0);
    (void)changes(f);
    fair_frame(f, 5000000, &base, &scale);
    CHECK(scale > 1e270 && scale < 1e308, "issue 12: after thousands of half-lives the scale is huge but finite (SQL float8)");
    CHECK_NEAR(fair_lead(f, "user:a", 5000000), 0, "D-55: ... and the lead is gone");
    fair_free(f);
}

static void test_many(void)
{
    /* issue 12: 10,000 senders, each with its own lead: all kept, all sent,
     * each exact (the old table kept 1,024 and the claim saw 256). */
    char name[32];
    struct fair *f = fair_new(H, 0, 0);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "user:%05d", i);
        fair_timeout(f, name, 0, 1000.0 + i, 0);
    }
    CHECK_INT(fair_count(f), 10000, "issue 12: 10,000 senders with a lead: every one is kept");
    struct sent x = changes(f);
    CHECK(x.sync && x.n == 10000, "issue 12: ... and every one is sent to the claim's copy");
    int exact = 0;
    double base, scale;
    fair_frame(f, 0, &base, &scale);
    for (size_t i = 0; i < x.n; i++) {
        int k = atoi(x.s[i] + 5);
        exact += near((x.v[i] - base) / scale, 1000.0 + k) && near(fair_lead(f, x.s[i], 0), 1000.0 + k);
    }
    CHECK_INT(exact, 10000, "issue 12: ... each with its exact lead, in memory and as sent");
    fair_charge_claim(f, "user:09999", 0);
    x = changes(f);
    CHECK(!x.sync && x.n == 1 && strcmp(x.s[0], "user:09999") == 0,
          "issue 12: one charge among 10,000 senders sends one lead, not 10,000");
    fair_free(f);
}

static void test_bounded(void)
{
    char name[32];
    struct fair *f = fair_new(H, 8, 0);
    for (int i = 1; i <= 20; i++) {
        snprintf(name, sizeof name, "user:s%d", i);
        fair_timeout(f, name, 0, 1000.0 * i, 0);
    }
    CHECK_INT(fair_count(f), 8, "memory is bounded: at most max_senders leads are kept");
    CHECK_NEAR(fair_lead(f, "user:s20", 0), 20000, "a full table keeps the largest leads (s20)");
    CHECK_NEAR(fair_lead(f, "user:s13", 0), 13000, "... down to the 8th largest (s13)");
    CHECK_NEAR(fair_lead(f, "user:s12", 0), 0, "D-54: a smaller lead was dropped: that sender counts as level");
    fair_timeout(f, "user:small", 0, 5000, 0);
    CHECK_NEAR(fair_lead(f, "user:small", 0), 0, "a new lead smaller than all kept ones is not stored");
    fair_free(f);

    /* Many senders in and out of a small table: every kept lead stays exact. */
    f = fair_new(H, 64, 0);
    int kept = 0, exact = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 64; i++) {
            snprintf(name, sizeof name, "ip:10.%d.%d.1", round, i);
            fair_timeout(f, name, 0, 1000.0 + i, 0);
        }
        for (int i = 0; i < 64; i += 2) {
            snprintf(name, sizeof name, "ip:10.%d.%d.1", round, i);
            fair_refund(f, name, 1000.0 + i, 0);
        }
        for (int i = 1; i < 64; i += 2) {
            snprintf(name, sizeof name, "ip:10.%d.%d.1", round, i);
            kept += fair_lead(f, name, 0) > 0;
            exact += near(fair_lead(f, name, 0), 1000.0 + i);
        }
        for (int i = 1; i < 64; i += 2) {
            snprintf(name, sizeof name, "ip:10.%d.%d.1", round, i);
            fair_refund(f, name, 1000.0 + i, 0);
        }
    }
    CHECK_INT(kept, 50 * 32, "churn through a small table: every lead that was kept is found again");
    CHECK_INT(exact, 50 * 32, "churn: ... with its exact value (index deletions keep probing intact)");
    CHECK_INT(fair_count(f), 0, "churn: refunding everything empties the table");
    fair_free(f);

    f = fair_new(H, 0, 0);
    for (int i = 0; i < 50000; i++) {
        snprintf(name, sizeof name, "user:%d", i);
        fair_charge_claim(f, name, 0);
    }
    CHECK_INT(fair_count(f), 50000, "issue 12: 50,000 senders: the default table keeps them all (at most %d)",
              FAIR_DEFAULT_MAX_SENDERS);
    fair_free(f);
    fair_free(NULL);
    CHECK(1, "fair_free(NULL) is a no-op");
}

int main(void)
{
    test_charge();
    test_correct();
    test_refund_timeout();
    test_decay();
    test_forget();
    test_level();
    test_level_lap();
    test_claimed();
    test_changes();
    test_many();
    test_bounded();
    return unit_done();
}
