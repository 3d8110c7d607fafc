/* beanstalk/proto.h — beanstalkd's wire protocol (doc/protocol.txt,
 * beanstalkd 1.12), without I/O: the framing of the input (command lines
 * of at most BS_LINE_MAX bytes with their "\r\n", a put's body), the
 * parsing of one command line with beanstalkd's integer and tube-name
 * rules, and the replies byte for byte (messages, job replies, the YAML
 * of stats, stats-job, stats-tube and the list-* commands).
 * Owns: the framer's buffers. Uses: lib/tube.h, lib/util.h; nothing else. */
#ifndef PEPSI_BEANSTALK_PROTO_H
#define PEPSI_BEANSTALK_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/tube.h"

/* A command line is at most this many bytes, "\r\n" included (beanstalkd's
 * LINE_BUF_SIZE); a longer one is answered BAD_FORMAT and dropped up to
 * its "\r\n". */
#define BS_LINE_MAX 224

/* beanstalkd's default job size limit (its -z): the default MAX_JOB_SIZE. */
#define BS_DEFAULT_MAX_JOB 65535

/* The replies that are one fixed line. */
#define BS_OUT_OF_MEMORY "OUT_OF_MEMORY\r\n"
#define BS_INTERNAL_ERROR "INTERNAL_ERROR\r\n"
#define BS_DRAINING "DRAINING\r\n"
#define BS_BAD_FORMAT "BAD_FORMAT\r\n"
#define BS_UNKNOWN_COMMAND "UNKNOWN_COMMAND\r\n"
#define BS_EXPECTED_CRLF "EXPECTED_CRLF\r\n"
#define BS_JOB_TOO_BIG "JOB_TOO_BIG\r\n"
#define BS_NOT_FOUND "NOT_FOUND\r\n"
#define BS_DELETED "DELETED\r\n"
#define BS_RELEASED "RELEASED\r\n"
#define BS_BURIED "BURIED\r\n"
#define BS_TOUCHED "TOUCHED\r\n"
#define BS_KICKED "KICKED\r\n"
#define BS_PAUSED "PAUSED\r\n"
#define BS_NOT_IGNORED "NOT_IGNORED\r\n"
#define BS_TIMED_OUT "TIMED_OUT\r\n"
#define BS_DEADLINE_SOON "DEADLINE_SOON\r\n"

/* The commands, in beanstalkd's order of matching. */
enum bs_op {
    BS_OP_UNKNOWN,
    BS_OP_PUT,
    BS_OP_PEEK,            /* peek <id> */
    BS_OP_PEEK_READY,
    BS_OP_PEEK_DELAYED,
    BS_OP_PEEK_BURIED,
    BS_OP_RESERVE_TIMEOUT,
    BS_OP_RESERVE_JOB,
    BS_OP_RESERVE,
    BS_OP_DELETE,
    BS_OP_RELEASE,
    BS_OP_BURY,
    BS_OP_KICK,
    BS_OP_KICK_JOB,
    BS_OP_TOUCH,
    BS_OP_STATS_JOB,
    BS_OP_STATS_TUBE,
    BS_OP_STATS,
    BS_OP_USE,
    BS_OP_WATCH,
    BS_OP_IGNORE,
    BS_OP_LIST_TUBES_WATCHED,
    BS_OP_LIST_TUBE_USED,
    BS_OP_LIST_TUBES,
    BS_OP_QUIT,
    BS_OP_PAUSE_TUBE,
    BS_OP_COUNT
};

/* One parsed command line. */
struct bs_cmd {
    enum bs_op op;
    const char *error;        /* non-NULL: answer this line (BS_BAD_FORMAT, ...) and run nothing */
    uint64_t id;              /* the job id of peek, reserve-job, delete, release, bury, kick-job, touch, stats-job */
    uint32_t pri;             /* put, release, bury */
    uint32_t delay;           /* put, release, pause-tube: seconds */
    uint32_t ttr;             /* put: seconds, as sent (0 is stored as 1 by the SQL) */
    uint32_t bytes;           /* put: the body's length */
    uint32_t bound;           /* kick */
    int64_t timeout;          /* reserve-with-timeout: seconds, < 0: none (beanstalkd's strtol) */
    size_t skip;              /* put over the size limit: bytes (body and "\r\n") to drop before error */
    char tube[TUBE_NAME_MAX + 1]; /* use, watch, ignore, stats-tube, pause-tube */
};

/* The command's name as beanstalkd's stats counts it ("put", "peek-ready", ...). */
const char *bs_op_name(enum bs_op op);

/* Parses one command line (len bytes, without its "\r\n"), with max_job
 * the size limit of a put's body. Always fills *out: op, its arguments,
 * and error when the line is refused (op then says which command it was,
 * or BS_OP_UNKNOWN with BS_UNKNOWN_COMMAND). A put over the limit gives
 * error BS_JOB_TOO_BIG with skip set. */
void bs_parse(const char *line, size_t len, uint32_t max_job, struct bs_cmd *out);

/* ---- input framing ---- */

enum bs_frame_kind {
    BS_FRAME_MORE,            /* every byte given was taken; nothing complete yet */
    BS_FRAME_COMMAND,         /* a command (a put with its body) to run */
    BS_FRAME_ERROR,           /* answer reply; nothing to run */
};

/* The state of one connection's input. */
struct bs_framer {
    uint32_t max_job;         /* a put's body limit */
    int state;                /* the module's */
    char line[BS_LINE_MAX];   /* the command line so far */
    size_t line_len;
    bool last_cr;             /* while dropping an over-long line: the last byte was '\r' */
    size_t skip_left;         /* bytes still to drop (a body over the limit) */
    const char *skip_reply;   /* answered once they are dropped */
    struct bs_cmd cmd;        /* the put whose body is being read */
    char *body;               /* its body and "\r\n" so far (bytes + 2 allocated) */
    size_t body_len;
};

/* One complete item of input. */
struct bs_frame {
    enum bs_frame_kind kind;
    const char *reply;        /* BS_FRAME_ERROR: the line to answer */
    struct bs_cmd cmd;        /* BS_FRAME_COMMAND */
    char *body;               /* a put's body (cmd.bytes bytes, then "\r\n"); the receiver frees it */
};

/* A framer for a connection whose puts may carry max_job bytes. */
void bs_framer_init(struct bs_framer *f, uint32_t max_job);

/* Frees what the framer holds. */
void bs_framer_free(struct bs_framer *f);

/* Takes bytes from data[0..n) until one item is complete (*used says how
 * many were taken) or all are taken (BS_FRAME_MORE). Never holds more than
 * one line and one body within the limit: an over-long line and a body
 * over the limit are dropped as they arrive. */
void bs_framer_feed(struct bs_framer *f, const char *data, size_t n, size_t *used, struct bs_frame *out);

/* ---- replies ---- */

/* A growing reply buffer (the list-* and stats bodies). */
struct bs_buf {
    char *s;
    size_t len, cap;
};

/* Appends printf output; aborts on exhaustion (as xmalloc). */
void bs_buf_printf(struct bs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees the buffer's text. */
void bs_buf_free(struct bs_buf *b);

/* The reply that carries a YAML document: "OK <n>\r\n" + yaml + "\r\n",
 * where n is yaml's length. Replaces *out's contents. */
void bs_reply_ok(struct bs_buf *out, const char *yaml, size_t yaml_len);

/* "---\n" and "- NAME\n" per name: list-tubes, list-tubes-watched. */
void bs_yaml_list(struct bs_buf *out, const char *const *names, size_t n);

/* stats-job's fields. */
struct bs_job_stats {
    uint64_t id;
    const char *tube;
    const char *state;        /* ready, delayed, reserved, buried */
    uint32_t pri;
    int64_t age, delay, ttr, time_left;
    int file;
    uint32_t reserves, timeouts, releases, buries, kicks;
};

/* stats-job's YAML, beanstalkd's keys in its order. */
void bs_yaml_job(struct bs_buf *out, const struct bs_job_stats *s);

/* stats-tube's fields. */
struct bs_tube_stats {
    const char *name;
    uint64_t urgent, ready, reserved, delayed, buried, total_jobs;
    uint64_t using, watching, waiting, cmd_delete, cmd_pause_tube;
    uint64_t pause;
    int64_t pause_time_left;
};

/* stats-tube's YAML. */
void bs_yaml_tube(struct bs_buf *out, const struct bs_tube_stats *s);

/* stats' fields. */
struct bs_server_stats {
    uint64_t urgent, ready, reserved, delayed, buried;
    uint64_t cmd[BS_OP_COUNT];     /* counted by the frontend, by op */
    uint64_t job_timeouts, total_jobs;
    uint64_t max_job_size, tubes, connections, producers, workers, waiting, total_connections;
    long pid;
    const char *version;
    long utime_s, utime_us, stime_s, stime_us;
    uint64_t uptime;
    bool draining;
    const char *id, *hostname, *os, *platform;
};

/* stats' YAML, beanstalkd 1.12's keys in its order (the binlog keys 0). */
void bs_yaml_server(struct bs_buf *out, const struct bs_server_stats *s);

/* "RESERVED <id> <bytes>\r\n" or "FOUND <id> <bytes>\r\n" into buf (cap
 * >= 64); the body and "\r\n" follow it on the wire. Returns the length. */
size_t bs_job_header(char *buf, size_t cap, const char *word, uint64_t id, size_t bytes);

#endif
