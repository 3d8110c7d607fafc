/* test_queue_cli.c — issue 16: the command line of `pepsi-runner queue`
 * (verbs, options, ids, durations, limits), its list rendering, the JSON
 * of a result, and `status`'s Nagios state and queue counts. */
#include "cli/queue_cmd.h"
#include "cli/resjson.h"
#include "cli/status.h"
#include "unit.h"

#include <stdlib.h>

/* parse "verb args..." (space-separated, no quoting); 0 or -1; err. */
static int parse(const char *line, struct queue_args *a, char *err, size_t cap)
{
    static char buf[4096];
    char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 64; t = strtok(NULL, " "))
        argv[argc++] = t;
    return queue_parse(argc, argv, a, err, cap);
}

static void bad(const char *line, const char *why, const char *name)
{
    struct queue_args a;
    char err[256] = "";
    CHECK_INT(parse(line, &a, err, sizeof err), -1, "issue 16: \"%s\" is a usage error (%s)", line, name);
    CHECK_CONTAINS(err, why, "issue 16: \"%s\" says why", line);
    queue_args_free(&a);
}

static void test_parse(void)
{
    struct queue_args a;
    char err[256] = "";
    CHECK_INT(parse("list", &a, err, sizeof err), 0, "issue 16: queue list");
    CHECK_INT(a.limit, QUEUE_LIST_DEFAULT, "list --limit defaults to 50");
    CHECK(!a.json && a.stage == NULL && a.status == NULL && a.tube == NULL, "no filter by default");
    queue_args_free(&a);
    CHECK_INT(parse("list --stage s1 --status=failed --tube t --limit 10000 --json", &a, err, sizeof err), 0,
              "issue 16: list with every option, --x V and --x=V");
    CHECK(a.json && strcmp(a.stage, "s1") == 0 && strcmp(a.status, "failed") == 0 && strcmp(a.tube, "t") == 0,
          "the options are read");
    CHECK_INT(a.limit, 10000, "--limit 10000, the maximum");
    queue_args_free(&a);
    CHECK_INT(parse("delete 5 7 9223372036854775807 --reason spam", &a, err, sizeof err), 0, "delete ids --reason");
    CHECK_INT((int64_t)a.n_ids, 3, "three ids");
    CHECK(a.ids[0] == 5 && a.ids[2] == INT64_MAX && strcmp(a.reason, "spam") == 0, "ids up to a bigint's max");
    queue_args_free(&a);
    CHECK_INT(parse("pause --tube t --for 90s", &a, err, sizeof err), 0, "pause --tube --for");
    CHECK_INT(a.ms, 90000, "issue 16: --for through conf_parse_duration");
    CHECK(a.stage == NULL && strcmp(a.tube, "t") == 0, "a tube, no stage");
    queue_args_free(&a);
    CHECK_INT(parse("pause s2 --reason maintenance", &a, err, sizeof err), 0, "pause STAGE --reason");
    CHECK(a.verb == QV_PAUSE && strcmp(a.stage, "s2") == 0 && a.tube == NULL, "a stage, no tube");
    queue_args_free(&a);
    CHECK_INT(parse("resume --tube t", &a, err, sizeof err), 0, "resume --tube");
    queue_args_free(&a);
    CHECK_INT(parse("purge --older-than 7d", &a, err, sizeof err), 0, "purge --older-than");
    CHECK_INT(a.ms, 7 * 86400000LL, "7d in ms");
    queue_args_free(&a);
    CHECK_INT(parse("move 3 --to b", &a, err, sizeof err), 0, "move --to");
    queue_args_free(&a);

    bad("", "give a verb", "no verb");
    bad("frobnicate", "unknown verb", "unknown verb");
    bad("list --limit 0", "--limit must be 1 to 10000", "limit 0");
    bad("list --limit 10001", "--limit must be 1 to 10000", "limit over the maximum");
    bad("list --limit -3", "--limit must be", "negative limit");
    bad("list --status done", "--status must be", "unknown status");
    bad("list --stage", "--stage needs a value", "option without value");
    bad("list --stage=", "must not be empty", "empty value");
    bad("list --stage a --stage b", "given twice", "option twice");
    bad("list --reason x", "queue list takes no option --reason", "another verb's option");
    bad("list x", "takes no argument", "list positional");
    bad("list -c f", "global options come before", "a global option after the verb");
    bad("show", "give the message id", "show without id");
    bad("show 1 2", "takes one id", "show two ids");
    bad("retry 0", "not a message id", "id 0");
    bad("retry -4", "not a message id", "negative id");
    bad("retry 12abc", "not a message id", "trailing garbage");
    bad("retry 9223372036854775808", "not a message id", "id over a bigint");
    bad("retry +4", "not a message id", "a sign");
    bad("delete 1", "needs --reason", "delete without reason");
    bad("move 1", "needs --to", "move without --to");
    bad("pause", "give one stage, or --tube", "pause nothing");
    bad("pause a b", "give one stage", "pause two stages");
    bad("pause --tube t", "needs --for", "tube pause without --for");
    bad("pause --tube t --for 0", "at least 1s", "a pause of 0");
    bad("pause --tube t --for 500ms", "at least 1s", "under a second");
    bad("pause --tube t --for -5s", "at least 1s", "negative duration");
    bad("pause --tube t --for soon", "duration", "not a duration");
    bad("pause --tube t --for 100000d", "too long", "a pause over INT_MAX seconds");
    bad("pause a --for 1h", "give --tube", "--for with a stage");
    bad("pause a --tube t --for 1h", "takes no stage", "stage and tube");
    bad("resume --tube t --reason x", "queue resume takes no option --reason", "resume with a reason");
    bad("purge", "needs --older-than", "purge without age");
    bad("purge --older-than 0", "at least 1s", "purge everything");
    bad("show 1 --json=yes", "takes no value", "--json=yes");

    /* 10,000 ids pass, 10,001 do not. */
    char **argv = malloc(10003 * sizeof *argv);
    char *ids = malloc(10003 * 8);
    argv[0] = "retry";
    for (int i = 1; i <= 10001; i++) {
        snprintf(ids + i * 8, 8, "%d", i % 1000000);
        argv[i] = ids + i * 8;
    }
    CHECK_INT(queue_parse(10001, argv, &a, err, sizeof err), 0, "issue 16: 10,000 ids pass");
    queue_args_free(&a);
    CHECK_INT(queue_parse(10002, argv, &a, err, sizeof err), -1, "issue 16: 10,001 ids are refused");
    CHECK_CONTAINS(err, "at most 10000 ids", "saying the limit");
    queue_args_free(&a);
    free(ids);
    free(argv);
}

static void test_age(void)
{
    char b[32];
    CHECK_STR(queue_age(0, b, sizeof b), "0s", "age 0");
    CHECK_STR(queue_age(-5, b, sizeof b), "0s", "a clock skew reads 0s");
    CHECK_STR(queue_age(119, b, sizeof b), "119s", "seconds up to 2 minutes");
    CHECK_STR(queue_age(7199, b, sizeof b), "119m", "minutes up to 2 hours");
    CHECK_STR(queue_age(7200, b, sizeof b), "2h", "then hours");
    CHECK_STR(queue_age(3 * 86400, b, sizeof b), "3d", "then days");
}

/* A result of text columns (or typed: oids), built by hand. */
static PGresult *result(int ncol, const char *const *names, const Oid *oids, const char *const *cells, int nrow)
{
    PGresAttDesc att[16];
    memset(att, 0, sizeof att);
    for (int c = 0; c < ncol; c++) {
        att[c].name = (char *)names[c];
        att[c].typid = oids ? oids[c] : 25;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    if (res == NULL || !PQsetResultAttrs(res, ncol, att))
        return res;
    for (int i = 0; i < nrow; i++)
        for (int c = 0; c < ncol; c++) {
            const char *v = cells[i * ncol + c];
            PQsetvalue(res, i, c, (char *)v, v ? (int)strlen(v) : -1);
        }
    return res;
}

static char *capture(void (*fn)(const PGresult *, FILE *), const PGresult *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    fn(r, f);
    fclose(f);
    return buf;
}

static void test_list(void)
{
    static const char *const names[] = {"workqueue_id", "tube", "stage", "status", "age_seconds",
                                        "envelope_sender", "subject"};
    static const char *const cells[] = {
        "7",   "default", "a",     "failed",  "30",   "ann@x.org", "short",
        "123", "t",       "stage", "pending", "9000", "",          "a subject much longer than the forty characters shown",
    };
    PGresult *r = result(7, names, NULL, cells, 2);
    char *out = capture(queue_render_list, r);
    CHECK_CONTAINS(out, "ID   TUBE     STAGE  STATUS   AGE  SENDER     SUBJECT\n", "issue 16: a header, columns as wide as their widest cell");
    CHECK_CONTAINS(out, "\n7    default  a      failed   30s  ann@x.org  short\n", "issue 16: id, tube, stage, status, age, sender, subject");
    CHECK_CONTAINS(out, "\n123  t        stage  pending  2h              a subject much longer than the forty ...\n",
                   "issue 16: a long subject is clipped at 40 characters, an age in hours");
    free(out);
    PQclear(r);
}

static void test_resjson(void)
{
    static const char *const names[] = {"id", "ok", "ratio", "state", "name", "gone", "nan"};
    static const Oid oids[] = {20, 16, 1700, 3802, 25, 25, 701};
    static const char *const cells[] = {"42", "t", "0.25", "{\"a\": [1]}", "x\"y", NULL, "NaN"};
    PGresult *r = result(7, names, oids, cells, 1);
    json_t *rows = resjson_rows(r);
    char *s = json_dumps(rows, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK_STR(s, "[{\"id\":42,\"ok\":true,\"ratio\":0.25,\"state\":{\"a\":[1]},\"name\":\"x\\\"y\",\"gone\":null,\"nan\":\"NaN\"}]",
              "issue 16: --json types each column: integer, boolean, number, parsed jsonb, text, null; NaN stays text");
    free(s);
    json_decref(rows);
    PQclear(r);
}

static int state_of(const char *const *cells, int n)
{
    static const char *const names[] = {"state", "severity"};
    PGresult *r = result(2, names, NULL, cells, n);
    int st = status_state(r);
    PQclear(r);
    return st;
}

static void test_status_state(void)
{
    static const char *const ok[] = {"ok", "critical", "no_data", "warning", "pending", "critical",
                                     "disabled", "critical", "firing", "info"};
    CHECK_INT(state_of(ok, 5), STATUS_OK, "issue 16: nothing firing (an info check may): 0");
    static const char *const warn[] = {"ok", "critical", "firing", "warning", "firing", "info"};
    CHECK_INT(state_of(warn, 3), STATUS_WARNING, "issue 16: a warning check firing: 1");
    static const char *const err[] = {"error", "info"};
    CHECK_INT(state_of(err, 1), STATUS_WARNING, "issue 16: a check in error: 1");
    static const char *const crit[] = {"firing", "warning", "firing", "critical", "ok", "warning"};
    CHECK_INT(state_of(crit, 3), STATUS_CRITICAL, "issue 16: a critical check firing: 2, whatever else fires");
    CHECK_INT(state_of(crit, 0), STATUS_OK, "no checks: 0");
    CHECK_STR(status_state_name(STATUS_CRITICAL), "critical", "the JSON's state names");
    CHECK_STR(status_state_name(STATUS_WARNING), "warning", "warning");
    CHECK_STR(status_state_name(STATUS_OK), "ok", "ok");
}

static void test_status_queue(void)
{
    static const char *const qn[] = {"stage", "pending", "running", "paused", "failed", "timeout"};
    static const char *const q[] = {"a", "12", "0", "0", "3", "0", "long-stage", "0", "1", "0", "0", "100000"};
    static const char *const sn[] = {"stage", "paused_at", "paused_by", "reason"};
    static const char *const s[] = {"b", "2026-12-01 10:00:00+00", "ops", "maintenance"};
    static const char *const tn[] = {"tube", "paused_until"};
    static const char *const t[] = {"slow", "2026-12-01 11:00:00+00"};
    PGresult *qr = result(6, qn, NULL, q, 2), *sr = result(4, sn, NULL, s, 1), *tr = result(2, tn, NULL, t, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    status_render_queue(qr, sr, tr, f);
    fclose(f);
    CHECK_CONTAINS(buf, "STAGE       PENDING  RUNNING  PAUSED  FAILED  TIMEOUT\n"
                        "a                12        0       0       3        0\n"
                        "long-stage        0        1       0       0   100000\n",
                   "issue 16: counts per stage and status, right-aligned");
    CHECK_CONTAINS(buf, "stage b paused since 2026-12-01 10:00:00+00 by ops: maintenance\n", "issue 16: paused stages");
    CHECK_CONTAINS(buf, "tube slow paused until 2026-12-01 11:00:00+00\n", "issue 16: paused tubes");
    free(buf);
    PQclear(qr);
    qr = result(6, qn, NULL, q, 0);
    buf = NULL;
    f = open_memstream(&buf, &len);
    status_render_queue(qr, NULL, tr, f);
    fclose(f);
    CHECK_CONTAINS(buf, "queue: empty\ntube slow", "an empty queue says so; no stage_pause table: no stage lines");
    free(buf);
    PQclear(qr);
    PQclear(sr);
    PQclear(tr);
}

int main(void)
{
    test_parse();
    test_age();
    test_list();
    test_resjson();
    test_status_state();
    test_status_queue();
    return unit_done();
}
