/* worker/batch.c — batched metadata-only stages (D-69..D-73).
 *
 * A worker of a stage that loads no body takes every id already waiting
 * on its stdin (never blocking for more, so a lone id runs at once), loads
 * them with one SELECT ... = ANY, runs the stage on each, and commits the
 * advances, finishes, pauses and failures with one call of
 * pepsi.workqueue_commit. It still answers one status line per id, in
 * order. Host errors keep the one-message path (they are rare and each
 * computes its own backoff). */
#include "worker/sdk_internal.h"

#include "log.h"
#include "pgerr.h"
#include "proto.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* ---- reading what is already there ---- */

static bool stdin_ready_now(void)
{
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    int rc;
    while ((rc = poll(&p, 1, 0)) < 0 && errno == EINTR)
        ;
    return rc > 0 && (p.revents & POLLIN);
}

int sdk_gather_ids(struct pepsi_worker *w, int64_t *ids, size_t max)
{
    char line[64];
    size_t n = 0;
    while (n < max) {
        ssize_t len = sdk_buffered_line(w, line, sizeof line);
        if (len >= 0) {
            if (proto_parse_id(line, (size_t)len, &ids[n]) != 0) {
                log_error(w->stage, "unreadable message id \"%s\" from the dispatcher", line);
                return -1;
            }
            n++;
            continue;
        }
        /* Nothing complete in the buffer: one read if it would not block. */
        if (w->rlen == sizeof w->rbuf || !stdin_ready_now())
            break;
        ssize_t k = read(STDIN_FILENO, w->rbuf + w->rlen, sizeof w->rbuf - w->rlen);
        if (k <= 0)
            break; /* EOF or an error: the next blocking read sees it */
        w->rlen += (size_t)k;
    }
    return (int)n;
}

/* ---- one batch ---- */

struct item {
    char idtext[24];
    bool present;                 /* running at this stage, stage ran */
    bool loaded;                  /* msg holds a load result row */
    struct pepsi_message msg;
    struct pepsi_outcome out;
};

static void set_all(int *status, size_t n, int value)
{
    for (size_t i = 0; i < n; i++)
        status[i] = value;
}

/* "{1,2,3}" for the = ANY parameter. */
static char *id_array(const struct item *it, size_t n)
{
    size_t cap = n * 22 + 3, len = 1;
    char *buf = xmalloc(cap);
    buf[0] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", it[i].idtext);
    snprintf(buf + len, cap - len, "}");
    return buf;
}

/* Loads the batch in one query; 0, or the status for all when it failed.
 * *res keeps the rows the messages point into. */
static int load_batch(struct pepsi_worker *w, struct item *it, size_t n, PGresult **res)
{
    char *ids = id_array(it, n);
    const char *p[] = {ids};
    PGresult *r = sdk_exec_prepared(w, "load_many", 1, p);
    free(ids);
    int status = sdk_trouble_status(w, r);
    if (status != 0 || PQresultStatus(r) != PGRES_TUPLES_OK) {
        if (status == 0) {
            log_error(w->stage, "cannot load a batch: %s", pgerr_message(w->conn, r));
            status = EXIT_IOERR;
        }
        PQclear(r);
        return status;
    }
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t id = strtoll(PQgetvalue(r, row, 10), NULL, 10);
        for (size_t i = 0; i < n; i++) {
            if (it[i].msg.id != id || it[i].loaded)
                continue;
            bool running = strcmp(PQgetvalue(r, row, 1), "running") == 0 &&
                           strcmp(PQgetvalue(r, row, 0), w->stage) == 0;
            if (!running)
                break;
            if (sdk_message_from(w, r, row, id, &it[i].msg) != 0) {
                it[i].out.kind = PEPSI_FAIL;
                pepsi_outcome_reason(&it[i].out, "stage %s: the message state is not a JSON object",
                                     w->stage);
            }
            it[i].loaded = it[i].present = true;
            break;
        }
    }
    *res = r;
    return 0;
}

/* Wall time ms from now as ISO 8601 UTC, for a pause's "until". */
static void wall_after(char *buf, size_t cap, int64_t ms)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    int64_t us = (int64_t)tv.tv_usec + (ms % 1000) * 1000;
    time_t sec = tv.tv_sec + (time_t)(ms / 1000) + (time_t)(us / 1000000);
    us %= 1000000;
    gmtime_r(&sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%06lldZ", base, (long long)us);
}

/* The JSON result of one item for pepsi.workqueue_commit (new reference). */
static json_t *result_json(struct pepsi_worker *w, const struct item *it)
{
    const struct pepsi_outcome *o = &it->out;
    const char *next = o->next ? o->next : w->section->next;
    json_t *r = json_pack("{sI}", "id", (json_int_t)it->msg.id);
    if (r == NULL)
        return NULL;
    int rc = 0;
    switch (o->kind) {
    case PEPSI_ADVANCE:
        rc |= json_object_set_new(r, "do", json_string(next ? "advance" : "finish"));
        if (next)
            rc |= json_object_set_new(r, "next", json_string(next));
        break;
    case PEPSI_FINISH:
        rc |= json_object_set_new(r, "do", json_string("finish"));
        break;
    case PEPSI_PAUSE: {
        char until[40];
        wall_after(until, sizeof until, o->pause_ms > 0 ? o->pause_ms : 1000);
        rc |= json_object_set_new(r, "do", json_string("pause"));
        rc |= json_object_set_new(r, "until", json_string(until));
        if (o->reason[0])
            rc |= json_object_set_new(r, "reason", json_string(o->reason));
        break;
    }
    default:
        rc |= json_object_set_new(r, "do", json_string("fail"));
        rc |= json_object_set_new(r, "reason", json_string(o->reason[0] ? o->reason : "failed"));
        rc |= json_object_set_new(r, "class", json_string(o->failure_class ? o->failure_class : "permanent"));
        break;
    }
    if (o->state_patch)
        rc |= json_object_set(r, "state", o->state_patch);
    if (rc != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

static bool batched(const struct item *it)
{
    return it->present && it->out.kind != PEPSI_HOST_ERROR;
}

/* When the batch call is refused for another reason than the connection,
 * each result is committed alone, so that one bad result costs only its
 * own message. */
static void commit_one_by_one(struct pepsi_worker *w, struct item *it, size_t n, int *status)
{
    for (size_t i = 0; i < n; i++)
        if (batched(&it[i]))
            status[i] = sdk_commit(w, it[i].idtext, &it[i].out);
}

static void read_outcomes(struct pepsi_worker *w, PGresult *r, struct item *it, size_t n, int *status)
{
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        bool ok = strcmp(PQgetvalue(r, row, 1), "ok") == 0;
        for (size_t i = 0; i < n; i++) {
            if (it[i].msg.id != id || !batched(&it[i]))
                continue;
            if (!ok)
                log_warning(w->stage, "message %s moved on before its result was written", it[i].idtext);
            /* The worker has left a failed row failed: status 1 (D-79). */
            status[i] = ok && it[i].out.kind == PEPSI_FAIL ? 1 : 0;
        }
    }
}

/* One call for every batched result (D-71). */
static void commit_batch(struct pepsi_worker *w, struct item *it, size_t n, int *status)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        if (!batched(&it[i]))
            continue;
        json_t *one = result_json(w, &it[i]);
        if (one == NULL || json_array_append_new(arr, one) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (arr == NULL) {
        log_error(w->stage, "cannot encode a batch of results; committing one by one");
        commit_one_by_one(w, it, n, status);
        return;
    }
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        return;
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    const char *p[] = {w->stage, text};
    PGresult *r = text ? sdk_exec_prepared(w, "commit_many", 2, p) : NULL;
    free(text);
    int trouble = r ? sdk_trouble_status(w, r) : 0;
    if (trouble != 0) {
        for (size_t i = 0; i < n; i++)
            if (batched(&it[i]))
                status[i] = trouble;
    } else if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_warning(w->stage, "the batch commit was refused (%s); committing one by one",
                    r ? pgerr_message(w->conn, r) : "cannot encode");
        commit_one_by_one(w, it, n, status);
    } else {
        read_outcomes(w, r, it, n, status);
    }
    PQclear(r);
}

static void free_items(struct item *it, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (it[i].loaded)
            sdk_message_free(&it[i].msg);
        else
            json_decref(it[i].msg.state);
        json_decref(it[i].out.state_patch);
    }
    free(it);
}

/* Prepares the items: ids, and for a stage that loads nothing, the bare
 * message the stage sees (as the one-message path gives it). */
static struct item *make_items(struct pepsi_worker *w, const int64_t *ids, size_t n)
{
    struct item *it = xcalloc(n, sizeof *it);
    for (size_t i = 0; i < n; i++) {
        snprintf(it[i].idtext, sizeof it[i].idtext, "%lld", (long long)ids[i]);
        it[i].msg.id = ids[i];
        it[i].out.kind = PEPSI_ADVANCE;
        if (w->def->skip_load) {
            it[i].msg.stage = w->stage;
            it[i].msg.tube = it[i].msg.sender_key = "";
            it[i].msg.state = json_object();
            it[i].present = true;
        }
    }
    return it;
}

void sdk_run_batch(struct pepsi_worker *w, const int64_t *ids, size_t n, int *status)
{
    PGresult *loaded = NULL;
    set_all(status, n, 0);
    int trouble = sdk_ensure_connection(w);
    if (trouble != 0) {
        set_all(status, n, trouble);
        return;
    }
    struct item *it = make_items(w, ids, n);
    if (!w->def->skip_load && (trouble = load_batch(w, it, n, &loaded)) != 0) {
        set_all(status, n, trouble);
        free_items(it, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!it[i].present)
            log_warning(w->stage, "message %s is not running at this stage; skipping it", it[i].idtext);
        else if (it[i].out.kind != PEPSI_FAIL || it[i].out.reason[0] == '\0')
            w->def->run(w, &it[i].msg, &it[i].out);
    }
    commit_batch(w, it, n, status);
    /* Host errors: each its own backoff, through the one-message path. */
    for (size_t i = 0; i < n; i++)
        if (it[i].present && it[i].out.kind == PEPSI_HOST_ERROR)
            status[i] = sdk_commit(w, it[i].idtext, &it[i].out);
    free_items(it, n);
    PQclear(loaded);
}
