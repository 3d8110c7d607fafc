/* sdk/sdk_internal.h — what the SDK's own files share (not for stage
 * programs: they use sdk.h). */
#ifndef PEPSI_SDK_SDK_INTERNAL_H
#define PEPSI_SDK_SDK_INTERNAL_H

#include "sdk/sdk.h"

#include "lib/proto.h"

#include <sys/types.h>

/* What one worker process has once: configuration, connection, stdin. */
struct sdk_core {
    struct conf conf;                  /* file + overlay */
    PGconn *conn;
    bool prepared;                     /* statements prepared on conn */
    char *conninfo;
    char rbuf[4096];                   /* stdin reader */
    size_t rlen;
    struct pepsi_worker *fused;        /* stages fused into this one, set up on first use */
    const char *fused_by;              /* the worker's own stage, for log lines */
};

/* One stage as this process runs it: the worker's own, or a successor
 * fused into its passes (D-126). */
struct pepsi_worker {
    const struct pepsi_stage_def *def;
    const char *stage;                 /* the [stage-*] name */
    const struct stage_conf *section;
    void *data;                        /* the stage's own, from setup */
    struct sdk_core *core;
    struct pepsi_worker *next;         /* in core->fused */
    bool usable;                       /* set up without error */
};

#define SDK_MAX_BATCH 1024   /* the most ids one batch takes (QUEUE_LIMIT is at most 1024) */

/* Takes the next complete line already in the stdin buffer (without its
 * '\n'); its length, or -1 when there is none. */
ssize_t sdk_buffered_line(struct pepsi_worker *w, char *line, size_t cap);

/* Runs a prepared statement (see the table in sdk.c). */
PGresult *sdk_exec_prepared(struct pepsi_worker *w, const char *name, int n, const char *const *params);

/* 0 when there is a usable connection, else the status to answer. */
int sdk_ensure_connection(struct pepsi_worker *w);

/* Whether the section's keys are all the program's own (D-113); -1 logged. */
int sdk_check_own_keys(struct pepsi_worker *w);

/* ---- loading ---- */

enum { SDK_LOAD_NONE, SDK_LOAD_META, SDK_LOAD_BODY };

/* What a stage needs loaded: nothing, the metadata, or the body too. */
int sdk_load_level(const struct pepsi_stage_def *d);

/* Fills *m from row of a load result; -1 when its state is not JSON. */
int sdk_message_from(struct pepsi_worker *w, PGresult *r, int row, int64_t id, struct pepsi_message *m);

/* The message a stage that loads nothing sees: id, stage, an empty state
 * (free m->state). */
void sdk_bare_message(struct pepsi_worker *w, int64_t id, struct pepsi_message *m);

/* Frees what sdk_message_from allocated. */
void sdk_message_free(struct pepsi_message *m);

/* ---- per-address settings (options.c) ---- */

/* Whether the message is of local origin (state.local_origin). */
bool sdk_local_origin(const struct pepsi_message *m);

/* The overrides of stage for the message's correspondent, or NULL. */
json_t *sdk_message_overrides(const struct pepsi_message *m, const char *stage);

/* 0 when the message's overrides for w's stage are usable, else -1 with
 * why: a permanent error of that message (D-114). */
int sdk_check_overrides(const struct pepsi_worker *w, const struct pepsi_message *m, char *why, size_t cap);

/* The recipients grouped by their overrides for stage when they differ
 * (a JSON array of arrays, new reference), else NULL (D-124, D-125). */
json_t *sdk_split_groups(const struct pepsi_message *m, const char *stage);

/* ---- a pass (chain.c) ---- */

#define SDK_FUSION_DEPTH 8                  /* a longer chain is ended by a committed hop (D-134) */
#define SDK_REPORT_MAX (SDK_FUSION_DEPTH + 1)

/* The stages a pass fused behind the worker's own, in order: each is one
 * more hop of the message (a chain of k stages is k hops, issue 12). */
struct sdk_via {
    const char *stage[SDK_FUSION_DEPTH];
    size_t n;
};

struct sdk_pass {
    struct pepsi_outcome out;               /* what the last stage run decided */
    struct pepsi_worker *at;                /* that stage */
    struct sdk_via via;                     /* the fused stages run after the worker's own */
    json_t *patch;                          /* state patches of the stages before it */
    struct proto_report_entry report[SDK_REPORT_MAX];
    size_t n_report;
};

/* Runs w's stage on m, then every successor that may be fused (D-126);
 * level is what was loaded (SDK_LOAD_*). */
void sdk_pass(struct pepsi_worker *w, struct pepsi_message *m, int level, struct sdk_pass *p);

/* Tears down the fused stages' contexts. */
void sdk_fusion_free(struct sdk_core *core);

/* ---- committing (commit.c) ---- */

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

/* The text[] literal of via->stage[0..n), e.g. {"b","c"}, in buf (of
 * cap bytes; SDK_FUSION_DEPTH quoted stage names of at most 63 bytes fit
 * in 548), or NULL when n is 0: an advance's p_via (issue 12). */
const char *sdk_via_text(const struct sdk_via *via, size_t n, char *buf, size_t cap);

/* Logs that message id failed as a loop at row_stage on its way to next. */
void sdk_log_loop(struct pepsi_worker *s, const char *id, const char *row_stage, const char *next);

/* Splits the message when its recipients' overrides for w's stage differ
 * (D-124): one call; m keeps the first group. 0 (run the stage),
 * SDK_MOVED_ON (answer 0: moved on, or a host error was recorded), or the
 * status to answer (1, 74, 75). */
int sdk_split(struct pepsi_worker *w, struct pepsi_message *m, const char *id);

/* ---- answering ---- */

/* What a message gets on its status line. */
struct sdk_result {
    int status;
    struct proto_report_entry report[SDK_REPORT_MAX];
    size_t n_report;
};

/* Writes one status line with its report (D-24, D-26); exits when the
 * dispatcher is gone. */
void sdk_answer(struct pepsi_worker *w, int status, const struct proto_report_entry *report, size_t n);

/* One message: load (unless the stage skips it), split, the pass, commit. */
void sdk_run_message(struct pepsi_worker *w, int64_t id, const char *idtext, struct sdk_result *res);

/* Takes more ids already waiting on stdin, without blocking, up to max
 * (D-69). Returns how many, or -1 on an unreadable id. */
int sdk_gather_ids(struct pepsi_worker *w, int64_t *ids, size_t max);

/* A batch of ids of a stage that loads no body: one load with = ANY, the
 * pass on each, one commit call (D-70, D-71); res[i] for ids[i]. */
void sdk_run_batch(struct pepsi_worker *w, const int64_t *ids, size_t n, struct sdk_result *res);

#endif
