/* sdk/commit.h — committing what a pass decided (commit.c): one call of
 * the outcome's function (two when a fused stage pauses or fails, D-115),
 * the split of a message whose recipients' overrides differ (D-124), and
 * what a failed statement means (74, 75, a host error, moved on).
 * Owns: nothing kept. Uses: sdk/chain.h (struct sdk_via), sdk/options.h,
 * sdk/sdk_internal.h (the core), lib/ (pgerr, log, util), libpq. */
#ifndef PEPSI_SDK_COMMIT_H
#define PEPSI_SDK_COMMIT_H

#include "sdk/chain.h"
#include "sdk/sdk_internal.h"

#include <libpq-fe.h>
#include <stddef.h>

#define SDK_MOVED_ON (-1)                   /* the row was no longer running here: answer 0 */
#define SDK_LOOP 1                          /* the advance failed the message as a loop (issue 12) */

/* 74 for a lost connection, 75 for overload, 0 for anything else (D-94, D-99). */
int sdk_trouble_status(struct pepsi_worker *w, const PGresult *res);

/* A statement about message id (m: loaded, or NULL) failed: 74/75 for a
 * lost connection or overload (D-94, D-99); any other SQL error is a host
 * error of w's stage, recorded with backoff and MAX_LIFETIME (D-103,
 * D-104), "what" saying what failed. Returns the status to answer: 0
 * (paused or bounced), 1 (failed: retries exhausted, D-80), 74, 75, or
 * SDK_MOVED_ON. */
int sdk_db_error(struct pepsi_worker *w, const struct pepsi_message *m, const char *id, const char *what,
                 const PGresult *res);

/* Commits the outcome stage s decided for a message whose row is at
 * row_stage, in one call (two when a fused stage pauses or fails, D-115);
 * via: the stages the pass fused (NULL: none), which the advance counts
 * as hops. Returns the status to answer: SDK_LOOP (non-zero) when the
 * database failed the message as a loop instead (issue 12). */
int sdk_commit(struct pepsi_worker *s, const char *row_stage, const char *id,
               const struct pepsi_outcome *out, const struct sdk_via *via, const struct pepsi_message *m);

/* The text[] literal of via->stage[0..n), e.g. {"b","c"} (lib/pgarray;
 * the caller frees it), or NULL when n is 0: an advance's p_via (issue 12). */
char *sdk_via_text(const struct sdk_via *via, size_t n);

/* Logs that message id failed as a loop at row_stage on its way to next. */
void sdk_log_loop(struct pepsi_worker *s, const char *id, const char *row_stage, const char *next);

/* Splits the message when its recipients' overrides for w's stage differ
 * (D-124): one call; m keeps the first group. 0 (run the stage),
 * SDK_MOVED_ON (answer 0: moved on, or a host error was recorded), or the
 * status to answer (1, 74, 75). */
int sdk_split(struct pepsi_worker *w, struct pepsi_message *m, const char *id);

#endif
