/* sdk/sdk_internal.h — the SDK's core (sdk.c), which its other files build
 * on (not for stage programs: they use sdk.h): one worker process's
 * configuration, connection and prepared statements, stdin buffer,
 * loading a message, answering the dispatcher.
 * The SDK is layered, each file using only those before it, so that it has
 * no cycle (issue 13; `make lint` checks, scripts/check-sdklib):
 *   sdk.c (this header)  <- options.c (options.h) <- chain.c (chain.h)
 *     <- commit.c (commit.h) <- batch.c (batch.h) <- worker.c (the process)
 *     <- args.c (a stage program's command line)
 * The public API is sdk/pepsi-worker.h (installed with libpepsi-worker);
 * sdk/sdk.h adds what only the runner's own stages and commands use.
 * Owns: struct sdk_core, struct pepsi_worker. Uses: sdk/sdk.h, lib/ (conf,
 * conn, overlay, pgerr, proto, schema, log, util), libpq, jansson. */
#ifndef PEPSI_SDK_SDK_INTERNAL_H
#define PEPSI_SDK_SDK_INTERNAL_H

#include "sdk/sdk.h"

#include "lib/proto.h"

#include <libpq-fe.h>
#include <sys/types.h>

/* What one worker process has once: configuration, connection, stdin. */
struct sdk_core {
    struct conf conf;                  /* file + overlay */
    PGconn *conn;
    bool prepared;                     /* conn is set up (statements are prepared on first use) */
    unsigned prepared_mask;            /* the statements of sdk.c's table prepared on conn */
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

/* Connects (or reconnects) and prepares; sets *overload when the server
 * had no slot. Returns 0 or -1. */
int sdk_connect(struct pepsi_worker *w, bool *overload);

/* 0 when there is a usable connection, else the status to answer. */
int sdk_ensure_connection(struct pepsi_worker *w);

/* Whether the section's keys are all the program's own (D-113); -1 logged. */
int sdk_check_own_keys(struct pepsi_worker *w);

/* ---- loading ---- */

enum { SDK_LOAD_NONE, SDK_LOAD_META, SDK_LOAD_BODY };

/* Fills *m from row of a load result; -1 when its state is not JSON. */
int sdk_message_from(struct pepsi_worker *w, PGresult *r, int row, int64_t id, struct pepsi_message *m);

/* The message a stage that loads nothing sees: id, stage, an empty state
 * (free m->state). */
void sdk_bare_message(struct pepsi_worker *w, int64_t id, struct pepsi_message *m);

/* Frees what sdk_message_from allocated. */
void sdk_message_free(struct pepsi_message *m);

/* ---- answering ---- */

/* Writes one status line with its report (D-24, D-26); exits when the
 * dispatcher is gone. */
void sdk_answer(struct pepsi_worker *w, int status, const struct proto_report_entry *report, size_t n);

#endif
