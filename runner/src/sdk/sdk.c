/* sdk/sdk.c — see sdk_internal.h (the core) and pepsi-worker.h (the
 * accessors, the outcome's reason, the stage's log lines). */
#include "sdk/sdk.h"
#include "sdk/sdk_internal.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"
#include "lib/proto.h"
#include "lib/schema.h"
#include "lib/util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *pepsi_worker_stage(const struct pepsi_worker *w) { return w->stage; }
const struct stage_conf *pepsi_worker_section(const struct pepsi_worker *w) { return w->section; }
const struct conf *pepsi_worker_conf(const struct pepsi_worker *w) { return &w->core->conf; }
void *pepsi_worker_data(const struct pepsi_worker *w) { return w->data; }
void pepsi_worker_set_data(struct pepsi_worker *w, void *data) { w->data = data; }

void pepsi_outcome_reason(struct pepsi_outcome *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
}

/* The public levels are lib/log.h's, in the same order. */
_Static_assert((int)PEPSI_LOG_ERROR == (int)PLOG_ERROR && (int)PEPSI_LOG_WARNING == (int)PLOG_WARNING &&
                   (int)PEPSI_LOG_NOTICE == (int)PLOG_NOTICE && (int)PEPSI_LOG_INFO == (int)PLOG_INFO &&
                   (int)PEPSI_LOG_DEBUG == (int)PLOG_DEBUG,
               "pepsi_log_level follows log_level");

int pepsi_worker_api_version(void) { return PEPSI_WORKER_API_VERSION; }

void pepsi_log(const struct pepsi_worker *w, enum pepsi_log_level level, const char *fmt, ...)
{
    char text[1536];
    va_list ap;
    if ((unsigned)level > (unsigned)PEPSI_LOG_DEBUG)
        level = PEPSI_LOG_ERROR;
    if (!log_enabled((enum log_level)level))
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_msg((enum log_level)level, w && w->stage ? w->stage : "worker", "%s", text);
}

/* ---- statements ---- */

/* The metadata of a message and, in the same query, the per-address
 * settings that apply to it (D-123). Column numbers: see sdk_message_from. */
#define LOAD_META "select w.stage, w.status, w.tube, w.sender_key, w.envelope_sender," \
    " array_to_json(w.recipients), w.header_from, w.subject, w.state, w.arrived_at," \
    " pepsi.settings_for(w.state, w.envelope_sender, w.recipients)"
#define LOAD_SQL LOAD_META " from pepsi.workqueue w where w.workqueue_id = $1"
#define LOAD_BODY_SQL LOAD_META ", b.body_id is not null, b.headers, b.body from pepsi.workqueue w" \
    " left join pepsi.workqueue_body b on b.body_id = w.body_id where w.workqueue_id = $1"

static const struct {
    const char *name;
    const char *sql;
} statements[] = {
    {"load", LOAD_SQL},
    {"load_body", LOAD_BODY_SQL},
    {"load_many", LOAD_META ", w.workqueue_id from pepsi.workqueue w where w.workqueue_id = any($1::bigint[])"},
    {"commit_many", "select workqueue_id, outcome from pepsi.workqueue_commit($1, $2::jsonb, $3::int)"},
    {"advance", "select pepsi.workqueue_advance($1::bigint, $2, $3, $4::jsonb, $5::text[], $6::int)"},
    {"finish", "select pepsi.workqueue_finish($1::bigint, $2)"},
    {"pause", "select pepsi.workqueue_pause($1::bigint, $2, now() + $3::bigint * interval '1 millisecond',"
              " $4, $5::jsonb)"},
    {"fail", "select pepsi.workqueue_fail($1::bigint, $2, $3, $4, $5::jsonb)"},
    {"host_error", "select pepsi.workqueue_host_error($1::bigint, $2, $3,"
                   " $4::bigint * interval '1 millisecond', $5)"},
    {"move", "select pepsi.workqueue_move($1::bigint, $2, $3, $4::text[], $5::int)"},
    /* a fused stage's pause, failure or host error: the move and the
     * result in one statement (issue 13); until and lifetime in ms, read
     * on the server's clock */
    {"commit_fused", "select workqueue_id, outcome from pepsi.workqueue_commit($1, jsonb_build_array($2::jsonb"
                     " || jsonb_strip_nulls(jsonb_build_object('until', now() + $4::bigint * interval '1 millisecond',"
                     " 'lifetime', $5::bigint * interval '1 millisecond'))), $3::int)"},
    {"split", "select pepsi.workqueue_split($1::bigint, $2, $3::jsonb)"},
    {"settings_apply", "select outcome from pepsi.settings_apply($1::bigint, $2, $3, $4, $5::jsonb, $6::text[],"
                       " $7::int)"},
};

#define N_STATEMENTS (sizeof statements / sizeof statements[0])
_Static_assert(N_STATEMENTS <= 32, "sdk_core.prepared_mask has a bit for each statement");

int sdk_connect(struct pepsi_worker *w, bool *overload)
{
    char app[96];
    if (w->core->conn) {
        PQfinish(w->core->conn);
        w->core->conn = NULL;
    }
    w->core->prepared = false;
    w->core->prepared_mask = 0;
    snprintf(app, sizeof app, "pepsi-stage-%s", w->stage);
    w->core->conn = conn_open(w->core->conninfo, w->core->conf.connect_timeout_ms, app, w->stage, overload);
    if (w->core->conn == NULL)
        return -1;
    /* Concurrent workers commit as a group; a lost advance is a repeated
     * stage, never a lost message (D-77). */
    if (!w->core->conf.worker_synchronous_commit &&
        conn_exec(w->core->conn, "set synchronous_commit = off", w->stage) != 0)
        return -1;
    w->core->prepared = true;
    return 0;
}

/* A statement is prepared on its first use on a connection, not all at
 * start: a worker that only ever advances does not pay a round trip and a
 * parse for each of the others at every start (issue 19). A failed
 * prepare is returned as the statement's result, for the caller's usual
 * error handling. */
PGresult *sdk_exec_prepared(struct pepsi_worker *w, const char *name, int n, const char *const *params)
{
    for (size_t i = 0; i < N_STATEMENTS; i++) {
        if (strcmp(statements[i].name, name) != 0)
            continue;
        if (!(w->core->prepared_mask & (1u << i))) {
            PGresult *r = PQprepare(w->core->conn, name, statements[i].sql, 0, NULL);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                log_error(w->stage, "cannot prepare \"%s\": %s", name, pgerr_message(w->core->conn, r));
                return r;
            }
            PQclear(r);
            w->core->prepared_mask |= 1u << i;
        }
        break;
    }
    return PQexecPrepared(w->core->conn, name, n, params, NULL, NULL, 0);
}

/* ---- answers ---- */

void sdk_answer(struct pepsi_worker *w, int status, const struct proto_report_entry *report, size_t n)
{
    char line[1024];
    size_t len = proto_format_status(line, sizeof line, status, report, n);
    if (len == 0)
        len = proto_format_status(line, sizeof line, status, NULL, 0);
    if (util_write_all(STDOUT_FILENO, line, len) != 0) {
        log_error(w->stage, "cannot write to the dispatcher: %s", strerror(errno));
        exit(1);
    }
}

/* ---- loading ---- */

static char **recipients_of(const char *json, size_t *n)
{
    json_error_t err;
    json_t *arr = json ? json_loads(json, 0, &err) : NULL;
    *n = 0;
    if (!json_is_array(arr)) {
        json_decref(arr);
        return NULL;
    }
    char **out = xcalloc(json_array_size(arr) + 1, sizeof *out);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v))
            out[(*n)++] = xstrdup(json_string_value(v));
    }
    json_decref(arr);
    return out;
}

static const char *value_or_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* Fills *m from the load result; the caller frees with message_free.
 * Returns 0, or -1 when the state is not JSON. */
int sdk_message_from(struct pepsi_worker *w, PGresult *r, int row, int64_t id,
                        struct pepsi_message *m)
{
    json_error_t err;
    memset(m, 0, sizeof *m);
    m->id = id;
    m->stage = PQgetvalue(r, row, 0);
    m->tube = PQgetvalue(r, row, 2);
    m->sender_key = PQgetvalue(r, row, 3);
    m->envelope_sender = value_or_null(r, row, 4);
    m->recipients = recipients_of(value_or_null(r, row, 5), &m->n_recipients);
    m->header_from = value_or_null(r, row, 6);
    m->subject = value_or_null(r, row, 7);
    m->state = json_loads(PQgetvalue(r, row, 8), 0, &err);
    m->arrived_at = PQgetvalue(r, row, 9);
    m->overrides = PQgetisnull(r, row, 10) ? NULL : json_loads(PQgetvalue(r, row, 10), 0, &err);
    if (w->def->loads_body && strcmp(PQgetvalue(r, row, 11), "t") == 0) {
        m->has_body = true;
        m->headers = value_or_null(r, row, 12);
        if (!PQgetisnull(r, row, 13))
            m->body = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, 13), &m->body_len);
    }
    return json_is_object(m->state) ? 0 : -1;
}

void sdk_message_free(struct pepsi_message *m)
{
    for (size_t i = 0; i < m->n_recipients; i++)
        free(m->recipients[i]);
    free(m->recipients);
    json_decref(m->state);
    json_decref(m->overrides);
    if (m->body)
        PQfreemem((void *)m->body);
}

/* ---- one message ---- */

/* Makes sure there is a usable connection; the status to answer when not. */
int sdk_ensure_connection(struct pepsi_worker *w)
{
    bool overload;
    if (w->core->conn && PQstatus(w->core->conn) == CONNECTION_OK && w->core->prepared)
        return 0;
    if (sdk_connect(w, &overload) == 0)
        return 0;
    return overload ? EXIT_TEMPFAIL : EXIT_IOERR;
}

void sdk_bare_message(struct pepsi_worker *w, int64_t id, struct pepsi_message *m)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->stage = w->stage;
    m->tube = m->sender_key = "";
    m->state = json_object();
}

/* ---- reading ids ---- */

/* Reads one line from stdin into line (NUL-terminated, without '\n').
 * Returns its length, -1 at EOF or error, -2 when told to terminate. */
ssize_t sdk_buffered_line(struct pepsi_worker *w, char *line, size_t cap)
{
    char *nl = memchr(w->core->rbuf, '\n', w->core->rlen);
    if (nl == NULL)
        return -1;
    size_t len = (size_t)(nl - w->core->rbuf);
    if (len >= cap)
        len = cap - 1;
    memcpy(line, w->core->rbuf, len);
    line[len] = '\0';
    size_t used = (size_t)(nl - w->core->rbuf) + 1;
    memmove(w->core->rbuf, w->core->rbuf + used, w->core->rlen - used);
    w->core->rlen -= used;
    return (ssize_t)len;
}

/* ---- the section's keys ---- */

/* A built-in's USER_OPTIONS may only narrow what it declares (issue 11). */
static int check_user_options(struct pepsi_worker *w)
{
    char name[256];
    for (const char *at = w->section->user_options; at && *at;) {
        if (conf_list_next(&at, name, sizeof name) == 0)
            break;
        bool declared = false;
        for (const char *const *k = w->def->user_keys; k && *k && !declared; k++)
            declared = strcmp(*k, name) == 0;
        if (!declared) {
            log_error(w->stage, "%s: key \"USER_OPTIONS\" in [stage-%s]: pepsi-stage-%s does not let end users "
                      "set \"%s\"", w->core->conf.path, w->stage, w->def->program, name);
            return -1;
        }
    }
    return 0;
}

int sdk_check_own_keys(struct pepsi_worker *w)
{
    for (size_t i = 0; i < w->section->n_own; i++) {
        const struct conf_kv *kv = &w->section->own[i];
        bool known = false;
        for (const char *const *k = w->def->own_keys; k && *k && !known; k++)
            known = strcmp(*k, kv->key) == 0;
        if (!known) {
            log_error(w->stage, "%s:%d: key \"%s\" in [stage-%s]: not a key of pepsi-stage-%s",
                      w->core->conf.path, kv->line, kv->key, w->stage, w->def->program);
            return -1;
        }
    }
    return check_user_options(w);
}
