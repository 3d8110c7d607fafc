/* beanstalk/proto.c — see proto.h. The rules follow beanstalkd 1.12's
 * behaviour as observed on the wire (Debian's beanstalkd): commands are
 * matched by prefix in its order; the commands without arguments refuse
 * trailing bytes; integers skip leading spaces, take digits only and
 * refuse what follows the last one (kick and reserve-with-timeout read
 * theirs as strtoul and strtol do); tube names are checked whole. */
#include "beanstalk/proto.h"

#include "lib/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_LINE, ST_DROP_LINE, ST_BODY, ST_SKIP };

/* The prefixes, in beanstalkd's order of matching (which_cmd). */
static const struct {
    const char *prefix;
    enum bs_op op;
} prefixes[] = {
    {"put ", BS_OP_PUT},
    {"peek ", BS_OP_PEEK},
    {"peek-ready", BS_OP_PEEK_READY},
    {"peek-delayed", BS_OP_PEEK_DELAYED},
    {"peek-buried", BS_OP_PEEK_BURIED},
    {"reserve-with-timeout ", BS_OP_RESERVE_TIMEOUT},
    {"reserve-job ", BS_OP_RESERVE_JOB},
    {"reserve", BS_OP_RESERVE},
    {"delete ", BS_OP_DELETE},
    {"release ", BS_OP_RELEASE},
    {"bury ", BS_OP_BURY},
    {"kick ", BS_OP_KICK},
    {"kick-job ", BS_OP_KICK_JOB},
    {"touch ", BS_OP_TOUCH},
    {"stats-job ", BS_OP_STATS_JOB},
    {"stats-tube ", BS_OP_STATS_TUBE},
    {"stats", BS_OP_STATS},
    {"use ", BS_OP_USE},
    {"watch ", BS_OP_WATCH},
    {"ignore ", BS_OP_IGNORE},
    {"list-tubes-watched", BS_OP_LIST_TUBES_WATCHED},
    {"list-tube-used", BS_OP_LIST_TUBE_USED},
    {"list-tubes", BS_OP_LIST_TUBES},
    {"quit", BS_OP_QUIT},
    {"pause-tube", BS_OP_PAUSE_TUBE},
};

static const char *const op_names[BS_OP_COUNT] = {
    [BS_OP_UNKNOWN] = "unknown",
    [BS_OP_PUT] = "put",
    [BS_OP_PEEK] = "peek",
    [BS_OP_PEEK_READY] = "peek-ready",
    [BS_OP_PEEK_DELAYED] = "peek-delayed",
    [BS_OP_PEEK_BURIED] = "peek-buried",
    [BS_OP_RESERVE_TIMEOUT] = "reserve-with-timeout",
    [BS_OP_RESERVE_JOB] = "reserve-job",
    [BS_OP_RESERVE] = "reserve",
    [BS_OP_DELETE] = "delete",
    [BS_OP_RELEASE] = "release",
    [BS_OP_BURY] = "bury",
    [BS_OP_KICK] = "kick",
    [BS_OP_KICK_JOB] = "kick-job",
    [BS_OP_TOUCH] = "touch",
    [BS_OP_STATS_JOB] = "stats-job",
    [BS_OP_STATS_TUBE] = "stats-tube",
    [BS_OP_STATS] = "stats",
    [BS_OP_USE] = "use",
    [BS_OP_WATCH] = "watch",
    [BS_OP_IGNORE] = "ignore",
    [BS_OP_LIST_TUBES_WATCHED] = "list-tubes-watched",
    [BS_OP_LIST_TUBE_USED] = "list-tube-used",
    [BS_OP_LIST_TUBES] = "list-tubes",
    [BS_OP_QUIT] = "quit",
    [BS_OP_PAUSE_TUBE] = "pause-tube",
};

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+/;.$_()"

const char *bs_op_name(enum bs_op op)
{
    return op >= 0 && op < BS_OP_COUNT ? op_names[op] : "unknown";
}

/* beanstalkd's read_u64: spaces, then digits up to max; with end NULL
 * nothing may follow. 0, or -1 (nothing changed). */
static int read_uint(const char *buf, uint64_t max, uint64_t *num, const char **end)
{
    char *tend;
    while (buf[0] == ' ')
        buf++;
    if (buf[0] < '0' || buf[0] > '9')
        return -1;
    errno = 0;
    uintmax_t v = strtoumax(buf, &tend, 10);
    if (tend == buf || errno != 0 || v > max)
        return -1;
    if (end == NULL && tend[0] != '\0')
        return -1;
    *num = (uint64_t)v;
    if (end)
        *end = tend;
    return 0;
}

static int read_u32(const char *buf, uint32_t *num, const char **end)
{
    uint64_t v;
    if (read_uint(buf, UINT32_MAX, &v, end) != 0)
        return -1;
    *num = (uint32_t)v;
    return 0;
}

/* A whole tube name: the rest of the line. 0 or -1. */
static int read_name(const char *s, char *out)
{
    size_t n = strlen(s);
    if (!tube_name_valid(s, n))
        return -1;
    memcpy(out, s, n + 1);
    return 0;
}

static void parse_put(const char *args, uint32_t max_job, struct bs_cmd *c)
{
    const char *p;
    if (read_u32(args, &c->pri, &p) != 0 || read_u32(p, &c->delay, &p) != 0 || read_u32(p, &c->ttr, &p) != 0 ||
        read_u32(p, &c->bytes, &p) != 0) {
        c->error = BS_BAD_FORMAT;
        return;
    }
    if (c->bytes > max_job) { /* before the trailing bytes: beanstalkd drops the body first */
        c->error = BS_JOB_TOO_BIG;
        c->skip = (size_t)c->bytes + 2;
        return;
    }
    if (p[0] != '\0')
        c->error = BS_BAD_FORMAT;
}

/* pause-tube <tube> <delay>: the name is the run of name characters. */
static void parse_pause(const char *args, struct bs_cmd *c)
{
    while (args[0] == ' ')
        args++;
    size_t n = strspn(args, NAME_CHARS);
    if (!tube_name_valid(args, n) || read_u32(args + n, &c->delay, NULL) != 0) {
        c->error = BS_BAD_FORMAT;
        return;
    }
    memcpy(c->tube, args, n);
    c->tube[n] = '\0';
}

/* kick <bound>: strtoul's rules, what follows the number ignored. */
static void parse_kick(const char *args, struct bs_cmd *c)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(args, &end, 10);
    if (end == args || errno != 0) {
        c->error = BS_BAD_FORMAT;
        return;
    }
    c->bound = (uint32_t)v;
}

/* reserve-with-timeout <seconds>: strtol's rules ("abc" is 0, a negative
 * number waits without end), an overflow refused. */
static void parse_timeout(const char *args, struct bs_cmd *c)
{
    char *end;
    errno = 0;
    long v = strtol(args, &end, 10);
    if (errno != 0) {
        c->error = BS_BAD_FORMAT;
        return;
    }
    c->timeout = v < 0 ? -1 : (int64_t)v;
}

/* The arguments of op, from args (after the prefix); full: the line. */
static void parse_args(const char *full, size_t len, const char *args, uint32_t max_job, struct bs_cmd *c)
{
    const char *p;
    switch (c->op) {
    case BS_OP_PUT:
        parse_put(args, max_job, c);
        return;
    case BS_OP_PEEK_READY:
    case BS_OP_PEEK_DELAYED:
    case BS_OP_PEEK_BURIED:
    case BS_OP_RESERVE:
    case BS_OP_STATS:
    case BS_OP_LIST_TUBES:
    case BS_OP_LIST_TUBE_USED:
    case BS_OP_LIST_TUBES_WATCHED:
        if ((size_t)(args - full) != len) /* no trailing bytes */
            c->error = BS_BAD_FORMAT;
        return;
    case BS_OP_PEEK:
    case BS_OP_RESERVE_JOB:
    case BS_OP_DELETE:
    case BS_OP_KICK_JOB:
    case BS_OP_TOUCH:
    case BS_OP_STATS_JOB:
        if (read_uint(args, UINT64_MAX, &c->id, NULL) != 0)
            c->error = BS_BAD_FORMAT;
        return;
    case BS_OP_RELEASE:
        if (read_uint(args, UINT64_MAX, &c->id, &p) != 0 || read_u32(p, &c->pri, &p) != 0 ||
            read_u32(p, &c->delay, NULL) != 0)
            c->error = BS_BAD_FORMAT;
        return;
    case BS_OP_BURY:
        if (read_uint(args, UINT64_MAX, &c->id, &p) != 0 || read_u32(p, &c->pri, NULL) != 0)
            c->error = BS_BAD_FORMAT;
        return;
    case BS_OP_KICK:
        parse_kick(args, c);
        return;
    case BS_OP_RESERVE_TIMEOUT:
        parse_timeout(args, c);
        return;
    case BS_OP_STATS_TUBE:
    case BS_OP_USE:
    case BS_OP_WATCH:
    case BS_OP_IGNORE:
        if (read_name(args, c->tube) != 0)
            c->error = BS_BAD_FORMAT;
        return;
    case BS_OP_PAUSE_TUBE:
        parse_pause(args, c);
        return;
    case BS_OP_QUIT:
        return;
    default:
        c->error = BS_UNKNOWN_COMMAND;
        return;
    }
}

void bs_parse(const char *line, size_t len, uint32_t max_job, struct bs_cmd *out)
{
    char buf[BS_LINE_MAX + 1];
    memset(out, 0, sizeof *out);
    out->timeout = -1;
    out->op = BS_OP_UNKNOWN;
    if (len > BS_LINE_MAX - 2 || memchr(line, '\0', len) != NULL) {
        out->error = BS_BAD_FORMAT; /* beanstalkd: "check for possible maliciousness" */
        return;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i].prefix);
        if (strncmp(buf, prefixes[i].prefix, n) == 0) {
            out->op = prefixes[i].op;
            parse_args(buf, len, buf + n, max_job, out);
            return;
        }
    }
    out->error = BS_UNKNOWN_COMMAND;
}

/* ---- framing ---- */

void bs_framer_init(struct bs_framer *f, uint32_t max_job)
{
    memset(f, 0, sizeof *f);
    f->max_job = max_job;
    f->state = ST_LINE;
}

void bs_framer_free(struct bs_framer *f)
{
    free(f->body);
    f->body = NULL;
}

/* A complete line: what it asks. True when out is complete. */
static bool line_done(struct bs_framer *f, struct bs_frame *out)
{
    struct bs_cmd c;
    bs_parse(f->line, f->line_len - 2, f->max_job, &c);
    f->line_len = 0;
    if (c.op == BS_OP_PUT && c.error == NULL) {
        f->cmd = c;
        f->body = xmalloc((size_t)c.bytes + 2);
        f->body_len = 0;
        f->state = ST_BODY;
        return false;
    }
    if (c.skip > 0) {
        f->skip_left = c.skip;
        f->skip_reply = c.error;
        f->state = ST_SKIP;
        return false;
    }
    out->kind = c.error ? BS_FRAME_ERROR : BS_FRAME_COMMAND;
    out->reply = c.error;
    out->cmd = c;
    return true;
}

/* Takes line bytes; true when out is complete. */
static bool feed_line(struct bs_framer *f, const char *data, size_t n, size_t *i, struct bs_frame *out)
{
    while (*i < n) {
        f->line[f->line_len++] = data[(*i)++];
        if (f->line_len >= 2 && f->line[f->line_len - 2] == '\r' && f->line[f->line_len - 1] == '\n')
            return line_done(f, out);
        if (f->line_len == BS_LINE_MAX) {
            f->last_cr = f->line[BS_LINE_MAX - 1] == '\r';
            f->line_len = 0;
            f->state = ST_DROP_LINE;
            out->kind = BS_FRAME_ERROR;
            out->reply = BS_BAD_FORMAT;
            return true;
        }
    }
    return false;
}

/* Drops the rest of an over-long line, through its "\r\n". */
static void feed_drop(struct bs_framer *f, const char *data, size_t n, size_t *i)
{
    while (*i < n) {
        char b = data[(*i)++];
        if (f->last_cr && b == '\n') {
            f->state = ST_LINE;
            return;
        }
        f->last_cr = b == '\r';
    }
}

static bool feed_body(struct bs_framer *f, const char *data, size_t n, size_t *i, struct bs_frame *out)
{
    size_t want = (size_t)f->cmd.bytes + 2 - f->body_len;
    size_t take = n - *i < want ? n - *i : want;
    memcpy(f->body + f->body_len, data + *i, take);
    f->body_len += take;
    *i += take;
    if (f->body_len < (size_t)f->cmd.bytes + 2)
        return false;
    f->state = ST_LINE;
    if (f->body[f->cmd.bytes] != '\r' || f->body[f->cmd.bytes + 1] != '\n') {
        free(f->body);
        f->body = NULL;
        out->kind = BS_FRAME_ERROR;
        out->reply = BS_EXPECTED_CRLF;
        return true;
    }
    out->kind = BS_FRAME_COMMAND;
    out->cmd = f->cmd;
    out->body = f->body;
    f->body = NULL;
    return true;
}

static bool feed_skip(struct bs_framer *f, size_t n, size_t *i, struct bs_frame *out)
{
    size_t take = n - *i < f->skip_left ? n - *i : f->skip_left;
    *i += take;
    f->skip_left -= take;
    if (f->skip_left > 0)
        return false;
    f->state = ST_LINE;
    out->kind = BS_FRAME_ERROR;
    out->reply = f->skip_reply;
    return true;
}

void bs_framer_feed(struct bs_framer *f, const char *data, size_t n, size_t *used, struct bs_frame *out)
{
    size_t i = 0;
    memset(out, 0, sizeof *out);
    out->kind = BS_FRAME_MORE;
    while (i < n) {
        bool done = false;
        switch (f->state) {
        case ST_LINE:
            done = feed_line(f, data, n, &i, out);
            break;
        case ST_DROP_LINE:
            feed_drop(f, data, n, &i);
            break;
        case ST_BODY:
            done = feed_body(f, data, n, &i, out);
            break;
        default:
            done = feed_skip(f, n, &i, out);
            break;
        }
        if (done)
            break;
    }
    *used = i;
}

/* ---- replies ---- */

void bs_buf_printf(struct bs_buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
}

void bs_buf_free(struct bs_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void bs_reply_ok(struct bs_buf *out, const char *yaml, size_t yaml_len)
{
    out->len = 0;
    bs_buf_printf(out, "OK %zu\r\n%.*s\r\n", yaml_len, (int)yaml_len, yaml);
}

void bs_yaml_list(struct bs_buf *out, const char *const *names, size_t n)
{
    out->len = 0;
    bs_buf_printf(out, "---\n");
    for (size_t i = 0; i < n; i++)
        bs_buf_printf(out, "- %s\n", names[i]);
}

void bs_yaml_job(struct bs_buf *out, const struct bs_job_stats *s)
{
    out->len = 0;
    bs_buf_printf(out,
                  "---\nid: %" PRIu64 "\ntube: %s\nstate: %s\npri: %" PRIu32 "\nage: %" PRId64 "\ndelay: %" PRId64
                  "\nttr: %" PRId64 "\ntime-left: %" PRId64 "\nfile: %d\nreserves: %" PRIu32 "\ntimeouts: %" PRIu32
                  "\nreleases: %" PRIu32 "\nburies: %" PRIu32 "\nkicks: %" PRIu32 "\n",
                  s->id, s->tube, s->state, s->pri, s->age, s->delay, s->ttr, s->time_left, s->file, s->reserves,
                  s->timeouts, s->releases, s->buries, s->kicks);
}

void bs_yaml_tube(struct bs_buf *out, const struct bs_tube_stats *s)
{
    out->len = 0;
    bs_buf_printf(out,
                  "---\nname: %s\ncurrent-jobs-urgent: %" PRIu64 "\ncurrent-jobs-ready: %" PRIu64
                  "\ncurrent-jobs-reserved: %" PRIu64 "\ncurrent-jobs-delayed: %" PRIu64
                  "\ncurrent-jobs-buried: %" PRIu64 "\ntotal-jobs: %" PRIu64 "\ncurrent-using: %" PRIu64
                  "\ncurrent-watching: %" PRIu64 "\ncurrent-waiting: %" PRIu64 "\ncmd-delete: %" PRIu64
                  "\ncmd-pause-tube: %" PRIu64 "\npause: %" PRIu64 "\npause-time-left: %" PRId64 "\n",
                  s->name, s->urgent, s->ready, s->reserved, s->delayed, s->buried, s->total_jobs, s->using,
                  s->watching, s->waiting, s->cmd_delete, s->cmd_pause_tube, s->pause, s->pause_time_left);
}

/* The cmd-* keys of stats, in beanstalkd's order (reserve-job and
 * kick-job are counted by beanstalkd but not shown). */
static const enum bs_op stats_ops[] = {
    BS_OP_PUT,         BS_OP_PEEK,          BS_OP_PEEK_READY,           BS_OP_PEEK_DELAYED, BS_OP_PEEK_BURIED,
    BS_OP_RESERVE,     BS_OP_RESERVE_TIMEOUT, BS_OP_DELETE,             BS_OP_RELEASE,      BS_OP_USE,
    BS_OP_WATCH,       BS_OP_IGNORE,        BS_OP_BURY,                 BS_OP_KICK,         BS_OP_TOUCH,
    BS_OP_STATS,       BS_OP_STATS_JOB,     BS_OP_STATS_TUBE,           BS_OP_LIST_TUBES,   BS_OP_LIST_TUBE_USED,
    BS_OP_LIST_TUBES_WATCHED, BS_OP_PAUSE_TUBE,
};

void bs_yaml_server(struct bs_buf *out, const struct bs_server_stats *s)
{
    out->len = 0;
    bs_buf_printf(out,
                  "---\ncurrent-jobs-urgent: %" PRIu64 "\ncurrent-jobs-ready: %" PRIu64
                  "\ncurrent-jobs-reserved: %" PRIu64 "\ncurrent-jobs-delayed: %" PRIu64
                  "\ncurrent-jobs-buried: %" PRIu64 "\n",
                  s->urgent, s->ready, s->reserved, s->delayed, s->buried);
    for (size_t i = 0; i < sizeof stats_ops / sizeof stats_ops[0]; i++)
        bs_buf_printf(out, "cmd-%s: %" PRIu64 "\n", bs_op_name(stats_ops[i]), s->cmd[stats_ops[i]]);
    bs_buf_printf(out,
                  "job-timeouts: %" PRIu64 "\ntotal-jobs: %" PRIu64 "\nmax-job-size: %" PRIu64
                  "\ncurrent-tubes: %" PRIu64 "\ncurrent-connections: %" PRIu64 "\ncurrent-producers: %" PRIu64
                  "\ncurrent-workers: %" PRIu64 "\ncurrent-waiting: %" PRIu64 "\ntotal-connections: %" PRIu64
                  "\npid: %ld\nversion: \"%s\"\nrusage-utime: %ld.%06ld\nrusage-stime: %ld.%06ld\nuptime: %" PRIu64
                  "\nbinlog-oldest-index: 0\nbinlog-current-index: 0\nbinlog-records-migrated: 0\n"
                  "binlog-records-written: 0\nbinlog-max-size: 0\ndraining: %s\nid: %s\nhostname: %s\nos: %s\n"
                  "platform: %s\n",
                  s->job_timeouts, s->total_jobs, s->max_job_size, s->tubes, s->connections, s->producers,
                  s->workers, s->waiting, s->total_connections, s->pid, s->version, s->utime_s, s->utime_us,
                  s->stime_s, s->stime_us, s->uptime, s->draining ? "true" : "false", s->id, s->hostname, s->os,
                  s->platform);
}

size_t bs_job_header(char *buf, size_t cap, const char *word, uint64_t id, size_t bytes)
{
    int n = snprintf(buf, cap, "%s %" PRIu64 " %zu\r\n", word, id, bytes);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
