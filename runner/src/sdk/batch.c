/* sdk/batch.c — batched metadata-only stages (D-69..D-73).
 *
 * A worker of a stage that loads no body takes every id already waiting
 * on its stdin (never blocking for more, so a lone id runs at once), loads
 * them with one SELECT ... = ANY, runs the stage on each, and commits the
 * advances, finishes, pauses and failures with one call of
 * pepsi.workqueue_commit (each advance with the stages it fused, counted
 * as hops: one past [pepsi] MAX_HOPS comes back 'loop', issue 12). It
 * still answers one status line per id, in order. Host errors keep the
 * one-message path (they are rare and each computes its own backoff). */
#include "sdk/batch.h"
#include "sdk/chain.h"
#include "sdk/commit.h"

#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/proto.h"
#include "lib/util.h"

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
        if (w->core->rlen == sizeof w->core->rbuf || !stdin_ready_now())
            break;
        ssize_t k = read(STDIN_FILENO, w->core->rbuf + w->core->rlen, sizeof w->core->rbuf - w->core->rlen);
        if (k <= 0)
            break; /* EOF or an error: the next blocking read sees it */
        w->core->rlen += (size_t)k;
    }
    return (int)n;
}

/* ---- one batch ---- */

struct item {
    char idtext[24];
    bool present;                 /* running at this stage */
    bool loaded;                  /* msg holds a load result row */
    bool done;                    /* committed (or skipped) outside the batch call */
    struct pepsi_message msg;
    struct sdk_pass pass;
};

/* The batch's ids as one bigint[] literal, for the = ANY parameter. */
static char *id_array(const struct item *it, size_t n)
{
    struct pgarray a = PGARRAY_INIT;
    for (size_t i = 0; i < n; i++)
        pgarray_add_int64(&a, it[i].msg.id);
    return pgarray_finish(&a);
}

static void set_status(struct sdk_result *res, size_t n, int status)
{
    for (size_t i = 0; i < n; i++)
        res[i].status = status;
}

/* A batch that could not be loaded for an SQL error (not the connection):
 * a host error for each of its messages (D-103), each answered as such. */
static void batch_load_failed(struct pepsi_worker *w, struct item *it, size_t n, const PGresult *r,
                              struct sdk_result *res)
{
    for (size_t i = 0; i < n; i++) {
        int st = sdk_db_error(w, NULL, it[i].idtext, "cannot load the message", r);
        res[i].status = st == SDK_MOVED_ON ? 0 : st;
    }
}

/* Loads the batch in one query (D-70); 0, or -1 when it failed, with
 * every status in res: 74/75 for a lost connection or overload (D-99,
 * D-94), else what the host error of each message answers (issue 12:
 * never a 74 for an SQL error). *r keeps the rows the messages point into. */
static int load_batch(struct pepsi_worker *w, struct item *it, size_t n, PGresult **r, struct sdk_result *res)
{
    char *ids = id_array(it, n);
    const char *p[] = {ids};
    *r = sdk_exec_prepared(w, "load_many", 1, p);
    free(ids);
    if (PQresultStatus(*r) != PGRES_TUPLES_OK) {
        log_error(w->stage, "cannot load a batch: %s", pgerr_message(w->core->conn, *r));
        int status = sdk_trouble_status(w, *r);
        if (status != 0)
            set_status(res, n, status);
        else
            batch_load_failed(w, it, n, *r, res);
        PQclear(*r);
        *r = NULL;
        return -1;
    }
    for (int row = 0; row < PQntuples(*r); row++) {
        int64_t id = strtoll(PQgetvalue(*r, row, 11), NULL, 10);
        if (strcmp(PQgetvalue(*r, row, 1), "running") != 0 || strcmp(PQgetvalue(*r, row, 0), w->stage) != 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (it[i].msg.id != id || it[i].loaded)
                continue;
            it[i].loaded = it[i].present = true;
            if (sdk_message_from(w, *r, row, id, &it[i].msg) != 0) {
                struct pepsi_outcome out = {.kind = PEPSI_FAIL};
                pepsi_outcome_reason(&out, "stage %s: the message state is not a JSON object", w->stage);
                it[i].done = true;
                it[i].pass.out = out;
            }
            break;
        }
    }
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

/* Whether an item's result goes into the batch call: advances and
 * finishes (written from this stage, wherever the chain ended), pauses
 * and failures of this stage itself. Host errors and a fused stage's
 * pause or failure take the one-message path (backoff, D-115). */
static bool batched(const struct pepsi_worker *w, const struct item *it)
{
    if (!it->present || it->done || it->pass.out.settings_changes)
        return false;
    switch (it->pass.out.kind) {
    case PEPSI_ADVANCE:
    case PEPSI_FINISH:
        return true;
    case PEPSI_PAUSE:
    case PEPSI_FAIL:
        return it->pass.at == w;
    default:
        return false;
    }
}

/* The JSON result of one item for pepsi.workqueue_commit (new reference). */
static json_t *result_json(const struct item *it)
{
    const struct pepsi_outcome *o = &it->pass.out;
    const char *next = o->next ? o->next : it->pass.at->section->next;
    json_t *r = json_pack("{sI}", "id", (json_int_t)it->msg.id);
    if (r == NULL)
        return NULL;
    int rc = 0;
    switch (o->kind) {
    case PEPSI_ADVANCE:
        rc |= json_object_set_new(r, "do", json_string(next ? "advance" : "finish"));
        if (next)
            rc |= json_object_set_new(r, "next", json_string(next));
        if (next && it->pass.via.n > 0) {
            /* the fused stages: each one more hop (issue 12) */
            json_t *via = json_array();
            for (size_t k = 0; via && k < it->pass.via.n; k++)
                rc |= json_array_append_new(via, json_string(it->pass.via.stage[k]));
            rc |= via ? json_object_set_new(r, "via", via) : -1;
        }
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

/* The batch call was refused for another reason than the connection:
 * each result is committed alone, so that one bad result costs only its
 * own message. */
static void commit_one_by_one(struct pepsi_worker *w, struct item *it, size_t n, struct sdk_result *res)
{
    for (size_t i = 0; i < n; i++)
        if (batched(w, &it[i]))
            res[i].status = sdk_commit(it[i].pass.at, w->stage, it[i].idtext, &it[i].pass.out, &it[i].pass.via,
                                       &it[i].msg);
}

static void read_outcomes(struct pepsi_worker *w, PGresult *r, struct item *it, size_t n,
                          struct sdk_result *res)
{
    for (int row = 0; row < PQntuples(r); row++) {
        int64_t id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        const char *outcome = PQgetvalue(r, row, 1);
        bool ok = strcmp(outcome, "ok") == 0;
        bool loop = strcmp(outcome, "loop") == 0;
        for (size_t i = 0; i < n; i++) {
            if (it[i].msg.id != id || !batched(w, &it[i]))
                continue;
            if (loop) {
                /* The advance failed the message as a loop (issue 12). */
                const struct pepsi_outcome *o = &it[i].pass.out;
                sdk_log_loop(w, it[i].idtext, w->stage, o->next ? o->next : it[i].pass.at->section->next);
                res[i].status = SDK_LOOP;
                continue;
            }
            if (!ok)
                log_warning(w->stage, "message %s moved on before its result was written", it[i].idtext);
            /* The worker has left a failed row failed: status 1 (D-79). */
            res[i].status = ok && it[i].pass.out.kind == PEPSI_FAIL ? 1 : 0;
        }
    }
}

/* One call for every batched result (D-71). */
static void commit_batch(struct pepsi_worker *w, struct item *it, size_t n, struct sdk_result *res)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        if (!batched(w, &it[i]))
            continue;
        json_t *one = result_json(&it[i]);
        if (one == NULL || json_array_append_new(arr, one) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (arr == NULL) {
        log_error(w->stage, "cannot encode a batch of results; committing one by one");
        commit_one_by_one(w, it, n, res);
        return;
    }
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        return;
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    char hops[16];
    snprintf(hops, sizeof hops, "%d", w->core->conf.max_hops);
    const char *p[] = {w->stage, text, hops};
    PGresult *r = text ? sdk_exec_prepared(w, "commit_many", 3, p) : NULL;
    free(text);
    int trouble = r ? sdk_trouble_status(w, r) : 0;
    if (trouble != 0) {
        for (size_t i = 0; i < n; i++)
            if (batched(w, &it[i]))
                res[i].status = trouble;
    } else if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_warning(w->stage, "the batch commit was refused (%s); committing one by one",
                    r ? pgerr_message(w->core->conn, r) : "cannot encode");
        commit_one_by_one(w, it, n, res);
    } else {
        read_outcomes(w, r, it, n, res);
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
        json_decref(it[i].pass.out.state_patch);
        json_decref(it[i].pass.out.settings_changes);
    }
    free(it);
}

static struct item *make_items(struct pepsi_worker *w, const int64_t *ids, size_t n)
{
    struct item *it = xcalloc(n, sizeof *it);
    for (size_t i = 0; i < n; i++) {
        snprintf(it[i].idtext, sizeof it[i].idtext, "%lld", (long long)ids[i]);
        if (w->def->skip_load) {
            sdk_bare_message(w, ids[i], &it[i].msg);
            it[i].present = true;
        } else {
            it[i].msg.id = ids[i];
        }
    }
    return it;
}

/* Splits where needed, then the pass on every message still here. */
static void run_passes(struct pepsi_worker *w, struct item *it, size_t n, struct sdk_result *res)
{
    int level = sdk_load_level(w->def);
    for (size_t i = 0; i < n; i++) {
        if (!it[i].present) {
            log_warning(w->stage, "message %s is not running at this stage; skipping it", it[i].idtext);
            continue;
        }
        if (it[i].done) { /* a state that is not JSON */
            res[i].status = sdk_commit(w, w->stage, it[i].idtext, &it[i].pass.out, NULL, &it[i].msg);
            continue;
        }
        int st = level >= SDK_LOAD_META ? sdk_split(w, &it[i].msg, it[i].idtext) : 0;
        if (st != 0) {
            res[i].status = st == SDK_MOVED_ON ? 0 : st;
            it[i].done = true;
            continue;
        }
        sdk_pass(w, &it[i].msg, level, &it[i].pass);
        memcpy(res[i].report, it[i].pass.report, it[i].pass.n_report * sizeof res[i].report[0]);
        res[i].n_report = it[i].pass.n_report;
    }
}

void sdk_run_batch(struct pepsi_worker *w, const int64_t *ids, size_t n, struct sdk_result *res)
{
    PGresult *loaded = NULL;
    memset(res, 0, n * sizeof *res);
    int trouble = sdk_ensure_connection(w);
    if (trouble != 0) {
        set_status(res, n, trouble);
        return;
    }
    struct item *it = make_items(w, ids, n);
    if (!w->def->skip_load && load_batch(w, it, n, &loaded, res) != 0) {
        free_items(it, n);
        return;
    }
    run_passes(w, it, n, res);
    commit_batch(w, it, n, res);
    /* The rest one by one: host errors (each its own backoff) and a fused
     * stage's pause or failure (moved there first, D-115). */
    for (size_t i = 0; i < n; i++)
        if (it[i].present && !it[i].done && !batched(w, &it[i]))
            res[i].status = sdk_commit(it[i].pass.at, w->stage, it[i].idtext, &it[i].pass.out, &it[i].pass.via,
                                       &it[i].msg);
    free_items(it, n);
    PQclear(loaded);
}
