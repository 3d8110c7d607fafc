/* cli/status.c — see status.h. */
#include "cli/status.h"

#include "cli/resjson.h"
#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <string.h>

#define COMPONENT "status"
#define N_COLS 8
#define SUBJECT_MAX 40     /* longer subjects are cut, with "..." */

/* One query (the dashboard's own order: firing first); everything as text. */
#define DASHBOARD_SQL                                                                                  \
    "select d.state, d.severity, d.family, d.check_name,"                                              \
    " coalesce(trim_scale(d.value)::text || case when d.unit <> '' then ' ' || d.unit else '' end, '-')," \
    " d.expected || case when d.unit <> '' then ' ' || d.unit else '' end,"                            \
    " coalesce(d.subject, ''),"                                                                        \
    " coalesce(to_char(d.since at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS\"Z\"'), ''),"               \
    " coalesce(to_char(d.evaluated_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS\"Z\"'), '')"          \
    " from pepsi.anomaly_dashboard d"

static const char *const headers[N_COLS] = {"STATE", "SEVERITY", "FAMILY", "CHECK",
                                            "VALUE", "EXPECTED", "SUBJECT", "SINCE"};
/* The query's columns 0..7 are the table's; the 9th, evaluated_at, feeds the summary. */

/* The width of a cell as printed (subjects are cut at SUBJECT_MAX). */
static size_t cell_width(int col, const char *v)
{
    size_t n = strlen(v);
    return col == 6 && n > SUBJECT_MAX ? SUBJECT_MAX : n;
}

static void print_cell(FILE *out, int col, const char *v, size_t width, bool last)
{
    if (col == 6 && strlen(v) > SUBJECT_MAX)
        fprintf(out, "%.*s...", SUBJECT_MAX - 3, v);
    else
        fputs(v, out);
    if (!last)
        fprintf(out, "%*s", (int)(width - cell_width(col, v) + 2), "");
}

/* "firing (2 critical), error, ..." counts and the latest evaluation. */
static void print_summary(const PGresult *res, FILE *out)
{
    int n = PQntuples(res), firing = 0, critical = 0, errors = 0, nodata = 0, ok = 0, other = 0;
    const char *latest = "";
    for (int i = 0; i < n; i++) {
        const char *st = PQgetvalue(res, i, 0), *ev = PQgetvalue(res, i, 8);
        if (strcmp(st, "firing") == 0) {
            firing++;
            critical += strcmp(PQgetvalue(res, i, 1), "critical") == 0;
        } else if (strcmp(st, "error") == 0) {
            errors++;
        } else if (strcmp(st, "no_data") == 0) {
            nodata++;
        } else if (strcmp(st, "ok") == 0) {
            ok++;
        } else {
            other++;
        }
        if (strcmp(ev, latest) > 0)
            latest = ev;
    }
    fprintf(out, "pepsi: %d of %d checks firing (%d critical), %d in error, %d without data, %d ok", firing, n,
            critical, errors, nodata, ok);
    if (other > 0)
        fprintf(out, ", %d disabled or not run yet", other);
    if (*latest)
        fprintf(out, "; last run %s\n", latest);
    else
        fputs("; no run yet (pepsi-runner serve runs the checks every ANOMALY_INTERVAL)\n", out);
}

void status_render(const PGresult *res, FILE *out)
{
    size_t width[N_COLS];
    int n = PQntuples(res);
    for (int c = 0; c < N_COLS; c++) {
        width[c] = strlen(headers[c]);
        for (int i = 0; i < n; i++) {
            size_t w = cell_width(c, PQgetvalue(res, i, c));
            if (w > width[c])
                width[c] = w;
        }
    }
    print_summary(res, out);
    fputc('\n', out);
    for (int c = 0; c < N_COLS; c++)
        print_cell(out, -1, headers[c], width[c], c == N_COLS - 1);
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < N_COLS; c++)
            print_cell(out, c, PQgetvalue(res, i, c), width[c], c == N_COLS - 1);
        fputc('\n', out);
    }
}

int status_state(const PGresult *res)
{
    int st = PQfnumber(res, "state"), sev = PQfnumber(res, "severity"), worst = STATUS_OK;
    for (int i = 0; st >= 0 && sev >= 0 && i < PQntuples(res); i++) {
        const char *state = PQgetvalue(res, i, st), *severity = PQgetvalue(res, i, sev);
        int level = STATUS_OK;
        if (strcmp(state, "firing") == 0)
            level = strcmp(severity, "critical") == 0  ? STATUS_CRITICAL
                    : strcmp(severity, "warning") == 0 ? STATUS_WARNING
                                                       : STATUS_OK; /* info */
        else if (strcmp(state, "error") == 0)
            level = STATUS_WARNING; /* a check that cannot run cannot say all is well */
        if (level > worst)
            worst = level;
    }
    return worst;
}

const char *status_state_name(int state)
{
    return state == STATUS_CRITICAL ? "critical" : state == STATUS_WARNING ? "warning" : "ok";
}

/* The same rows for --json, typed, each column named. */
#define CHECKS_JSON_SQL                                                                                 \
    "select check_name, state, severity, family, value, unit, expected, subject, since, evaluated_at,"  \
    " detail, description from pepsi.anomaly_dashboard"

/* The queue's counts per stage and status, summed over tubes. */
#define QUEUE_SQL                                                                                       \
    "select stage, coalesce(sum(messages) filter (where status = 'pending'), 0)::bigint as pending,"   \
    " coalesce(sum(messages) filter (where status = 'running'), 0)::bigint as running,"                \
    " coalesce(sum(messages) filter (where status = 'paused'), 0)::bigint as paused,"                  \
    " coalesce(sum(messages) filter (where status = 'failed'), 0)::bigint as failed,"                  \
    " coalesce(sum(messages) filter (where status = 'timeout'), 0)::bigint as timeout"                 \
    " from pepsi.queue_overview group by stage order by stage"
#define N_QUEUE 6

/* Stages paused by an operator (pepsi.stage_pause, issue 16: on an older
 * schema without it, none) and tubes paused (pepsi.tubes). */
#define PAUSED_STAGES_SQL                                                                               \
    "select stage, paused_at, paused_by, reason from pepsi.stage_pause order by stage"
#define PAUSED_TUBES_SQL "select tube, paused_until from pepsi.tubes where paused_until is not null order by tube"

/* What status reads: each result NULL until read. */
struct reading {
    PGresult *checks, *queue, *stages, *tubes;
};

static PGresult *read_one(PGconn *c, const char *sql, const char *what)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK)
        return r;
    log_error(COMPONENT, "cannot read %s: %s sqlstate=%s", what, pgerr_message(c, r), pgerr_sqlstate(r));
    PQclear(r);
    return NULL;
}

/* 0 when everything was read, -1 (logged) otherwise. */
static int read_all(PGconn *c, bool json, struct reading *rd)
{
    if (conn_exec(c, "set timezone = 'UTC'", COMPONENT) != 0)
        return -1;
    rd->checks = read_one(c, json ? CHECKS_JSON_SQL : DASHBOARD_SQL, "pepsi.anomaly_dashboard");
    if (rd->checks == NULL || (!json && PQnfields(rd->checks) != N_COLS + 1))
        return -1;
    rd->queue = read_one(c, QUEUE_SQL, "pepsi.queue_overview");
    if (rd->queue == NULL)
        return -1;
    PGresult *has = read_one(c, "select to_regclass('pepsi.stage_pause') is not null", "the catalog");
    if (has == NULL)
        return -1;
    bool stages = strcmp(PQgetvalue(has, 0, 0), "t") == 0;
    PQclear(has);
    if (stages && (rd->stages = read_one(c, PAUSED_STAGES_SQL, "pepsi.stage_pause")) == NULL)
        return -1;
    rd->tubes = read_one(c, PAUSED_TUBES_SQL, "pepsi.tubes");
    return rd->tubes == NULL ? -1 : 0;
}

void status_render_queue(const PGresult *queue, const PGresult *stages, const PGresult *tubes, FILE *out)
{
    static const char *const head[N_QUEUE] = {"STAGE", "PENDING", "RUNNING", "PAUSED", "FAILED", "TIMEOUT"};
    int width[N_QUEUE];
    for (int c = 0; c < N_QUEUE; c++) {
        width[c] = (int)strlen(head[c]);
        for (int i = 0; i < PQntuples(queue); i++)
            if (PQgetlength(queue, i, c) > width[c])
                width[c] = PQgetlength(queue, i, c);
    }
    if (PQntuples(queue) == 0) {
        fputs("queue: empty\n", out);
    } else {
        for (int c = 0; c < N_QUEUE; c++)
            fprintf(out, c == 0 ? "%-*s" : "  %*s", width[c], head[c]);
        fputc('\n', out);
        for (int i = 0; i < PQntuples(queue); i++) {
            for (int c = 0; c < N_QUEUE; c++)
                fprintf(out, c == 0 ? "%-*s" : "  %*s", width[c], PQgetvalue(queue, i, c));
            fputc('\n', out);
        }
    }
    for (int i = 0; stages != NULL && i < PQntuples(stages); i++)
        fprintf(out, "stage %s paused since %s by %s%s%s\n", PQgetvalue(stages, i, 0), PQgetvalue(stages, i, 1),
                PQgetvalue(stages, i, 2), PQgetisnull(stages, i, 3) ? "" : ": ", PQgetvalue(stages, i, 3));
    for (int i = 0; tubes != NULL && i < PQntuples(tubes); i++)
        fprintf(out, "tube %s paused until %s\n", PQgetvalue(tubes, i, 0), PQgetvalue(tubes, i, 1));
}

/* { "state": ..., "checks": [...], "queue": {stage: {pending: n, ...}},
 *   "paused": {"stages": [...], "tubes": [...]} } */
static json_t *as_json(const struct reading *rd, int state)
{
    json_t *o = json_object(), *queue = json_object(), *paused = json_object();
    json_t *rows = resjson_rows(rd->queue);
    size_t k;
    json_t *row;
    json_array_foreach(rows, k, row)
    {
        json_t *stage = json_incref(json_object_get(row, "stage"));
        json_object_del(row, "stage");
        json_object_set_new(queue, json_string_value(stage) ? json_string_value(stage) : "", json_incref(row));
        json_decref(stage);
    }
    json_decref(rows);
    json_object_set_new(paused, "stages", rd->stages ? resjson_rows(rd->stages) : json_array());
    json_object_set_new(paused, "tubes", resjson_rows(rd->tubes));
    json_object_set_new(o, "state", json_string(status_state_name(state)));
    json_object_set_new(o, "checks", resjson_rows(rd->checks));
    json_object_set_new(o, "queue", queue);
    json_object_set_new(o, "paused", paused);
    return o;
}

int status_print(const struct conf *conf, bool json, FILE *out)
{
    PGconn *c = conn_open(conf->conninfo, conf->connect_timeout_ms, "pepsi-runner status", COMPONENT, NULL);
    if (c == NULL)
        return STATUS_UNKNOWN; /* conn_open said why */
    struct reading rd = {NULL, NULL, NULL, NULL};
    int code = STATUS_UNKNOWN;
    if (read_all(c, json, &rd) == 0) {
        code = status_state(rd.checks);
        int w;
        if (json) {
            w = resjson_print(as_json(&rd, code), out);
        } else {
            status_render(rd.checks, out);
            fputc('\n', out);
            status_render_queue(rd.queue, rd.stages, rd.tubes, out);
            w = fflush(out) == 0 ? 0 : -1;
        }
        if (w != 0) {
            log_error(COMPONENT, "cannot write the status");
            code = STATUS_UNKNOWN;
        }
    }
    PQclear(rd.checks);
    PQclear(rd.queue);
    PQclear(rd.stages);
    PQclear(rd.tubes);
    PQfinish(c);
    return code;
}

int status_command(const char *config_path, int argc, char **argv)
{
    bool json = argc == 1 && strcmp(argv[0], "--json") == 0;
    if (argc > 0 && !json) {
        fprintf(stderr, "usage: pepsi-runner [-c FILE] status [--json]\n");
        return EXIT_USAGE;
    }
    struct conf conf;
    char err[1024];
    const char *path = config_path ? config_path : conf_default_path();
    int rc = conf_load(path, &conf, err, sizeof err);
    if (rc != 0) {
        log_error("config", "%s", err);
        return rc == CONF_INSECURE ? EXIT_CONFIG : STATUS_UNKNOWN;
    }
    int code = status_print(&conf, json, stdout);
    conf_free(&conf);
    return code;
}
