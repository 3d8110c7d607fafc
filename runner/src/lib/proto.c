/* lib/proto.c — the worker line protocol (D-21..D-28), both sides.
 *
 * A worker line, after one trailing '\r' is dropped, is
 *   "ready"                     exactly: PROTO_READY;
 *   "ready recycles"            exactly: PROTO_READY_RECYCLES, a worker that
 *                               replaces its own process every
 *                               PEPSI_MAX_MESSAGES messages (D-68, issue 16);
 *   STATUS                      1 to 3 decimal digits, 0..255, no sign, no
 *                               blanks before it: PROTO_STATUS (D-24);
 *   STATUS ' ' REPORT           the report is everything after that first
 *                               space, parsed by jansson (so blanks around
 *                               the JSON are tolerated) (D-26);
 * anything else ("0x", "256", "-1", "", " 0") is PROTO_BAD (D-27). A report
 * that is not a JSON array of [stage name, integer microseconds >= 0] pairs
 * is dropped with a reason and the status still counts (D-28). */
#include "lib/proto.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool is_alnum(char ch)
{
    return is_digit(ch) || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

/* As pepsi.stage_name_valid(): ^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$ */
bool proto_stage_name_valid(const char *s, size_t n)
{
    if (n < 1 || n > PROTO_STAGE_NAME_MAX || !is_alnum(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

static void report_fail(struct proto_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void report_fail(struct proto_status *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->report_error, sizeof(st->report_error), fmt, ap);
    va_end(ap);
    free(st->report);
    st->report = NULL;
    st->n_report = 0;
    st->report_ok = false;
}

/* ---- parsing a worker line ---- */

/* One [stage, usec] pair into *e; returns 0, or -1 with the reason set. */
static int report_entry(struct proto_status *st, size_t i, json_t *pair,
                        struct proto_report_entry *e)
{
    json_t *name = json_array_get(pair, 0), *usec = json_array_get(pair, 1);
    if (!json_is_array(pair) || json_array_size(pair) != 2) {
        report_fail(st, "report element %zu is not a [stage, microseconds] pair", i + 1);
        return -1;
    }
    size_t n = json_is_string(name) ? json_string_length(name) : 0;
    if (!json_is_string(name) || !proto_stage_name_valid(json_string_value(name), n)) {
        report_fail(st, "report element %zu: the stage is not a valid stage name", i + 1);
        return -1;
    }
    if (!json_is_integer(usec) || json_integer_value(usec) < 0) {
        report_fail(st, "report element %zu: microseconds must be an integer >= 0", i + 1);
        return -1;
    }
    memcpy(e->stage, json_string_value(name), n);
    e->stage[n] = '\0';
    e->usec = (int64_t)json_integer_value(usec);
    return 0;
}

static int report_entries(struct proto_status *st, json_t *arr)
{
    size_t n = json_array_size(arr);
    if (n == 0)
        return 0;
    st->report = calloc(n, sizeof(*st->report));
    if (!st->report) {
        report_fail(st, "out of memory");
        return -1;
    }
    st->n_report = n;
    for (size_t i = 0; i < n; i++)
        if (report_entry(st, i, json_array_get(arr, i), &st->report[i]) < 0)
            return -1;
    return 0;
}

static void parse_report(struct proto_status *st, const char *text, size_t len)
{
    json_error_t jerr;
    st->has_report = true;
    if (len == 0) {
        report_fail(st, "empty report after the status");
        return;
    }
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        report_fail(st, "report is not valid JSON: %s (column %d)", jerr.text, jerr.column);
        return;
    }
    if (!json_is_array(root))
        report_fail(st, "report is not a JSON array");
    else if (report_entries(st, root) == 0)
        st->report_ok = true;
    json_decref(root);
}

/* 1 to 3 digits, 0..255, at the start of line; returns the digit count,
 * or 0 when there is no such status. */
static size_t parse_status(const char *line, size_t len, int *status)
{
    size_t n = 0;
    int v = 0;
    while (n < len && is_digit(line[n])) {
        if (++n > 3)
            return 0;
        v = v * 10 + (line[n - 1] - '0');
    }
    if (n == 0 || v > 255)
        return 0;
    *status = v;
    return n;
}

enum proto_line_kind proto_parse_line(const char *line, size_t len, struct proto_status *out)
{
    struct proto_status st = {0};
    if (out)
        memset(out, 0, sizeof(*out));
    if (!line || !out)
        return PROTO_BAD;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 5 && memcmp(line, "ready", 5) == 0)
        return PROTO_READY;
    if (len == 14 && memcmp(line, "ready recycles", 14) == 0)
        return PROTO_READY_RECYCLES;
    size_t n = parse_status(line, len, &st.status);
    if (n == 0 || (n < len && line[n] != ' '))
        return PROTO_BAD;
    if (n < len)
        parse_report(&st, line + n + 1, len - n - 1);
    *out = st;
    return PROTO_STATUS;
}

void proto_status_free(struct proto_status *st)
{
    if (!st)
        return;
    free(st->report);
    memset(st, 0, sizeof(*st));
}

int proto_parse_id(const char *line, size_t len, int64_t *id)
{
    uint64_t v = 0;
    if (!line || !id)
        return -1;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0 || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(line[i]))
            return -1;
        v = v * 10 + (uint64_t)(line[i] - '0');   /* 19 digits fit in uint64 */
    }
    if (v == 0 || v > (uint64_t)INT64_MAX)
        return -1;
    *id = (int64_t)v;
    return 0;
}

/* ---- formatting ---- */

/* Appends printf output at *len; false when it does not fit (with its NUL). */
static bool put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len)
        return false;
    *len += (size_t)n;
    return true;
}

/* The output is NUL-terminated: it fits when the terminator fits too. */
size_t proto_format_ids(char *buf, size_t cap, const int64_t *ids, size_t n)
{
    size_t len = 0;
    if (!buf || (n > 0 && !ids))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!put(buf, cap, &len, "%" PRId64 "\n", ids[i]))
            return 0;
    return len;
}

/* Stage names are restricted to [A-Za-z0-9_.-], so they need no JSON
 * escaping; a report with an invalid name or a negative time is refused
 * (returns 0) rather than written unreadable. NUL-terminated as above. */
size_t proto_format_status(char *buf, size_t cap, int status,
                           const struct proto_report_entry *report, size_t n)
{
    size_t len = 0;
    if (!buf || status < 0 || status > 255 || (n > 0 && !report))
        return 0;
    if (!put(buf, cap, &len, "%d", status))
        return 0;
    for (size_t i = 0; i < n; i++) {
        const struct proto_report_entry *e = &report[i];
        size_t sl = strnlen(e->stage, sizeof(e->stage));
        if (!proto_stage_name_valid(e->stage, sl) || e->usec < 0)
            return 0;
        if (!put(buf, cap, &len, "%s[\"%s\",%" PRId64 "]", i == 0 ? " [" : ",", e->stage,
                 e->usec))
            return 0;
    }
    if (!put(buf, cap, &len, "%s\n", n > 0 ? "]" : ""))
        return 0;
    return len;
}

/* ---- splitting a stream into lines ---- */

static int lb_append(struct line_buf *lb, const char *data, size_t n)
{
    if (n == 0)
        return 0;
    if (lb->len + n > lb->cap) {
        size_t cap = lb->cap ? lb->cap : 4096;
        while (cap < lb->len + n) {
            if (cap > SIZE_MAX / 2)
                return -1;
            cap *= 2;
        }
        char *grown = realloc(lb->buf, cap);
        if (!grown)
            return -1;
        lb->buf = grown;
        lb->cap = cap;
    }
    memcpy(lb->buf + lb->len, data, n);
    lb->len += n;
    return 0;
}

/* Drops the first n bytes of the buffer. */
static void lb_consume(struct line_buf *lb, size_t n)
{
    if (n == 0)
        return;
    memmove(lb->buf, lb->buf + n, lb->len - n);
    lb->len -= n;
}

/* Delivers the complete lines in the buffer. When cb stops the feed, the
 * bytes after its line stay buffered: a later feed (even of 0 bytes)
 * resumes with them. A line longer than PROTO_MAX_LINE (without its '\n')
 * is an error, whether or not its '\n' has arrived; the buffer is then
 * emptied. Out of memory is reported as -1 too. */
int line_buf_feed(struct line_buf *lb, const char *data, size_t n,
                  int (*cb)(void *arg, const char *line, size_t len), void *arg)
{
    if (!lb || !cb || (n > 0 && !data) || lb_append(lb, data, n) < 0)
        return -1;
    size_t start = 0;
    int rc = 0;
    while (rc == 0 && start < lb->len) {
        const char *nl = memchr(lb->buf + start, '\n', lb->len - start);
        size_t l = nl ? (size_t)(nl - (lb->buf + start)) : lb->len - start;
        if (l > PROTO_MAX_LINE) {
            lb->len = 0;
            return -1;
        }
        if (!nl)
            break;
        rc = cb(arg, lb->buf + start, l);
        start += l + 1;
    }
    lb_consume(lb, start);
    return rc;
}

void line_buf_free(struct line_buf *lb)
{
    if (!lb)
        return;
    free(lb->buf);
    memset(lb, 0, sizeof(*lb));
}
