/* cli/queue_cmd.c — see queue_cmd.h: the SQL of each verb and its output. */
#include "cli/queue_cmd.h"

#include "cli/resjson.h"
#include "lib/conf.h"
#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "queue"
#define SUBJECT_MAX 40 /* longer subjects are cut, with "..." */

#define LIST_SQL                                                                                         \
    "select workqueue_id, tube, stage, status::text as status,"                                         \
    " greatest(floor(extract(epoch from now() - arrived_at)), 0)::bigint as age_seconds,"               \
    " coalesce(envelope_sender, '') as envelope_sender, coalesce(subject, '') as subject, arrived_at"   \
    " from pepsi.messages"                                                                               \
    " where ($1::text is null or stage = $1) and ($2::text is null or status::text = $2)"              \
    "   and ($3::text is null or tube = $3)"                                                            \
    " order by workqueue_id limit $4::int"

static int usage(void)
{
    fprintf(stderr,
            "usage: pepsi-runner [-c FILE] queue list [--stage S] [--status ST] [--tube T] [--limit N] [--json]\n"
            "       pepsi-runner [-c FILE] queue show ID [--json]\n"
            "       pepsi-runner [-c FILE] queue retry ID...\n"
            "       pepsi-runner [-c FILE] queue delete ID... --reason TEXT\n"
            "       pepsi-runner [-c FILE] queue move ID... --to STAGE\n"
            "       pepsi-runner [-c FILE] queue pause STAGE [--reason TEXT] | pause --tube T --for DURATION\n"
            "       pepsi-runner [-c FILE] queue resume STAGE | resume --tube T\n"
            "       pepsi-runner [-c FILE] queue purge --older-than DURATION\n");
    return EXIT_USAGE;
}

/* A refusal: the statement's SQLSTATE (a PX code for pepsi's own) and
 * message; exit 1. */
static int refused(PGconn *c, const PGresult *r, const char *what)
{
    log_error(COMPONENT, "%s refused: %s %s", what, pgerr_sqlstate(r), pgerr_message(c, r));
    return 1;
}

static void print_cell(FILE *out, const char *v, int width, bool clip)
{
    if (clip && strlen(v) > SUBJECT_MAX)
        fprintf(out, "%.*s...", SUBJECT_MAX - 3, v);
    else
        fprintf(out, "%-*s", width, v);
}

void queue_render_list(const PGresult *res, FILE *out)
{
    static const char *const head[] = {"ID", "TUBE", "STAGE", "STATUS", "AGE", "SENDER", "SUBJECT"};
    int width[7];
    char age[32];
    for (int c = 0; c < 7; c++) {
        width[c] = (int)strlen(head[c]);
        for (int i = 0; i < PQntuples(res) && c < 6; i++) {
            int w = c == 4 ? (int)strlen(queue_age(atoll(PQgetvalue(res, i, c)), age, sizeof age))
                           : PQgetlength(res, i, c);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (int c = 0; c < 7; c++) {
        print_cell(out, head[c], c == 6 ? 0 : width[c], false);
        fputs(c == 6 ? "\n" : "  ", out);
    }
    for (int i = 0; i < PQntuples(res); i++) {
        for (int c = 0; c < 7; c++) {
            const char *v = c == 4 ? queue_age(atoll(PQgetvalue(res, i, c)), age, sizeof age) : PQgetvalue(res, i, c);
            print_cell(out, v, c == 6 ? 0 : width[c], c == 6);
            fputs(c == 6 ? "\n" : "  ", out);
        }
    }
}

static int do_list(PGconn *c, const struct queue_args *a)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", a->limit);
    const char *p[] = {a->stage, a->status, a->tube, limit};
    PGresult *r = PQexecParams(c, LIST_SQL, 4, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : refused(c, r, "list");
    if (rc == 0 && a->json) {
        rc = resjson_print(resjson_rows(r), stdout);
    } else if (rc == 0) {
        queue_render_list(r, stdout);
        rc = fflush(stdout) == 0 ? 0 : -1;
    }
    if (rc < 0)
        log_error(COMPONENT, "cannot write the list");
    PQclear(r);
    return rc == 0 ? 0 : 1;
}

/* Whether the function named by a regprocedure signature exists (SQL of
 * another change may be missing from an older schema). -1 on error. */
static int function_exists(PGconn *c, const char *signature)
{
    const char *p[] = {signature};
    PGresult *r = PQexecParams(c, "select to_regprocedure($1) is not null", 1, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? strcmp(PQgetvalue(r, 0, 0), "t") == 0 : -1;
    if (rc < 0)
        log_error(COMPONENT, "cannot look up %s: %s", signature, pgerr_message(c, r));
    PQclear(r);
    return rc;
}

/* Rows as "column: value" lines, a blank line between rows. */
static void print_columns(const PGresult *r, FILE *out)
{
    for (int i = 0; i < PQntuples(r); i++) {
        if (i > 0)
            fputc('\n', out);
        for (int c = 0; c < PQnfields(r); c++)
            fprintf(out, "%s: %s\n", PQfname(r, c), PQgetisnull(r, i, c) ? "" : PQgetvalue(r, i, c));
    }
}

/* The history of message id (pepsi.message_history, when it exists):
 * *out the rows, NULL when there is no such function. -1 on error. */
static int read_history(PGconn *c, const char *id, PGresult **out)
{
    *out = NULL;
    int has = function_exists(c, "pepsi.message_history(bigint)");
    if (has <= 0)
        return has;
    const char *p[] = {id};
    PGresult *r = PQexecParams(c, "select * from pepsi.message_history($1::bigint)", 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        refused(c, r, "history");
        PQclear(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int print_show(const char *id, const PGresult *m, const PGresult *h, bool json)
{
    if (json) {
        json_t *o = json_object();
        json_t *msg = PQntuples(m) > 0 ? resjson_row(m, 0) : json_null();
        if (o != NULL && json_object_set_new(o, "message", msg) == 0 && h != NULL)
            json_object_set_new(o, "history", resjson_rows(h));
        return resjson_print(o, stdout);
    }
    if (PQntuples(m) > 0)
        print_columns(m, stdout);
    else
        printf("message %s is not in the queue\n", id);
    if (h != NULL) {
        printf("\nhistory (%d row%s):\n", PQntuples(h), PQntuples(h) == 1 ? "" : "s");
        print_columns(h, stdout);
    }
    return fflush(stdout) == 0 ? 0 : -1;
}

static int do_show(PGconn *c, const struct queue_args *a)
{
    char id[32];
    snprintf(id, sizeof id, "%" PRId64, a->ids[0]);
    const char *p[] = {id};
    PGresult *m = PQexecParams(c, "select * from pepsi.messages where workqueue_id = $1::bigint", 1, NULL, p, NULL,
                               NULL, 0);
    if (PQresultStatus(m) != PGRES_TUPLES_OK) {
        int rc = refused(c, m, "show");
        PQclear(m);
        return rc;
    }
    PGresult *h = NULL;
    int rc = read_history(c, id, &h);
    if (rc == 0 && print_show(id, m, h, a->json) != 0) {
        log_error(COMPONENT, "cannot write message %s", id);
        rc = -1;
    }
    /* A message neither queued nor in the history is not found: exit 1. */
    if (rc == 0 && PQntuples(m) == 0 && (h == NULL || PQntuples(h) == 0)) {
        log_error(COMPONENT, "message %s not found", id);
        rc = -1;
    }
    PQclear(h);
    PQclear(m);
    return rc == 0 ? 0 : 1;
}

/* Runs one statement of one row and one column (the verb's function) with
 * params; the value in *value (caller frees), or exit 1 with the refusal. */
static int call(PGconn *c, const char *sql, int n, const char *const *params, const char *what, char **value)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = refused(c, r, what);
        PQclear(r);
        return rc;
    }
    *value = xstrdup(PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

static const char *plural(const char *n)
{
    return strcmp(n, "1") == 0 ? "message" : "messages";
}

/* retry, delete, move: a function over an array of ids. */
static int do_ids(PGconn *c, const struct queue_args *a)
{
    struct pgarray arr = PGARRAY_INIT;
    for (size_t k = 0; k < a->n_ids; k++)
        pgarray_add_int64(&arr, a->ids[k]);
    char *ids = pgarray_finish(&arr), *n = NULL;
    const char *p[] = {ids, a->verb == QV_DELETE ? a->reason : a->to};
    int rc;
    if (a->verb == QV_RETRY) {
        /* workqueue_retry once issue 16's SQL is deployed; before, resume
         * does the same for failed, paused and timed-out rows. */
        int has = function_exists(c, "pepsi.workqueue_retry(bigint[])");
        rc = has < 0 ? 1
                     : call(c, has ? "select pepsi.workqueue_retry($1::bigint[])"
                                   : "select pepsi.workqueue_resume(p_ids => $1::bigint[])",
                            1, p, "retry", &n);
        if (rc == 0)
            printf("%s %s retried\n", n, plural(n));
    } else if (a->verb == QV_DELETE) {
        rc = call(c, "select pepsi.workqueue_delete($1::bigint[], $2)", 2, p, "delete", &n);
        if (rc == 0)
            printf("%s %s deleted\n", n, plural(n));
    } else {
        rc = call(c, "select pepsi.workqueue_reroute($1::bigint[], $2)", 2, p, "move", &n);
        if (rc == 0)
            printf("%s %s moved to stage %s\n", n, plural(n), a->to);
    }
    free(n);
    free(ids);
    return rc;
}

static int do_stage(PGconn *c, const struct queue_args *a)
{
    const char *p[] = {a->stage, a->reason};
    char *v = NULL;
    bool pause = a->verb == QV_PAUSE;
    int rc = call(c, pause ? "select pepsi.workqueue_pause_stage($1, $2)" : "select pepsi.workqueue_resume_stage($1)",
                  pause ? 2 : 1, p, pause ? "pause" : "resume", &v);
    if (rc == 0 && pause)
        printf(strcmp(v, "t") == 0 ? "stage %s paused\n" : "stage %s was paused already\n", a->stage);
    else if (rc == 0)
        printf(strcmp(v, "t") == 0 ? "stage %s resumed\n" : "stage %s was not paused\n", a->stage);
    free(v);
    return rc;
}

static int do_tube(PGconn *c, const struct queue_args *a)
{
    char secs[32];
    snprintf(secs, sizeof secs, "%" PRId64, a->verb == QV_PAUSE ? (a->ms + 999) / 1000 : 0);
    const char *p[] = {a->tube, secs};
    char *v = NULL;
    int rc = call(c,
                  "select to_char(pepsi.tube_pause($1, $2::int) at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS\"Z\"')",
                  2, p, a->verb == QV_PAUSE ? "pause" : "resume", &v);
    if (rc == 0 && a->verb == QV_PAUSE)
        printf("tube %s paused until %s\n", a->tube, v);
    else if (rc == 0)
        printf("tube %s resumed\n", a->tube);
    free(v);
    return rc;
}

static int do_purge(PGconn *c, const struct queue_args *a)
{
    char ms[32];
    snprintf(ms, sizeof ms, "%" PRId64, a->ms);
    const char *p[] = {ms};
    char *n = NULL;
    int rc = call(c, "select pepsi.workqueue_purge($1::bigint * interval '1 millisecond')", 1, p, "purge", &n);
    if (rc == 0)
        printf("%s %s purged\n", n, plural(n));
    free(n);
    return rc;
}

static int run(PGconn *c, const struct queue_args *a)
{
    switch (a->verb) {
    case QV_LIST:
        return do_list(c, a);
    case QV_SHOW:
        return do_show(c, a);
    case QV_RETRY:
    case QV_DELETE:
    case QV_MOVE:
        return do_ids(c, a);
    case QV_PAUSE:
    case QV_RESUME:
        return a->tube ? do_tube(c, a) : do_stage(c, a);
    default:
        return do_purge(c, a);
    }
}

int queue_command(const char *config_path, int argc, char **argv)
{
    char err[1024];
    struct queue_args a;
    if (queue_parse(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "pepsi-runner queue: %s\n", err);
        queue_args_free(&a);
        return usage();
    }
    struct conf conf;
    const char *path = config_path ? config_path : conf_default_path();
    int loaded = conf_load(path, &conf, err, sizeof err);
    if (loaded != 0) {
        log_error("config", "%s", err);
        queue_args_free(&a);
        return loaded == CONF_INSECURE ? EXIT_CONFIG : 1;
    }
    PGconn *c = conn_open(conf.conninfo, conf.connect_timeout_ms, "pepsi-runner queue", COMPONENT, NULL);
    conf_free(&conf);
    int rc = EXIT_UNAVAILABLE; /* conn_open said why */
    if (c != NULL && conn_exec(c, "set timezone = 'UTC'", COMPONENT) == 0)
        rc = run(c, &a);
    else if (c != NULL)
        rc = 1;
    PQfinish(c);
    queue_args_free(&a);
    return rc;
}
