/* test_proto.c — the worker line protocol (D-21..D-28). */
#include "lib/proto.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static enum proto_line_kind parse(const char *line, struct proto_status *st)
{
    return proto_parse_line(line, strlen(line), st);
}

static void test_ready(void)
{
    struct proto_status st;
    CHECK_INT(parse("ready", &st), PROTO_READY, "D-25: \"ready\" is PROTO_READY");
    CHECK_INT(parse("ready\r", &st), PROTO_READY, "D-25: \"ready\\r\" is PROTO_READY");
    CHECK_INT(parse("ready ", &st), PROTO_BAD, "D-25: \"ready \" is PROTO_BAD");
    CHECK_INT(parse("Ready", &st), PROTO_BAD, "D-25: \"Ready\" is PROTO_BAD");
    CHECK_INT(parse("readyx", &st), PROTO_BAD, "D-25: \"readyx\" is PROTO_BAD");
    CHECK_INT(parse("ready\r\r", &st), PROTO_BAD, "D-25: only one trailing \\r is dropped");
    CHECK_INT(parse("ready recycles", &st), PROTO_READY_RECYCLES,
              "D-68: \"ready recycles\" is a worker that replaces its own process");
    CHECK_INT(parse("ready recycles\r", &st), PROTO_READY_RECYCLES, "D-68: \"ready recycles\\r\" too");
    CHECK_INT(parse("ready recycles ", &st), PROTO_BAD, "D-68: \"ready recycles \" is PROTO_BAD");
    CHECK_INT(parse("ready recycle", &st), PROTO_BAD, "D-68: \"ready recycle\" is PROTO_BAD");
    CHECK_INT(parse("ready  recycles", &st), PROTO_BAD, "D-68: two blanks are PROTO_BAD");
}

static void status_ok(const char *line, int want)
{
    struct proto_status st;
    enum proto_line_kind k = parse(line, &st);
    CHECK_INT(k, PROTO_STATUS, "D-24: \"%s\" is PROTO_STATUS", line);
    CHECK_INT(st.status, want, "D-24: \"%s\" has status %d", line, want);
    CHECK(!st.has_report && st.report == NULL && st.n_report == 0,
          "D-24: \"%s\" has no report", line);
    proto_status_free(&st);
}

static void status_bad(const char *line, const char *why)
{
    struct proto_status st;
    CHECK_INT(parse(line, &st), PROTO_BAD, "D-27: %s is PROTO_BAD", why);
    CHECK(st.report == NULL && !st.has_report, "D-27: %s leaves *out empty", why);
}

static void test_status(void)
{
    status_ok("0", 0);
    status_ok("1", 1);
    status_ok("75", 75);
    status_ok("74", 74);
    status_ok("255", 255);
    status_ok("000", 0);
    status_ok("0\r", 0);
    status_bad("256", "status 256");
    status_bad("999", "status 999");
    status_bad("-1", "a negative status");
    status_bad("+1", "a signed status");
    status_bad("01a", "a status with letters (\"01a\")");
    status_bad("0x", "\"0x\"");
    status_bad("0x1", "a hexadecimal status");
    status_bad("abc", "a line of letters");
    status_bad("", "an empty line");
    status_bad("\r", "a line of just \\r");
    status_bad(" 0", "a status after a blank");
    status_bad("0000", "four digits");
    status_bad("0\t[]", "a tab before the report");
    status_bad("1.0", "a fractional status");
    struct proto_status st;
    CHECK_INT(proto_parse_line("0\0", 2, &st), PROTO_BAD, "D-27: a NUL after the status is PROTO_BAD");
    CHECK_INT(proto_parse_line("7", 1, NULL), PROTO_BAD, "a NULL out is PROTO_BAD");
}

static void test_report_valid(void)
{
    struct proto_status st;
    const char *line = "0 [[\"a\",12],[\"b.c-d_e\",3]]";
    CHECK_INT(parse(line, &st), PROTO_STATUS, "D-26: status with report is PROTO_STATUS");
    CHECK(st.has_report && st.report_ok, "D-26: the report parses");
    CHECK_INT(st.n_report, 2, "D-26: two report entries");
    if (st.n_report == 2) {
        CHECK_STR(st.report[0].stage, "a", "D-26: first stage");
        CHECK_INT(st.report[0].usec, 12, "D-26: first microseconds");
        CHECK_STR(st.report[1].stage, "b.c-d_e", "D-26: second stage");
        CHECK_INT(st.report[1].usec, 3, "D-26: second microseconds");
    }
    proto_status_free(&st);
    CHECK(st.report == NULL && st.n_report == 0 && !st.has_report,
          "proto_status_free zeroes the status");

    CHECK_INT(parse("0 []", &st), PROTO_STATUS, "D-26: an empty report array");
    CHECK(st.report_ok && st.n_report == 0, "D-26: an empty report is ok and has no entries");
    proto_status_free(&st);

    CHECK_INT(parse("75 [[\"x\",0]]\r", &st), PROTO_STATUS, "D-26: report with CRLF");
    CHECK(st.report_ok && st.n_report == 1 && st.status == 75, "D-26: CRLF report parses");
    proto_status_free(&st);

    char name63[80];
    memset(name63, 'n', 63);
    name63[63] = '\0';
    char line63[160];
    snprintf(line63, sizeof(line63), "1 [[\"%s\",9223372036854775807]]", name63);
    CHECK_INT(parse(line63, &st), PROTO_STATUS, "D-26: 63-character stage name");
    CHECK(st.report_ok && st.n_report == 1 && strcmp(st.report[0].stage, name63) == 0
              && st.report[0].usec == INT64_MAX,
          "D-26: 63-character stage and INT64_MAX microseconds kept");
    proto_status_free(&st);

    CHECK_INT(parse("0  [[\"a\",1]]", &st), PROTO_STATUS, "D-26: two spaces before the report");
    CHECK(st.report_ok, "D-26: blanks around the JSON are tolerated");
    proto_status_free(&st);
}

static void report_bad(const char *line, int status, const char *why, const char *msg)
{
    struct proto_status st;
    CHECK_INT(parse(line, &st), PROTO_STATUS, "D-28: %s: still PROTO_STATUS", why);
    CHECK_INT(st.status, status, "D-28: %s: status %d kept", why, status);
    CHECK(st.has_report && !st.report_ok, "D-28: %s: report dropped", why);
    CHECK(st.report == NULL && st.n_report == 0, "D-28: %s: no entries", why);
    CHECK_CONTAINS(st.report_error, msg, "D-28: %s: report_error says why", why);
    proto_status_free(&st);
}

static void test_report_invalid(void)
{
    report_bad("0 not json", 0, "not JSON", "not valid JSON");
    report_bad("3 [[\"a\",1]", 3, "truncated JSON", "not valid JSON");
    report_bad("0 [[\"a\",1]] x", 0, "text after the JSON", "not valid JSON");
    report_bad("0 {\"a\":1}", 0, "an object", "not a JSON array");
    report_bad("0 [1,2]", 0, "elements not pairs", "element 1");
    report_bad("0 [[\"a\",1],[\"b\"]]", 0, "a one-element pair", "element 2");
    report_bad("0 [[\"a\",1,2]]", 0, "a three-element entry", "element 1");
    report_bad("0 [[1,\"a\"]]", 0, "swapped pair", "stage");
    report_bad("75 [[\"a\",-1]]", 75, "negative microseconds", "microseconds");
    report_bad("0 [[\"a\",1.5]]", 0, "fractional microseconds", "microseconds");
    report_bad("0 [[\"a\",\"1\"]]", 0, "microseconds as a string", "microseconds");
    report_bad("0 [[\"-a\",1]]", 0, "stage name starting with '-'", "stage name");
    report_bad("0 [[\"a b\",1]]", 0, "stage name with a blank", "stage name");
    report_bad("0 [[\"\",1]]", 0, "empty stage name", "stage name");
    report_bad("0 [[\"a\\u0000b\",1]]", 0, "stage name with a NUL", "not valid JSON");
    char line[200], name[70];
    memset(name, 'n', 64);
    name[64] = '\0';
    snprintf(line, sizeof(line), "0 [[\"%s\",1]]", name);
    report_bad(line, 0, "64-character stage name", "stage name");
    report_bad("0 ", 0, "an empty report", "empty");
    report_bad("1 [[\"a\",1],[\"b\",-2]]", 1, "a bad second entry", "element 2");
}

static void test_ids(void)
{
    int64_t id = -7;
    CHECK(proto_parse_id("1", 1, &id) == 0 && id == 1, "D-24: id 1");
    CHECK(proto_parse_id("42\r", 3, &id) == 0 && id == 42, "D-24: id with \\r");
    CHECK(proto_parse_id("9223372036854775807", 19, &id) == 0 && id == INT64_MAX,
          "D-24: id INT64_MAX");
    id = -7;
    CHECK(proto_parse_id("0", 1, &id) == -1 && id == -7, "D-24: id 0 rejected, id untouched");
    CHECK(proto_parse_id("-5", 2, &id) == -1, "D-24: negative id rejected");
    CHECK(proto_parse_id("+5", 2, &id) == -1, "D-24: signed id rejected");
    CHECK(proto_parse_id("9223372036854775808", 19, &id) == -1, "D-24: id overflow rejected");
    CHECK(proto_parse_id("99999999999999999999", 20, &id) == -1, "D-24: 20-digit id rejected");
    CHECK(proto_parse_id("12a", 3, &id) == -1, "D-24: id with letters rejected");
    CHECK(proto_parse_id("abc", 3, &id) == -1, "D-24: letters rejected");
    CHECK(proto_parse_id("", 0, &id) == -1, "D-24: empty id rejected");
    CHECK(proto_parse_id(" 1", 2, &id) == -1, "D-24: id after a blank rejected");
    CHECK(proto_parse_id("12", 1, &id) == 0 && id == 1, "D-24: only len bytes are read");

    char buf[64];
    int64_t ids[] = {1, 42, INT64_MAX};
    size_t n = proto_format_ids(buf, sizeof(buf), ids, 3);
    CHECK_INT(n, strlen("1\n42\n9223372036854775807\n"), "D-66: ids formatted, length returned");
    CHECK_STR(buf, "1\n42\n9223372036854775807\n", "D-66: one id per line in a single buffer");
    CHECK_INT(proto_format_ids(buf, 5, ids, 3), 0, "D-66: ids that do not fit give 0");
    CHECK_INT(proto_format_ids(buf, 5, ids, 2), 0, "D-66: no room for the terminator gives 0");
    CHECK_INT(proto_format_ids(buf, 6, ids, 2), 5, "D-66: exact fit with the terminator");
    CHECK_INT(proto_format_ids(buf, 0, ids, 1), 0, "D-66: zero capacity gives 0");
}

static void roundtrip(int status, const struct proto_report_entry *rep, size_t n, const char *want)
{
    char buf[512];
    size_t len = proto_format_status(buf, sizeof(buf), status, rep, n);
    CHECK_STR(buf, want, "D-26: format_status(%d, %zu entries)", status, n);
    CHECK_INT(len, strlen(want), "D-26: format_status returns the length");
    struct proto_status st;
    if (len == 0)
        return;
    enum proto_line_kind k = proto_parse_line(buf, len - 1, &st);
    CHECK(k == PROTO_STATUS && st.status == status, "D-26: %d round-trips", status);
    CHECK(st.has_report == (n > 0) && (n == 0 || st.report_ok) && st.n_report == n,
          "D-26: the report of %d round-trips", status);
    for (size_t i = 0; i < n && i < st.n_report; i++)
        CHECK(strcmp(st.report[i].stage, rep[i].stage) == 0 && st.report[i].usec == rep[i].usec,
              "D-26: entry %zu round-trips", i);
    proto_status_free(&st);
}

static void test_format_status(void)
{
    struct proto_report_entry rep[3] = {
        {"a", 12}, {"b", 3}, {"Stage_9.x-y", INT64_MAX},
    };
    roundtrip(0, NULL, 0, "0\n");
    roundtrip(255, NULL, 0, "255\n");
    roundtrip(0, rep, 2, "0 [[\"a\",12],[\"b\",3]]\n");
    roundtrip(75, rep, 3, "75 [[\"a\",12],[\"b\",3],[\"Stage_9.x-y\",9223372036854775807]]\n");
    char buf[32];
    CHECK_INT(proto_format_status(buf, sizeof(buf), 256, NULL, 0), 0, "status 256 not formatted");
    CHECK_INT(proto_format_status(buf, sizeof(buf), -1, NULL, 0), 0, "status -1 not formatted");
    CHECK_INT(proto_format_status(buf, 8, 0, rep, 2), 0, "a report that does not fit gives 0");
    CHECK_INT(proto_format_status(buf, 2, 0, NULL, 0), 0, "no room for the terminator gives 0");
    struct proto_report_entry bad[1] = {{"-x", 1}};
    CHECK_INT(proto_format_status(buf, sizeof(buf), 0, bad, 1), 0, "an invalid stage is refused");
    struct proto_report_entry neg[1] = {{"x", -1}};
    CHECK_INT(proto_format_status(buf, sizeof(buf), 0, neg, 1), 0, "negative usec is refused");
}

/* Collects lines fed through a line_buf. */
struct lines {
    char got[16][128];
    size_t n;
    size_t stop_after;              /* return 1 after this many lines; 0: never */
};

static int collect_cb(void *arg, const char *line, size_t len)
{
    struct lines *l = arg;
    if (l->n < 16) {
        snprintf(l->got[l->n], sizeof(l->got[0]), "%.*s", (int)(len < 127 ? len : 127), line);
        l->n++;
    }
    return l->stop_after && l->n >= l->stop_after ? 1 : 0;
}

static void test_line_buf(void)
{
    struct line_buf lb = {0};
    struct lines l = {0};
    CHECK_INT(line_buf_feed(&lb, "rea", 3, collect_cb, &l), 0, "line_buf: partial feed");
    CHECK_INT(l.n, 0, "line_buf: no line before the newline");
    CHECK_INT(line_buf_feed(&lb, "dy\n0 [[\"a\",1]]\n7", 16, collect_cb, &l), 0,
              "line_buf: feed completing a line");
    CHECK_INT(l.n, 2, "line_buf: two lines delivered");
    CHECK_STR(l.got[0], "ready", "line_buf: a line split across feeds is joined");
    CHECK_STR(l.got[1], "0 [[\"a\",1]]", "line_buf: second line of the same feed");
    CHECK_INT(line_buf_feed(&lb, "5\n\n1\r\n", 6, collect_cb, &l), 0, "line_buf: more lines");
    CHECK_INT(l.n, 5, "line_buf: five lines in all");
    CHECK_STR(l.got[2], "75", "line_buf: line split after one byte");
    CHECK_STR(l.got[3], "", "line_buf: an empty line is delivered");
    CHECK_STR(l.got[4], "1\r", "line_buf: the \\r is left for proto_parse_line");
    CHECK_INT(lb.len, 0, "line_buf: nothing left over");
    line_buf_free(&lb);
    CHECK(lb.buf == NULL && lb.len == 0 && lb.cap == 0, "line_buf_free zeroes the struct");

    struct lines s = {.stop_after = 1};
    CHECK_INT(line_buf_feed(&lb, "a\nb\nc", 5, collect_cb, &s), 1,
              "line_buf: the callback's non-zero value is returned");
    CHECK_INT(s.n, 1, "line_buf: feeding stops at that line");
    s.stop_after = 0;
    CHECK_INT(line_buf_feed(&lb, "\n", 1, collect_cb, &s), 0, "line_buf: a later feed resumes");
    CHECK(s.n == 3 && strcmp(s.got[1], "b") == 0 && strcmp(s.got[2], "c") == 0,
          "line_buf: the lines after the stop are kept, in order");
    line_buf_free(&lb);
}

static void test_line_buf_overflow(void)
{
    struct line_buf lb = {0};
    struct lines l = {0};
    size_t big = PROTO_MAX_LINE + 10;
    char *data = malloc(big);
    if (!data) {
        CHECK(false, "malloc");
        return;
    }
    memset(data, 'x', big);
    CHECK_INT(line_buf_feed(&lb, data, PROTO_MAX_LINE, collect_cb, &l), 0,
              "D-27: a line of PROTO_MAX_LINE bytes without newline is still fine");
    CHECK_INT(line_buf_feed(&lb, "x", 1, collect_cb, &l), -1,
              "D-27: a line growing past PROTO_MAX_LINE is -1");
    CHECK_INT(l.n, 0, "D-27: the overlong line is not delivered");
    line_buf_free(&lb);

    data[PROTO_MAX_LINE] = '\n';
    CHECK_INT(line_buf_feed(&lb, data, PROTO_MAX_LINE + 1, collect_cb, &l), 0,
              "a line of exactly PROTO_MAX_LINE bytes is accepted");
    CHECK(l.n == 1, "that line is delivered");
    line_buf_free(&lb);

    data[PROTO_MAX_LINE] = 'x';
    data[PROTO_MAX_LINE + 1] = '\n';
    l.n = 0;
    CHECK_INT(line_buf_feed(&lb, "ok\n", 3, collect_cb, &l), 0, "a short line first");
    CHECK_INT(line_buf_feed(&lb, data, PROTO_MAX_LINE + 2, collect_cb, &l), -1,
              "D-27: a complete line longer than PROTO_MAX_LINE is -1 too");
    CHECK_INT(l.n, 1, "the lines before it were delivered");
    free(data);
    line_buf_free(&lb);
}

int main(void)
{
    test_ready();
    test_status();
    test_report_valid();
    test_report_invalid();
    test_ids();
    test_format_status();
    test_line_buf();
    test_line_buf_overflow();
    return unit_done();
}
