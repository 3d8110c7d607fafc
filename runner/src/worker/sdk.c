/* worker/sdk.c — see sdk.h. */
#include "worker/sdk.h"
#include "worker/sdk_internal.h"

#include "conn.h"
#include "log.h"
#include "pgerr.h"
#include "proto.h"
#include "schema.h"
#include "util.h"

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
const struct conf *pepsi_worker_conf(const struct pepsi_worker *w) { return &w->conf; }
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

#define LOAD_META "select w.stage, w.status, w.tube, w.sender_key, w.envelope_sender," \
    " array_to_json(w.recipients), w.header_from, w.subject, w.state, w.arrived_at"
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
    {"commit_many", "select workqueue_id, outcome from pepsi.workqueue_commit($1, $2::jsonb)"},
    {"advance", "select pepsi.workqueue_advance($1::bigint, $2, $3, $4::jsonb)"},
    {"finish", "select pepsi.workqueue_finish($1::bigint, $2)"},
    {"pause", "select pepsi.workqueue_pause($1::bigint, $2, now() + $3::bigint * interval '1 millisecond',"
              " $4, $5::jsonb)"},
    {"fail", "select pepsi.workqueue_fail($1::bigint, $2, $3, $4, $5::jsonb)"},
    {"host_error", "select pepsi.workqueue_host_error($1::bigint, $2, $3,"
                   " $4::bigint * interval '1 millisecond', $5)"},
};

static int prepare_all(struct pepsi_worker *w)
{
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        PGresult *r = PQprepare(w->conn, statements[i].name, statements[i].sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            log_error(w->stage, "cannot prepare \"%s\": %s", statements[i].name,
                      pgerr_message(w->conn, r));
            PQclear(r);
            return -1;
        }
        PQclear(r);
    }
    w->prepared = true;
    return 0;
}

/* Connects (or reconnects) and prepares; sets *overload when the server
 * had no slot. Returns 0 or -1. */
static int worker_connect(struct pepsi_worker *w, bool *overload)
{
    char app[96];
    if (w->conn) {
        PQfinish(w->conn);
        w->conn = NULL;
    }
    w->prepared = false;
    snprintf(app, sizeof app, "pepsi-stage-%s", w->stage);
    w->conn = conn_open(w->conninfo, w->conf.connect_timeout_ms, app, w->stage, overload);
    if (w->conn == NULL)
        return -1;
    /* Concurrent workers commit as a group; a lost advance is a repeated
     * stage, never a lost message (D-77). */
    if (!w->conf.worker_synchronous_commit &&
        conn_exec(w->conn, "set synchronous_commit = off", w->stage) != 0)
        return -1;
    return prepare_all(w);
}

PGresult *sdk_exec_prepared(struct pepsi_worker *w, const char *name, int n, const char *const *params)
{
    return PQexecPrepared(w->conn, name, n, params, NULL, NULL, 0);
}

/* ---- answers ---- */

/* Writes one status line with this pass's report (D-24, D-26). A runner
 * that is gone means we are done. */
static void answer(struct pepsi_worker *w, int status, uint64_t usec)
{
    struct proto_report_entry rep;
    char line[256];
    snprintf(rep.stage, sizeof rep.stage, "%s", w->stage);
    rep.usec = (int64_t)usec;
    size_t len = proto_format_status(line, sizeof line, status, &rep, 1);
    if (len == 0)
        len = proto_format_status(line, sizeof line, status, NULL, 0);
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(STDOUT_FILENO, line + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            log_error(w->stage, "cannot write to the dispatcher: %s", strerror(errno));
            exit(1);
        }
        off += (size_t)n;
    }
}

/* Status for database trouble: 74, 75, or 0 when it is something else. */
int sdk_trouble_status(struct pepsi_worker *w, const PGresult *res)
{
    switch (pgerr_classify(w->conn, res)) {
    case PGERR_CONNECTION:
        return EXIT_IOERR;
    case PGERR_OVERLOAD:
        return EXIT_TEMPFAIL;
    default:
        return 0;
    }
}

/* ---- committing an outcome ---- */

static char *patch_text(const struct pepsi_outcome *out)
{
    return out->state_patch ? json_dumps(out->state_patch, JSON_COMPACT) : NULL;
}

/* The host-error path (D-104..D-109): pause with backoff, or give up. */
static PGresult *commit_host_error(struct pepsi_worker *w, const char *id, const char *reason)
{
    char lifetime[32];
    snprintf(lifetime, sizeof lifetime, "%lld", (long long)w->section->max_lifetime_ms);
    const char *params[] = {id, w->stage, reason, lifetime, w->section->bounce_stage};
    /* D-106: every host-error retry is a warning under the stage's name. */
    log_warning(w->stage, "host error on message %s: %s", id, reason);
    return sdk_exec_prepared(w, "host_error", 5, params);
}

/* Runs the SQL call for the outcome; returns its result and sets *failed
 * when the row is left failed (status 1). */
static PGresult *commit_call(struct pepsi_worker *w, const char *id, const struct pepsi_outcome *out,
                             bool *failed)
{
    char ms[32];
    char *patch = patch_text(out);
    const char *next = out->next ? out->next : w->section->next;
    PGresult *res;

    *failed = false;
    switch (out->kind) {
    case PEPSI_ADVANCE:
        if (next) {
            const char *p[] = {id, w->stage, next, patch};
            res = sdk_exec_prepared(w, "advance", 4, p);
            break;
        }
        /* no next stage: the message is done */
        __attribute__((fallthrough));
    case PEPSI_FINISH: {
        const char *p[] = {id, w->stage};
        res = sdk_exec_prepared(w, "finish", 2, p);
        break;
    }
    case PEPSI_PAUSE: {
        snprintf(ms, sizeof ms, "%lld", (long long)(out->pause_ms > 0 ? out->pause_ms : 1000));
        const char *p[] = {id, w->stage, ms, out->reason[0] ? out->reason : NULL, patch};
        res = sdk_exec_prepared(w, "pause", 5, p);
        break;
    }
    case PEPSI_FAIL: {
        const char *p[] = {id, w->stage, out->reason[0] ? out->reason : "failed",
                           out->failure_class ? out->failure_class : "permanent", patch};
        res = sdk_exec_prepared(w, "fail", 5, p);
        *failed = true;
        break;
    }
    default:
        res = commit_host_error(w, id, out->reason[0] ? out->reason : "host error");
        break;
    }
    free(patch);
    return res;
}

/* Commits the outcome in one call (D-76); returns the status to answer. */
int sdk_commit(struct pepsi_worker *w, const char *id, const struct pepsi_outcome *out)
{
    bool failed;
    PGresult *res = commit_call(w, id, out, &failed);
    int status = sdk_trouble_status(w, res);
    if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
        const char *code = pgerr_sqlstate(res);
        if (strcmp(code, "PX004") == 0 || strcmp(code, "PX005") == 0) {
            log_warning(w->stage, "message %s moved on before its result was written: %s", id,
                        pgerr_message(w->conn, res));
        } else {
            /* The database refused the result for another reason: a host
             * error, never the message's fault (D-103). */
            char reason[512];
            snprintf(reason, sizeof reason, "stage %s: the database refused the result: %s (sqlstate %s)",
                     w->stage, pgerr_message(w->conn, res), code);
            PQclear(res);
            res = commit_host_error(w, id, reason);
            status = sdk_trouble_status(w, res);
            if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
                log_error(w->stage, "cannot record a host error for message %s: %s", id,
                          pgerr_message(w->conn, res));
                status = EXIT_IOERR;
            }
        }
    } else if (status == 0 && failed) {
        status = 1;
    }
    PQclear(res);
    return status;
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
    if (w->def->loads_body && strcmp(PQgetvalue(r, row, 10), "t") == 0) {
        m->has_body = true;
        m->headers = value_or_null(r, row, 11);
        if (!PQgetisnull(r, row, 12))
            m->body = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, 12), &m->body_len);
    }
    return json_is_object(m->state) ? 0 : -1;
}

void sdk_message_free(struct pepsi_message *m)
{
    for (size_t i = 0; i < m->n_recipients; i++)
        free(m->recipients[i]);
    free(m->recipients);
    json_decref(m->state);
    if (m->body)
        PQfreemem((void *)m->body);
}

/* ---- one message ---- */

/* Makes sure there is a usable connection; the status to answer when not. */
int sdk_ensure_connection(struct pepsi_worker *w)
{
    bool overload;
    if (w->conn && PQstatus(w->conn) == CONNECTION_OK && w->prepared)
        return 0;
    if (worker_connect(w, &overload) == 0)
        return 0;
    return overload ? EXIT_TEMPFAIL : EXIT_IOERR;
}

/* A stage that needs nothing of the message commits without loading it:
 * one round trip per message. The result call alone checks that the row
 * is running at this stage (PX004/PX005 are answered like a skipped
 * message in sdk_commit()). */
static int run_unloaded(struct pepsi_worker *w, int64_t id, const char *idtext)
{
    struct pepsi_message m;
    struct pepsi_outcome out;
    memset(&m, 0, sizeof m);
    memset(&out, 0, sizeof out);
    m.id = id;
    m.stage = w->stage;
    m.tube = m.sender_key = "";
    m.state = json_object();
    out.kind = PEPSI_ADVANCE;
    w->def->run(w, &m, &out);
    int status = sdk_commit(w, idtext, &out);
    json_decref(out.state_patch);
    json_decref(m.state);
    return status;
}

int sdk_run_message(struct pepsi_worker *w, int64_t id, const char *idtext)
{
    struct pepsi_message m;
    struct pepsi_outcome out;
    int status = sdk_ensure_connection(w);
    if (status != 0)
        return status;
    if (w->def->skip_load)
        return run_unloaded(w, id, idtext);

    const char *p[] = {idtext};
    PGresult *r = sdk_exec_prepared(w, w->def->loads_body ? "load_body" : "load", 1, p);
    if ((status = sdk_trouble_status(w, r)) != 0 || PQresultStatus(r) != PGRES_TUPLES_OK) {
        if (status == 0) {
            log_error(w->stage, "cannot load message %s: %s", idtext, pgerr_message(w->conn, r));
            status = EXIT_IOERR; /* deferred without blame; the cause is ours */
        }
        PQclear(r);
        return status;
    }
    if (PQntuples(r) == 0 || strcmp(PQgetvalue(r, 0, 1), "running") != 0 ||
        strcmp(PQgetvalue(r, 0, 0), w->stage) != 0) {
        log_warning(w->stage, "message %s is not running at this stage; skipping it", idtext);
        PQclear(r);
        return 0;
    }
    memset(&out, 0, sizeof out);
    if (sdk_message_from(w, r, 0, id, &m) != 0) {
        out.kind = PEPSI_FAIL;
        pepsi_outcome_reason(&out, "stage %s: the message state is not a JSON object", w->stage);
    } else {
        out.kind = PEPSI_ADVANCE;
        w->def->run(w, &m, &out);
    }
    status = sdk_commit(w, idtext, &out);
    json_decref(out.state_patch);
    sdk_message_free(&m);
    PQclear(r);
    return status;
}

/* ---- reading ids ---- */

/* Reads one line from stdin into line (NUL-terminated, without '\n').
 * Returns its length, -1 at EOF or error, -2 when told to terminate. */
ssize_t sdk_buffered_line(struct pepsi_worker *w, char *line, size_t cap)
{
    char *nl = memchr(w->rbuf, '\n', w->rlen);
    if (nl == NULL)
        return -1;
    size_t len = (size_t)(nl - w->rbuf);
    if (len >= cap)
        len = cap - 1;
    memcpy(line, w->rbuf, len);
    line[len] = '\0';
    size_t used = (size_t)(nl - w->rbuf) + 1;
    memmove(w->rbuf, w->rbuf + used, w->rlen - used);
    w->rlen -= used;
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
        if (w->rlen == sizeof w->rbuf)
            return -1; /* no id is this long */
        ssize_t n = read(STDIN_FILENO, w->rbuf + w->rlen, sizeof w->rbuf - w->rlen);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        w->rlen += (size_t)n;
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
    int status[SDK_MAX_BATCH];
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
        uint64_t t0 = now_us();
        if (n == 1)
            status[0] = sdk_run_message(w, ids[0], line);
        else
            sdk_run_batch(w, ids, n, status);
        /* One status line per id, in order (D-72); the batch's time shared. */
        uint64_t each = (now_us() - t0) / n;
        for (size_t i = 0; i < n; i++)
            answer(w, status[i], each);
    }
    return 0;
}

/* ---- start-up ---- */

static int check_own_keys(struct pepsi_worker *w)
{
    for (size_t i = 0; i < w->section->n_own; i++) {
        const struct conf_kv *kv = &w->section->own[i];
        bool known = false;
        for (const char *const *k = w->def->own_keys; k && *k && !known; k++)
            known = strcmp(*k, kv->key) == 0;
        if (!known) {
            log_error(w->stage, "%s:%d: key \"%s\" in [stage-%s]: not a key of pepsi-stage-%s",
                      w->conf.path, kv->line, kv->key, w->stage, w->def->program);
            return -1;
        }
    }
    return 0;
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
    if (conf_load(path, &w->conf, err, sizeof err) != 0) {
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
    PGresult *res = PQexec(w->conn, "select section, key, value from pepsi.config_overlay()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(w->stage, "cannot read the configuration overlay: %s", pgerr_message(w->conn, res));
        PQclear(res);
        return 1;
    }
    int n = PQntuples(res);
    if (n == 0) {
        PQclear(res);
        return 0;
    }
    struct conf_override *rows = xcalloc((size_t)n, sizeof *rows);
    for (int i = 0; i < n; i++) {
        rows[i].section = PQgetvalue(res, i, 0);
        rows[i].key = PQgetvalue(res, i, 1);
        rows[i].value = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);
    }
    conf_free(&w->conf);
    int rc = conf_load_overlay(path, rows, (size_t)n, &w->conf, err, sizeof err);
    free(rows);
    PQclear(res);
    if (rc != 0) {
        log_error(w->stage, "%s", err);
        return EXIT_CONFIG;
    }
    return 0;
}

/* Finds and checks the stage's section (D-113); 0, or 78 to refuse. */
static int load_section(struct pepsi_worker *w)
{
    char err[1024];
    w->section = conf_stage(&w->conf, w->stage);
    if (w->section == NULL) {
        log_error(w->stage, "%s has no [stage-%s] section (file and overlay)", w->conf.path, w->stage);
        return EXIT_CONFIG;
    }
    if (check_own_keys(w) != 0)
        return EXIT_CONFIG;
    if (w->def->setup && w->def->setup(w, err, sizeof err) != 0) {
        log_error(w->stage, "%s:%d: [stage-%s]: %s", w->conf.path, w->section->line, w->stage, err);
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
    w->conninfo = xstrdup(ci ? ci : w->conf.conninfo);
    if (worker_connect(w, &overload) != 0)
        return overload ? EXIT_TEMPFAIL : 1;
    if (schema_verify(w->conn, w->stage) != SCHEMA_CURRENT)
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
    struct pepsi_worker w;
    memset(&w, 0, sizeof w);
    w.def = def;
    w.stage = getenv("PEPSI_STAGE");
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
    if (w.conn)
        PQfinish(w.conn);
    conf_free(&w.conf);
    free((char *)w.conninfo);
    return code;
}
