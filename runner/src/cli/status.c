/* cli/status.c — see status.h. */
#include "cli/status.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgerr.h"

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

int status_print(const struct conf *conf, FILE *out)
{
    PGconn *c = conn_open(conf->conninfo, conf->connect_timeout_ms, "pepsi-runner status", COMPONENT, NULL);
    if (c == NULL)
        return 1; /* conn_open said why */
    PGresult *res = PQexec(c, DASHBOARD_SQL);
    int code = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != N_COLS + 1) {
        log_error(COMPONENT, "cannot read pepsi.anomaly_dashboard: %s sqlstate=%s", pgerr_message(c, res),
                  pgerr_sqlstate(res));
        code = 1;
    } else {
        status_render(res, out);
        if (fflush(out) != 0) {
            log_error(COMPONENT, "cannot write the dashboard");
            code = 1;
        }
    }
    PQclear(res);
    PQfinish(c);
    return code;
}
