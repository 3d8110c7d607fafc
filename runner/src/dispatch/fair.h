/* dispatch/fair.h — fair scheduling between senders: one stage's sender leads
 * (D-48..D-57), kept in memory by the dispatcher and copied, as they
 * change, to the claiming session's pg_temp.fair_lead (issue 19), where
 * pepsi.workqueue_claim_fair reads the leads of its window's senders
 * (issue 12; docs/fair-scheduling.md). Pure:
 * no I/O, no clock of its own (every call takes now_ms from the caller's
 * monotonic clock), no libuv, no libpq.
 *
 * A sender's lead is the worker time (µs) its messages have used at this
 * stage beyond the least-served waiting sender (D-48). The dispatcher, per
 * stage:
 *   - claim round: fair_average(), fair_frame(), fair_changes(),
 *     fair_window_after() and fair_fifo_credit() give the stage's
 *     p_avg_usec, p_lead_base, p_lead_scale, its part of the lead arrays
 *     with p_lead_sync, p_window_after and p_fifo_credit; when the claim
 *     returns rows of the stage, fair_claimed() with the stage's per-stage
 *     columns (once, before the charges), then fair_charge_claim() for every
 *     row, keeping the returned amount with the in-flight message (D-49);
 *     fair_resync() when the claim said leads_lost, or when a claim that
 *     carried changes was not answered;
 *   - the worker's answer: fair_correct() with the measured time, for the
 *     claimed stage with the charge kept, and for each other stage of a
 *     fused report with charged 0 (D-50);
 *   - requeued without having run: fair_refund() (D-51);
 *   - timed out: fair_timeout() charges MAX_RUNTIME (D-52).
 * Leads decay by half every half-life, computed exactly from the clock
 * (D-55): a lead is (v - base) / scale(now), so time moves no value; a
 * lead under half an average message counts as 0 and is forgotten (D-54,
 * D-56). Every sender with a lead is kept, up to max_senders (a memory
 * bound far above any real count of active senders). A restart forgets
 * all. Only changes (charges, corrections, forgetting on a charge path)
 * produce anything to send: reading leads, and time passing, never do, so
 * an idle dispatcher writes nothing (D-139).
 * Owns: the leads of one stage. Uses: lib/util.h only. */
#ifndef PEPSI_DISPATCH_FAIR_H
#define PEPSI_DISPATCH_FAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The average time per message before the first measurement, µs. */
#define FAIR_DEFAULT_AVG_USEC 1000.0
/* Senders with a lead kept per stage at most when fair_new gets
 * max_senders 0 (memory grows with the senders, about 64 bytes each). */
#define FAIR_DEFAULT_MAX_SENDERS 1048576
/* Weight of a new measurement in the running average (1/8). */
#define FAIR_AVG_WEIGHT 0.125

/* What the window of a claim (workqueue_claim_fair) covered: all waiting
 * senders (window_next NULL), a part that reached the end of the sender
 * order (window_lap), or a part that did not. */
enum fair_window { FAIR_WINDOW_PART, FAIR_WINDOW_LAP, FAIR_WINDOW_WHOLE };

/* One stage's leads. */
struct fair;

/* A stage's table: leads halve every half_life_ms (0: forgotten at once),
 * at most max_senders kept (0: FAIR_DEFAULT_MAX_SENDERS). */
struct fair *fair_new(uint64_t half_life_ms, size_t max_senders, uint64_t now_ms);
/* Frees the table and its sender names; NULL is ignored. */
void fair_free(struct fair *f);

/* The stage's running average time per message, µs (> 0): p_avg_usec. */
double fair_average(const struct fair *f);
/* Senders with a lead in the table (some may have decayed under half an
 * average since the last charge: they count as 0 and go at the next sweep). */
size_t fair_count(const struct fair *f);
/* The sender's lead now, µs; 0 for a sender level with the least served. */
double fair_lead(struct fair *f, const char *sender, uint64_t now_ms);

/* A row of sender was claimed: charges the average at once (D-49) and
 * returns the amount, which fair_correct/refund/timeout take back. */
double fair_charge_claim(struct fair *f, const char *sender, uint64_t now_ms);
/* The worker reported measured_usec for a message charged charged_usec
 * here (0 for a stage fused into another's pass): the lead gets the
 * difference, the average the measurement (D-50). */
void fair_correct(struct fair *f, const char *sender, double charged_usec, double measured_usec,
                  uint64_t now_ms);
/* The message went back to pending without having run: takes back the
 * charge (D-51). */
void fair_refund(struct fair *f, const char *sender, double charged_usec, uint64_t now_ms);
/* The message timed out: charged the whole max_runtime_usec instead
 * (D-52); the average is not touched (it is not a typical message). */
void fair_timeout(struct fair *f, const char *sender, double charged_usec, double max_runtime_usec,
                  uint64_t now_ms);
/* After a claim that returned rows of this stage: its lead_floor and what
 * its window covered. The least-served waiting sender's lead is subtracted
 * from every lead (D-48): at once for a whole window, else the smallest
 * floor seen from one lap to the next, at the lap (D-54, D-60). */
void fair_level(struct fair *f, double lead_floor_usec, enum fair_window window, uint64_t now_ms);

/* The stage's p_window_after for the next claim: the window_next of the
 * last claim that returned rows of it; NULL (SQL NULL) before that or when
 * that window held every waiting sender. Valid until the next fair_claimed. */
const char *fair_window_after(const struct fair *f);
/* The stage's p_fifo_credit for the next claim, 0..99; -1 (pass SQL NULL,
 * the FIFO share rounds up) before the first claim that returned rows. */
int fair_fifo_credit(const struct fair *f);
/* A claim returned rows of this stage, with these per-stage columns
 * (window_next NULL when SQL NULL): keeps window and credit for the next
 * claim and levels the leads with lead_floor (fair_level: whole window when
 * window_next is NULL, else a lap or a part). Call before the charges. */
void fair_claimed(struct fair *f, const char *window_next, bool window_lap, int fifo_credit,
                  double lead_floor_usec, uint64_t now_ms);

/* The stage's frame now: every lead is (v - *base) / *scale, v as sent by
 * fair_changes (p_lead_base, p_lead_scale). scale is finite, >= 1. */
void fair_frame(const struct fair *f, uint64_t now_ms, double *base, double *scale);

/* The leads to send with the next claim of this stage: the senders whose
 * v changed since the last call (a forgotten sender with v = base, lead 0:
 * delete), or, when *sync is set, every sender with a lead (p_lead_sync:
 * the copy keeps only these). Writes pointers to the names and values
 * into *senders and *values (owned by f, valid until the next call on f)
 * and returns how many. Nothing changed: 0 and no sync. */
size_t fair_changes(struct fair *f, const char *const **senders, const double **values, bool *sync);

/* The copy of the leads cannot be trusted (the claim said leads_lost, or
 * a claim that carried changes went unanswered): the next fair_changes
 * sends every lead with sync. */
void fair_resync(struct fair *f);

#endif
