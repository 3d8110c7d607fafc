/* lib/proto.h — the worker line protocol (D-21..D-28), both sides.
 *   runner -> worker: one message id per line, decimal
 *   worker -> runner: "ready" (or "ready recycles") once, then per id one line
 *                     "STATUS" or "STATUS REPORT", STATUS 0..255,
 *                     REPORT a JSON array [["stage", microseconds], ...]
 * An unreadable status is fatal for the worker (D-27); an unreadable report
 * is a warning and is dropped, the status still counts (D-28).
 * Owns: nothing kept (parsing and formatting lines). Uses: jansson only. */
#ifndef PEPSI_LIB_PROTO_H
#define PEPSI_LIB_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_MAX_LINE 65536          /* longer lines are a protocol error */
#define PROTO_STAGE_NAME_MAX 63       /* as pepsi.stage_name_valid() */

/* Whether s[0..n) is a valid stage name, as pepsi.stage_name_valid() (the
 * rule of the domain pepsi.stage_name, deploy/schema.sql):
 * ^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$. The runner's one copy of the rule,
 * shared by the config parser and the protocol. */
bool proto_stage_name_valid(const char *s, size_t n);

/* One stage of a fused pass and the worker time it took. */
struct proto_report_entry {
    char stage[PROTO_STAGE_NAME_MAX + 1];
    int64_t usec;
};

/* A parsed status line. */
struct proto_status {
    int status;                       /* 0..255 */
    bool has_report;                  /* text followed the status */
    bool report_ok;                   /* and it parsed */
    struct proto_report_entry *report;/* malloc'd when report_ok, else NULL */
    size_t n_report;
    char report_error[160];           /* why the report was dropped */
};

enum proto_line_kind {
    PROTO_READY,                      /* exactly "ready" */
    PROTO_READY_RECYCLES,             /* exactly "ready recycles": the worker
                                         replaces its own process after
                                         PEPSI_MAX_MESSAGES messages (D-68) */
    PROTO_STATUS,                     /* a status, *out filled */
    PROTO_BAD,                        /* neither: the worker is out of step */
};

/* Parses one worker output line (without its '\n'; a trailing '\r' is
 * ignored). For PROTO_STATUS fills *out, which the caller releases with
 * proto_status_free(). */
enum proto_line_kind proto_parse_line(const char *line, size_t len, struct proto_status *out);

/* Frees the report of *st and zeroes it. */
void proto_status_free(struct proto_status *st);

/* Parses a message id line (worker side): a positive decimal int64.
 * Returns 0 or -1. */
int proto_parse_id(const char *line, size_t len, int64_t *id);

/* Writes "ID\n" for each id into buf (cap bytes); returns the length, or
 * 0 when it does not fit. */
size_t proto_format_ids(char *buf, size_t cap, const int64_t *ids, size_t n);

/* Writes a status line with its '\n' ("0\n", or "0 [[\"a\",12],[\"b\",3]]\n"
 * when n > 0) into buf; returns the length, or 0 when it does not fit. */
size_t proto_format_status(char *buf, size_t cap, int status,
                           const struct proto_report_entry *report, size_t n);

/* Splits a byte stream into lines. */
struct line_buf {
    char *buf;
    size_t len;
    size_t cap;
};

/* Appends n bytes and calls cb(arg, line, len) for every complete line
 * (without '\n'), in order. Stops and returns cb's value when cb returns
 * non-zero. Returns -1 when a line grows past PROTO_MAX_LINE, else 0. */
int line_buf_feed(struct line_buf *lb, const char *data, size_t n,
                  int (*cb)(void *arg, const char *line, size_t len), void *arg);

/* Frees the buffer; the struct can be reused. */
void line_buf_free(struct line_buf *lb);

#endif
