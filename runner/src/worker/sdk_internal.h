/* worker/sdk_internal.h — what the SDK's own files share (not for stage
 * programs: they use sdk.h). */
#ifndef PEPSI_WORKER_SDK_INTERNAL_H
#define PEPSI_WORKER_SDK_INTERNAL_H

#include "worker/sdk.h"

#include <sys/types.h>

struct pepsi_worker {
    const struct pepsi_stage_def *def;
    const char *stage;                 /* PEPSI_STAGE */
    struct conf conf;
    const struct stage_conf *section;
    PGconn *conn;
    bool prepared;                     /* statements prepared on conn */
    const char *conninfo;
    void *data;
    char rbuf[4096];                   /* stdin reader */
    size_t rlen;
};

#define SDK_MAX_BATCH 1024   /* the most ids one batch takes (QUEUE_LIMIT is at most 1024) */

/* Takes the next complete line already in the stdin buffer (without its
 * '\n'); its length, or -1 when there is none. */
ssize_t sdk_buffered_line(struct pepsi_worker *w, char *line, size_t cap);

/* Runs a prepared statement (see the table in sdk.c). */
PGresult *sdk_exec_prepared(struct pepsi_worker *w, const char *name, int n, const char *const *params);

/* 74 for a lost connection, 75 for overload, 0 for anything else (D-94, D-99). */
int sdk_trouble_status(struct pepsi_worker *w, const PGresult *res);

/* Commits one message's outcome in one call; returns the status to answer. */
int sdk_commit(struct pepsi_worker *w, const char *id, const struct pepsi_outcome *out);

/* Fills *m from row of a load result; -1 when its state is not JSON. */
int sdk_message_from(struct pepsi_worker *w, PGresult *r, int row, int64_t id, struct pepsi_message *m);

/* Frees what sdk_message_from allocated. */
void sdk_message_free(struct pepsi_message *m);

/* 0 when there is a usable connection, else the status to answer. */
int sdk_ensure_connection(struct pepsi_worker *w);

/* One message: load (unless the stage skips it), run, commit; the status. */
int sdk_run_message(struct pepsi_worker *w, int64_t id, const char *idtext);

/* Takes more ids already waiting on stdin, without blocking, up to max
 * (D-69). Returns how many, or -1 on an unreadable id. */
int sdk_gather_ids(struct pepsi_worker *w, int64_t *ids, size_t max);

/* A batch of ids of a stage that loads no body: one load with = ANY, the
 * stage on each, one commit call (D-70, D-71); status[i] for ids[i]. */
void sdk_run_batch(struct pepsi_worker *w, const int64_t *ids, size_t n, int *status);

#endif
