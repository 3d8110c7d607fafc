/* sdk/worker.c — a worker process from start to exit: configuration,
 * connection and schema check, "ready", then ids read from stdin, each
 * message (or batch) run and answered in order, until EOF or SIGTERM.
 * The top of the SDK: it uses the core (sdk.c), the pass (chain.c), the
 * commit (commit.c) and batches (batch.c); none of them uses it. */
#include "sdk/sdk.h"
#include "sdk/batch.h"
#include "sdk/chain.h"
#include "sdk/commit.h"
#include "sdk/sdk_internal.h"

#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"
#include "lib/proto.h"
#include "lib/rights.h"
#include "lib/schema.h"
#include "lib/util.h"

#include <errno.h>
#include <signal.h>
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

/* ---- one message ---- */

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

/* One message: load (unless the stage skips it), split, the pass, commit. */
static void sdk_run_message(struct pepsi_worker *w, int64_t id, const char *idtext, struct sdk_result *res)
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

/* The most ids one batch takes: what the dispatcher may hand at once
 * (PEPSI_QUEUE_LIMIT: QUEUE_LIMIT, or the adaptive hand-out's maximum
 * when QUEUE_LIMIT is unset, issue 19), else the section's QUEUE_LIMIT
 * (a worker started by hand). */
static size_t batch_max(const struct pepsi_worker *w)
{
    int n = 0;
    if (conf_parse_int(getenv("PEPSI_QUEUE_LIMIT"), 1, SDK_MAX_BATCH, &n) != 0)
        n = w->section->queue_limit;
    return n > SDK_MAX_BATCH ? SDK_MAX_BATCH : (size_t)n;
}

/* Whether the stage can take its ids in batches: it loads no body (D-69,
 * D-73) and the dispatcher may hand it more than one at a time. */
static bool batchable(const struct pepsi_worker *w, size_t max)
{
    return !w->def->loads_body && max > 1;
}

static int serve_ids(struct pepsi_worker *w)
{
    char line[64];
    ssize_t len;
    int64_t ids[SDK_MAX_BATCH];
    static struct sdk_result results[SDK_MAX_BATCH];
    size_t max = batch_max(w);
    while (!terminate && (len = read_line(w, line, sizeof line)) >= 0) {
        if (proto_parse_id(line, (size_t)len, &ids[0]) != 0) {
            log_error(w->stage, "unreadable message id \"%s\" from the dispatcher", line);
            return 1;
        }
        int more = batchable(w, max) ? sdk_gather_ids(w, ids + 1, max - 1) : 0;
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

/* Whether the dispatcher that started us found the schema serving a
 * range of API levels that covers our build's (PEPSI_SCHEMA_VERIFIED,
 * "LEVEL:OLDEST", issue 19): then the check (D-12) was made once for all
 * its workers. Any other value, or none, and the worker checks itself. */
static bool schema_verified_above(const struct pepsi_worker *w)
{
    const char *token = getenv("PEPSI_SCHEMA_VERIFIED");
    if (token == NULL || schema_token_verdict(token) != SCHEMA_OK)
        return false;
    log_debug(w->stage, "schema verified by the dispatcher (API levels %s)", token);
    return true;
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
    if (sdk_connect(w, &overload) != 0)
        return overload ? EXIT_TEMPFAIL : 1;
    /* A login without pepsi_worker's rights refuses here (issue 15), not
     * at every message as a host error. */
    code = rights_check(w->core->conn, &rights_worker, w->stage);
    if (code != 0)
        return code;
    if (!schema_verified_above(w) && schema_verify(w->core->conn, w->stage) != SCHEMA_OK)
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
    if (def == NULL || def->program == NULL || def->run == NULL) {
        log_error("worker", "pepsi_worker_main: the stage definition has no program name or no run function");
        return 1;
    }
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
