/* dispatch/claim.h — the claim statement of a claim round, plain oldest-first or
 * fair between senders, and the fair scheduler's bookkeeping around it
 * (D-38, D-41, D-48..D-61). The dispatcher calls it; the leads live here,
 * one fair table per stage name (a reload keeps them; a restart forgets
 * them, D-56), and every in-flight message remembers its sender and the
 * charge it was given at claim, to be corrected or refunded.
 * Owns: the claim's parameters and the in-flight sender/charge of each
 * claimed message. Uses: dispatch/fair.h, dispatch/pool.h, lib/ (conf,
 * proto, util, pgarray), libpq. */
#ifndef PEPSI_DISPATCH_CLAIM_H
#define PEPSI_DISPATCH_CLAIM_H

#include "lib/conf.h"
#include "dispatch/pool.h"
#include "lib/proto.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

struct claimer;

/* A claim statement and its text parameters. */
struct claim_query {
    const char *sql;
    int n;
    char *params[16];
};

/* One row of a claim's answer, either statement, read by column name
 * (claim_rows; issue 13: never by position). The plain claim has no
 * window columns: they read as NULL, false, 0. Strings point into the
 * PGresult and live as long as it does. */
struct claim_row {
    int64_t id;                  /* workqueue_id */
    const char *stage;           /* stage */
    const char *sender;          /* sender_key */
    const char *window_next;     /* window_next: where the stage's window goes on, NULL: done */
    bool window_lap;             /* window_lap */
    int fifo_credit;             /* fifo_credit */
    double lead_floor;           /* lead_floor */
    bool leads_lost;             /* leads_lost: the copy of the leads is gone, resync */
};

/* The rows of a claim's answer, in order, into a new array (free() it);
 * *n their count. The fair claim's per-stage columns are on the first row
 * of each stage; rows come grouped by stage. */
struct claim_row *claim_rows(const PGresult *res, int *n);

/* A claimer for the dispatcher's [pepsi-dispatch] settings. */
struct claimer *claimer_new(const struct conf *conf);
void claimer_free(struct claimer *c);

/* Builds the claim for the stages with free capacity (caps[i] for
 * stages[i], 0: skipped). Returns how many stages it covers; the query is
 * then in *q (free with claim_query_free). claim_id identifies the claim's
 * rows (pepsi.workqueue_unclaim); the database's clock is claimed_at. */
int claimer_build(struct claimer *c, struct stage *const *stages, const int *caps, size_t n,
                  int64_t claim_id, bool release_paused, uint64_t now_ms, struct claim_query *q);
void claim_query_free(struct claim_query *q);

/* The claim returned rows[0..n): charges each row's sender at once (D-49). */
void claimer_claimed(struct claimer *c, const struct claim_row *rows, int n, uint64_t now_ms);

/* The worker answered id (claimed at stage): the charge is corrected to
 * the measured time, for fused stages too (D-50); a status 74 or 75 is a
 * message that did not run: refunded (D-51). */
void claimer_answered(struct claimer *c, const char *stage, int64_t id, const struct proto_status *st,
                      uint64_t usec, uint64_t now_ms);

/* id went back to pending without having run: refunded (D-51). */
void claimer_requeued(struct claimer *c, int64_t id, uint64_t now_ms);

/* id was struck: a hang is charged the whole MAX_RUNTIME (D-52), a crash
 * keeps its charge (it ran). */
void claimer_struck(struct claimer *c, int64_t id, bool hang, int64_t max_runtime_ms, uint64_t now_ms);

#endif
