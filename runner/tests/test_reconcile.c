/* test_reconcile.c — the schedule's keys (RECONCILE_INTERVAL,
 * ANOMALY_INTERVAL), the stage limits a pass is given, the back-fill URL
 * template, and the status table. No database. */
#include "lib/conf.h"
#include "dispatch/reconcile.h"
#include "stages/http_get.h"
#include "cli/status.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_conf_keys(void)
{
    struct conf c;
    char err[512] = "";
    CHECK_INT(conf_load_string("[pepsi-dispatch]\n", "t.conf", &c, err, sizeof err), 0, "a bare [pepsi-dispatch] loads");
    CHECK_INT(c.reconcile_interval_ms, 300000, "W-23: RECONCILE_INTERVAL defaults to 5 minutes");
    CHECK_INT(c.anomaly_interval_ms, 60000, "W-37: ANOMALY_INTERVAL defaults to a minute");
    conf_free(&c);
    CHECK_INT(conf_load_string("[pepsi-dispatch]\nRECONCILE_INTERVAL = 30s\nANOMALY_INTERVAL = 2min\n", "t.conf", &c,
                               err, sizeof err),
              0, "both keys set");
    CHECK_INT(c.reconcile_interval_ms, 30000, "RECONCILE_INTERVAL = 30s");
    CHECK_INT(c.anomaly_interval_ms, 120000, "ANOMALY_INTERVAL = 2min");
    conf_free(&c);
    CHECK_INT(conf_load_string("[pepsi-dispatch]\nRECONCILE_INTERVAL = 0s\n", "t.conf", &c, err, sizeof err), -1,
              "RECONCILE_INTERVAL = 0s is refused (a duration > 0)");
    CHECK_CONTAINS(err, "t.conf:2: key \"RECONCILE_INTERVAL\" in [pepsi-dispatch]", "the error names file, line and key");
    CHECK_INT(conf_load_string("[pepsi-dispatch]\nANOMALY_INTERVAL = soon\n", "t.conf", &c, err, sizeof err), -1,
              "ANOMALY_INTERVAL = soon is refused");
    CHECK_INT(conf_load("conf/pepsi.conf", &c, err, sizeof err), 0, "conf/pepsi.conf documents the keys and loads");
    CHECK_INT(c.reconcile_interval_ms, 300000, "conf/pepsi.conf keeps the default RECONCILE_INTERVAL");
    conf_free(&c);
}

static void test_limits(void)
{
    struct conf c;
    char err[512] = "";
    CHECK_INT(conf_load_string("[stage-a]\nPROGRAM = p\nMAX_RUNTIME = 30s\nQUEUE_LIMIT = 2\n"
                               "[stage-b.c]\nPROGRAM = p\n",
                               "t.conf", &c, err, sizeof err),
              0, "two stages");
    char *json = reconcile_limits_json(&c);
    CHECK_STR(json, "{\"a\":{\"max_runtime_ms\":30000,\"queue_limit\":2},"
                    "\"b.c\":{\"max_runtime_ms\":600000,\"queue_limit\":512}}",
              "the pass gets each stage's MAX_RUNTIME and QUEUE_LIMIT; unset, the adaptive hand-out's "
              "maximum (issue 19)");
    free(json);
    conf_free(&c);
    json = reconcile_limits_json(NULL);
    CHECK_STR(json, "{}", "no stage table: no limits");
    free(json);
}

static void test_url(void)
{
    char *u = http_get_url("https://api.example.com/v1/events/{external_id}", "acme", "evt_0042");
    CHECK_STR(u, "https://api.example.com/v1/events/evt_0042", "W-33: {external_id} is replaced");
    free(u);
    u = http_get_url("http://h/{provider}/e?id={external_id}&again={external_id}", "a b", "x/y?z&é");
    CHECK_STR(u, "http://h/a%20b/e?id=x%2Fy%3Fz%26%C3%A9&again=x%2Fy%3Fz%26%C3%A9",
              "values are percent-encoded, each placeholder replaced");
    free(u);
    u = http_get_url("http://h/fixed", "p", "e");
    CHECK_STR(u, "http://h/fixed", "a URL without placeholders is kept");
    free(u);
    u = http_get_url("http://h/{external_i", "p", "e");
    CHECK_STR(u, "http://h/{external_i", "a broken placeholder is left alone");
    free(u);
}

/* A dashboard result built by hand: state, severity, family, check, value,
 * expected, subject, since, evaluated_at. */
static PGresult *dashboard(const char *const rows[][9], int n)
{
    PGresAttDesc att[9];
    static const char *const names[9] = {"state", "severity", "family", "check_name", "value",
                                         "expected", "subject", "since", "evaluated_at"};
    memset(att, 0, sizeof att);
    for (int c = 0; c < 9; c++) {
        att[c].name = (char *)names[c];
        att[c].typid = 25;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    if (res == NULL || !PQsetResultAttrs(res, 9, att))
        return res;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 9; c++)
            PQsetvalue(res, i, c, (char *)rows[i][c], (int)strlen(rows[i][c]));
    return res;
}

static char *render(const PGresult *res)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    status_render(res, f);
    fclose(f);
    return buf;
}

static void test_status(void)
{
    static const char *const rows[][9] = {
        {"firing", "critical", "referential", "messages_missing_event", "2 messages", "<= 0 messages",
         "message 42", "2026-11-30 07:00:00Z", "2026-11-30 07:05:00Z"},
        {"ok", "warning", "latency", "event_latency_p95", "1.5 s", "<= 300 s",
         "a-provider-with-a-very-long-name-that-goes-on-and-on", "2026-11-30 06:00:00Z", "2026-11-30 07:05:00Z"},
        {"no_data", "warning", "volume", "duplicate_rate", "-", "<= 0.5 ratio", "", "2026-11-30 06:00:00Z",
         "2026-11-30 07:05:00Z"},
    };
    PGresult *res = dashboard(rows, 3);
    CHECK(res != NULL && PQntuples(res) == 3, "a dashboard of three rows");
    char *out = render(res);
    CHECK_CONTAINS(out, "pepsi: 1 of 3 checks firing (1 critical), 0 in error, 1 without data, 1 ok; last run 2026-11-30 07:05:00Z\n",
                   "W-42: the summary answers at a glance");
    CHECK_CONTAINS(out, "\nSTATE    SEVERITY  FAMILY       CHECK                   VALUE       EXPECTED       SUBJECT", "a header row, columns as wide as their widest cell");
    CHECK_CONTAINS(out, "\nfiring   critical  referential  messages_missing_event  2 messages  <= 0 messages  message 42",
                   "W-42: each check with its value, range, subject");
    CHECK_CONTAINS(out, "a-provider-with-a-very-long-name-that...  2026-11-30 06:00:00Z", "a long subject is cut at 40 characters");
    free(out);
    PQclear(res);
    static const char *const pending[][9] = {
        {"pending", "warning", "latency", "x", "-", "<= 1", "", "", ""},
    };
    res = dashboard(pending, 1);
    out = render(res);
    CHECK_CONTAINS(out, "0 ok, 1 disabled or not run yet; no run yet", "before any run, it says so");
    free(out);
    PQclear(res);
}

int main(void)
{
    test_conf_keys();
    test_limits();
    test_url();
    test_status();
    return unit_done();
}
