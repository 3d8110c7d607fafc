/* sdk/sdk.c — see sdk.h. */
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

static volatile sig_atomic_t terminate;

static void on_sigterm(int sig)
{
    (void)sig;
    terminate = 1;
}

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
    {"split", "select pepsi.workqueue_split($1::bigint, $2, $3::jsonb)"},
    {"settings_apply", "select outcome from pepsi.settings_apply($1::bigint, $2, $3, $4, $5::jsonb, $6::text[],"
                       " $7::int)"},
};

static int prepare_all(struct pepsi_worker *w)
{
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        PGresult *r = PQprepare(w->core->conn, statements[i].name, statements[i].sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            log_error(w->stage, "cannot prepare \"%s\": %s", statements[i].name,
                      pgerr_message(w->core->conn, r));
            PQclear(r);
            return -1;
        }
        PQclear(r);
    }
    w->core->prepared = true;
    return 0;
}

/* Connects (or reconnects) and prepares; sets *overload when the server
 * had no slot. Returns 0 or -1. */
static int worker_connect(struct pepsi_worker *w, bool *overload)
{
    char app[96];
    if (w->core->conn) {
        PQfinish(w->core->conn);
        w->core->conn = NULL;
    }
    w->core->prepared = false;
    snprintf(app, sizeof app, "pepsi-stage-%s", w->stage);
    w->core->conn = conn_open(w->core->conninfo, w->core->conf.connect_timeout_ms, app, w->stage, overload);
    if (w->core->conn == NULL)
        return -1;
    /* Concurrent workers commit as a group; a lost advance is a repeated
     * stage, never a lost message (D-77). */
    if (!w->core->conf.worker_synchronous_commit &&
        conn_exec(w->core->conn, "set synchronous_commit = off", w->stage) != 0)
        return -1;
    return prepare_all(w);
}

PGresult *sdk_exec_prepared(struct pepsi_worker *w, const char *name, int n, const char *const *params)
{
    return PQexecPrepared(w->core->conn, name, n, params, NULL, NULL, 0);
}

/* ---- answers ---- */

void sdk_answer(struct pepsi_worker *w, int status, const struct proto_report_entry *report, size_t n)
{
    char line[1024];
    size_t len = proto_format_status(line, sizeof line, status, report, n);
    if (len == 0)
        len = proto_format_status(line, sizeof line, status, NULL, 0);
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(STDOUT_FILENO, line + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            log_error(w->stage, "cannot write to the dispatcher: %s", strerror(errno));
            exit(1);
        }
        off += (size_t)k;
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
    if (worker_connect(w, &overload) == 0)
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

/* Runs the pass and commits it; the status and the report in *res. */
static void pass_and_commit(struct pepsi_worker *w, struct pepsi_message *m, int level,
                            const char *idtext, struct sdk_result *res)
{
    struct sdk_pass p;
    sdk_pass(w, m, level, &p);
    res->status = sdk_commit(p.at, w->stage, idtext, &p.out, &p.via, m);
    memcpy(res->report, p.report, p.n_report * sizeof p.report[0]);
    res->n_report = p.n_report;
    json_decref(p.out.state_patch);
    json_decref(p.out.settings_changes);
}

/* Loads one message: 0 with *r set, SDK_MOVED_ON when it is not running
 * here (skip it, answering 0), or else the status to answer. A lost
 * connection is 74 and overload 75 (D-94, D-99); any other SQL error is a
 * host error of the stage, with backoff and MAX_LIFETIME (D-103), never a
 * 74 deferred every 30 s for ever (issue 12). */
static int load_one(struct pepsi_worker *w, const char *idtext, PGresult **r)
{
    const char *p[] = {idtext};
    *r = sdk_exec_prepared(w, w->def->loads_body ? "load_body" : "load", 1, p);
    if (PQresultStatus(*r) != PGRES_TUPLES_OK) {
        log_error(w->stage, "cannot load message %s: %s", idtext, pgerr_message(w->core->conn, *r));
        int status = sdk_db_error(w, NULL, idtext, "cannot load the message", *r);
        PQclear(*r);
        return status == 0 ? SDK_MOVED_ON : status;
    }
    if (PQntuples(*r) == 0 || strcmp(PQgetvalue(*r, 0, 1), "running") != 0 ||
        strcmp(PQgetvalue(*r, 0, 0), w->stage) != 0) {
        log_warning(w->stage, "message %s is not running at this stage; skipping it", idtext);
        PQclear(*r);
        return SDK_MOVED_ON;
    }
    return 0;
}

void sdk_run_message(struct pepsi_worker *w, int64_t id, const char *idtext, struct sdk_result *res)
{
    struct pepsi_message m;
    PGresult *r;
    memset(res, 0, sizeof *res);
    if ((res->status = sdk_ensure_connection(w)) != 0)
        return;
    if (w->def->skip_load) {
        /* Nothing of the message is needed: the result call alone checks
         * that the row is running here; one round trip a message. */
        sdk_bare_message(w, id, &m);
        pass_and_commit(w, &m, SDK_LOAD_NONE, idtext, res);
        json_decref(m.state);
        return;
    }
    int st = load_one(w, idtext, &r);
    if (st != 0) {
        res->status = st == SDK_MOVED_ON ? 0 : st;
        return;
    }
    if (sdk_message_from(w, r, 0, id, &m) != 0) {
        struct pepsi_outcome out = {.kind = PEPSI_FAIL};
        pepsi_outcome_reason(&out, "stage %s: the message state is not a JSON object", w->stage);
        res->status = sdk_commit(w, w->stage, idtext, &out, NULL, &m);
    } else if ((st = sdk_split(w, &m, idtext)) != 0) {
        res->status = st == SDK_MOVED_ON ? 0 : st;
    } else {
        pass_and_commit(w, &m, sdk_load_level(w->def), idtext, res);
    }
    sdk_message_free(&m);
    PQclear(r);
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

static ssize_t read_line(struct pepsi_worker *w, char *line, size_t cap)
{
    for (;;) {
        ssize_t len = sdk_buffered_line(w, line, cap);
        if (len >= 0)
            return len;
        if (terminate)
            return -2;
        if (w->core->rlen == sizeof w->core->rbuf)
            return -1; /* no id is this long */
        ssize_t n = read(STDIN_FILENO, w->core->rbuf + w->core->rlen, sizeof w->core->rbuf - w->core->rlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        w->core->rlen += (size_t)n;
    }
}

/* Whether the stage can take its ids in batches: it loads no body (D-69,
 * D-73) and the dispatcher may hand it more than one at a time. */
static bool batchable(const struct pepsi_worker *w)
{
    return !w->def->loads_body && w->section->queue_limit > 1;
}

static int serve_ids(struct pepsi_worker *w)
{
    char line[64];
    ssize_t len;
    int64_t ids[SDK_MAX_BATCH];
    static struct sdk_result results[SDK_MAX_BATCH];
    size_t max = (size_t)w->section->queue_limit;
    if (max > SDK_MAX_BATCH)
        max = SDK_MAX_BATCH;
    while (!terminate && (len = read_line(w, line, sizeof line)) >= 0) {
        if (proto_parse_id(line, (size_t)len, &ids[0]) != 0) {
            log_error(w->stage, "unreadable message id \"%s\" from the dispatcher", line);
            return 1;
        }
        int more = batchable(w) ? sdk_gather_ids(w, ids + 1, max - 1) : 0;
        if (more < 0)
            return 1;
        size_t n = 1 + (size_t)more;
        if (n == 1)
            sdk_run_message(w, ids[0], line, &results[0]);
        else
            sdk_run_batch(w, ids, n, results);
        /* One status line per id, in order (D-72), with its stages' times. */
        for (size_t i = 0; i < n; i++)
            sdk_answer(w, results[i].status, results[i].report, results[i].n_report);
    }
    return 0;
}

/* ---- start-up ---- */

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

/* Reads the configuration file (its [pepsi-postgres] tells where the
 * database is); 0, or 78 to refuse (D-113). */
static int load_file(struct pepsi_worker *w, const char *path)
{
    char err[1024];
    if (w->stage == NULL || *w->stage == '\0') {
        log_error("worker", "PEPSI_STAGE is not set: a worker is started by pepsi-runner serve");
        return EXIT_CONFIG;
    }
    if (conf_load(path, &w->core->conf, err, sizeof err) != 0) {
        log_error(w->stage, "%s", err);
        return EXIT_CONFIG;
    }
    return 0;
}

/* Reads the file again with the database overlay of [stage-*] sections
 * (D-117), so that the worker runs with what the dispatcher routes by.
 * 0; 78 when the result cannot be parsed; 1 when the overlay cannot be
 * read (a database problem: the dispatcher cools the stage down). */
static int load_overlay(struct pepsi_worker *w, const char *path)
{
    char err[1024];
    struct conf merged;
    int rc = overlay_load(w->core->conn, path, &merged, err, sizeof err);
    if (rc != 0) {
        log_error(w->stage, "%s", err);
        return rc == -2 ? 1 : EXIT_CONFIG;
    }
    conf_free(&w->core->conf);
    w->core->conf = merged;
    return 0;
}

/* Finds and checks the stage's section (D-113); 0, or 78 to refuse. */
static int load_section(struct pepsi_worker *w)
{
    char err[1024];
    w->section = conf_stage(&w->core->conf, w->stage);
    if (w->section == NULL) {
        log_error(w->stage, "%s has no [stage-%s] section (file and overlay)", w->core->conf.path, w->stage);
        return EXIT_CONFIG;
    }
    if (sdk_check_own_keys(w) != 0)
        return EXIT_CONFIG;
    if (w->def->setup && w->def->setup(w, err, sizeof err) != 0) {
        log_error(w->stage, "%s:%d: [stage-%s]: %s", w->core->conf.path, w->section->line, w->stage, err);
        w->section = NULL; /* nothing to tear down */
        return EXIT_CONFIG;
    }
    return 0;
}

/* Everything before "ready": configuration, connection, schema. */
static int start_worker(struct pepsi_worker *w, const char *config_path)
{
    bool overload;
    const char *path = config_path ? config_path : conf_default_path();
    int code = load_file(w, path);
    if (code != 0)
        return code;
    const char *ci = getenv("PEPSI_CONNINFO");
    w->core->conninfo = xstrdup(ci ? ci : w->core->conf.conninfo);
    if (worker_connect(w, &overload) != 0)
        return overload ? EXIT_TEMPFAIL : 1;
    if (schema_verify(w->core->conn, w->stage) != SCHEMA_CURRENT)
        return EXIT_CONFIG; /* D-91: refuse, the stage waits for the fix */
    code = load_overlay(w, path);
    return code != 0 ? code : load_section(w);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigterm; /* no SA_RESTART: a blocked read returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int pepsi_worker_main(const struct pepsi_stage_def *def, const char *config_path)
{
    struct sdk_core core;
    struct pepsi_worker w;
    memset(&core, 0, sizeof core);
    memset(&w, 0, sizeof w);
    w.def = def;
    w.stage = getenv("PEPSI_STAGE");
    w.core = &core;
    core.fused_by = w.stage ? w.stage : "worker";
    install_signals();

    int code = start_worker(&w, config_path);
    if (code == 0) {
        static const char ready[] = "ready\n";
        if (write(STDOUT_FILENO, ready, sizeof ready - 1) != (ssize_t)(sizeof ready - 1))
            code = 1;
        else
            code = serve_ids(&w);
    }
    if (def->teardown && w.section)
        def->teardown(&w);
    sdk_fusion_free(&core);
    if (core.conn)
        PQfinish(core.conn);
    conf_free(&core.conf);
    free(core.conninfo);
    return code;
}
