/* test_claim.c — the fair claim's parameters as the dispatcher builds them
 * (runner/src/dispatch/claim.c, issue 12): only the leads that changed since the
 * previous claim are sent, a sync (every lead) at the first leads, after
 * leads_lost and after a claim that went unanswered; nothing at all when
 * nothing changed (D-139). The claim's answer is a PGresult made by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/claim.h"
#include "unit.h"

/* Parameter numbers of workqueue_claim_fair in claim.c's statement. */
enum { P_STAGES, P_CAPS, P_AVG, P_LSTAGES, P_LSENDERS, P_LV, P_FIFO, P_WINDOW, P_CREDIT, P_RELEASE, P_WSIZE,
       P_ID, P_BASE, P_SCALE, P_SYNC };

/* One claimed row of the fair claim's answer. */
struct row {
    const char *id, *stage, *sender, *window_next, *lap, *credit, *floor, *lost;
};

static PGresult *answer(const struct row *rows, int n)
{
    static const char *names[] = {"workqueue_id", "stage", "sender_key", "window_next", "window_lap",
                                  "fifo_credit", "lead_floor", "leads_lost"};
    PGresAttDesc att[8];
    memset(att, 0, sizeof att);
    for (int c = 0; c < 8; c++) {
        att[c].name = (char *)names[c];
        att[c].typid = 25;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    if (!res || !PQsetResultAttrs(res, 8, att))
        abort();
    for (int i = 0; i < n; i++) {
        const char *v[] = {rows[i].id, rows[i].stage, rows[i].sender, rows[i].window_next,
                           rows[i].lap, rows[i].credit, rows[i].floor, rows[i].lost};
        for (int c = 0; c < 8; c++)
            if (!PQsetvalue(res, i, c, (char *)v[c], v[c] ? (int)strlen(v[c]) : -1))
                abort();
    }
    return res;
}

static void claimed(struct claimer *c, const struct row *rows, int n, uint64_t now)
{
    PGresult *res = answer(rows, n);
    int k;
    struct claim_row *cr = claim_rows(res, &k);
    claimer_claimed(c, cr, k, now);
    free(cr);
    PQclear(res);
}

static struct claim_query build(struct claimer *c, struct stage **stages, const int *caps, size_t n, uint64_t now)
{
    struct claim_query q;
    int k = claimer_build(c, stages, caps, n, (1LL << 40) + 1, false, now, &q);
    (void)k;
    return q;
}

/* issue 13: a claim's rows are read by column name, whatever the order:
 * the plain claim's three columns reversed, no window columns at all. */
static void test_rows_by_name(void)
{
    static const char *names[] = {"sender_key", "stage", "workqueue_id"};
    PGresAttDesc att[3];
    memset(att, 0, sizeof att);
    for (int c = 0; c < 3; c++) {
        att[c].name = (char *)names[c];
        att[c].typid = 25;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    if (!res || !PQsetResultAttrs(res, 3, att) || !PQsetvalue(res, 0, 0, "user:q", 6) ||
        !PQsetvalue(res, 0, 1, "b", 1) || !PQsetvalue(res, 0, 2, "42", 2))
        abort();
    int n;
    struct claim_row *rows = claim_rows(res, &n);
    CHECK_INT(n, 1, "issue 13: claim_rows reads every row");
    CHECK(rows[0].id == 42, "issue 13: workqueue_id is read by name, not as column 0");
    CHECK_STR(rows[0].stage, "b", "issue 13: stage is read by name");
    CHECK_STR(rows[0].sender, "user:q", "issue 13: sender_key is read by name");
    CHECK(rows[0].window_next == NULL && !rows[0].window_lap && rows[0].fifo_credit == 0 &&
              rows[0].lead_floor == 0 && !rows[0].leads_lost,
          "issue 13: the plain claim's missing window columns read as NULL, false, 0");
    free(rows);
    PQclear(res);

    struct row fair[] = {{"7", "a", "user:x", "user:w", "t", "55", "1.5", "f"}};
    res = answer(fair, 1);
    rows = claim_rows(res, &n);
    CHECK(rows[0].id == 7 && strcmp(rows[0].window_next, "user:w") == 0 && rows[0].window_lap &&
              rows[0].fifo_credit == 55 && rows[0].lead_floor == 1.5 && !rows[0].leads_lost,
          "issue 13: the fair claim's window columns are read by name");
    free(rows);
    PQclear(res);
}

int main(void)
{
    struct conf conf;
    memset(&conf, 0, sizeof conf);
    conf.fair_scheduling = true;
    conf.fair_half_life_ms = 3600000;
    conf.fair_fifo_percent = 10;
    conf.owner_slot = 3;
    struct stage sa = {.name = "a"}, sb = {.name = "b"};
    struct stage *stages[] = {&sa, &sb};
    int caps[] = {4, 0};
    struct claimer *c = claimer_new(&conf);

    struct claim_query q = build(c, stages, caps, 2, 0);
    CHECK_INT(q.n, 16, "the fair claim takes 16 parameters");
    CHECK_CONTAINS(q.sql, "p_lead_sync => $15::boolean[]", "the statement passes p_lead_sync");
    CHECK_CONTAINS(q.sql, "p_owner_slot => $16::int", "issue 14: the statement passes p_owner_slot");
    CHECK_STR(q.params[15], "3", "issue 14: the runner's OWNER_SLOT goes with every claim");
    CHECK_STR(q.params[P_STAGES], "{\"a\"}", "a stage with capacity 0 is left out");
    CHECK_STR(q.params[P_LSENDERS], "{}", "D-139: a new dispatcher sends no lead");
    CHECK_STR(q.params[P_SYNC], "{f}", "D-139: ... and no sync (an idle runner writes nothing)");
    CHECK_STR(q.params[P_BASE], "{0}", "the frame's base starts at 0");
    CHECK_STR(q.params[P_SCALE], "{1}", "... and its scale at 1");
    CHECK_STR(q.params[P_ID], "1099511627777", "the claim id names the incarnation of the kept leads");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    struct row r1[] = {{"10", "a", "user:x", NULL, "t", "50", "0", "t"},
                       {"11", "a", "user:y", NULL, "t", "50", "0", "t"}};
    claimed(c, r1, 2, 0);
    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_LSENDERS], "{\"user:x\",\"user:y\"}", "D-49: the senders charged at claim are sent");
    CHECK_STR(q.params[P_LV], "{1000,1000}", "D-49: ... each with one average (1000 µs)");
    CHECK_STR(q.params[P_LSTAGES], "{\"a\",\"a\"}", "... for their stage");
    CHECK_STR(q.params[P_SYNC], "{t}", "issue 12: the first leads go out as a sync");
    CHECK_STR(q.params[P_CREDIT], "{50}", "D-57: the FIFO credit returned is passed back");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    struct proto_status st = {.status = 0};
    claimer_answered(c, "a", 10, &st, 3000, 0);
    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_LSENDERS], "{\"user:x\"}", "D-50, issue 12: a corrected charge sends that sender only");
    CHECK_STR(q.params[P_LV], "{3000}", "D-50: ... with the measured time (3000 µs)");
    CHECK_STR(q.params[P_SYNC], "{f}", "issue 12: ... without a sync");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_LSENDERS], "{}", "D-139: nothing changed: no lead is sent");
    CHECK_STR(q.params[P_SYNC], "{f}", "D-139: ... and no sync");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    claimer_requeued(c, 11, 0);
    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_LSENDERS], "{\"user:y\"}", "D-51, D-56: y refunded to nothing is sent once more...");
    CHECK_STR(q.params[P_LV], "{0}", "... at the frame's base: lead 0, deleted from the copy");
    claim_query_free(&q);
    /* No answer to that claim (lost with the connection): the next one
     * resends the whole copy. */
    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_LSENDERS], "{\"user:x\"}", "issue 12: after an unanswered claim every lead is sent (x)...");
    CHECK_STR(q.params[P_SYNC], "{t}", "issue 12: ... as a sync");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    struct row r2[] = {{"12", "a", "user:z", "user:m", "f", "60", "0", "t"}};
    claimed(c, r2, 1, 0);
    q = build(c, stages, caps, 2, 0);
    CHECK_STR(q.params[P_SYNC], "{t}", "issue 12: leads_lost from the claim: the next claim syncs the stage");
    CHECK_STR(q.params[P_WINDOW], "{\"user:m\"}", "D-60: window_next is passed back as p_window_after");
    claim_query_free(&q);
    claimed(c, NULL, 0, 0);

    claimer_free(c);
    test_rows_by_name();
    return unit_done();
}
