/* dispatch/pool.c — see pool.h. */
#include "dispatch/pool.h"

#include "lib/log.h"
#include "lib/schema.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define CLOSE_GRACE_MS 10000   /* a worker asked to stop gets this long before SIGKILL */
#define EXIT_DRAIN_MS 2000     /* after exit, how long to wait for its stdout to end */
#define HANDLES_PER_WORKER 5   /* process, stdin, stdout, stderr, runtime timer */
#define RSS_CHECK_MS 100       /* a worker's memory is read at most this often (issue 19), */
#define RSS_CHECK_MESSAGES 16  /* and at least every this many messages handed to it */
#define HAND_QUEUED_MS 20      /* an adaptive hand-out holds about this much work per worker */

struct worker {
    struct worker *next;
    struct stage *stage;
    enum worker_state state;
    uv_process_t proc;
    uv_pipe_t in, out, err;
    uv_timer_t runtime;            /* MAX_RUNTIME of the head message (D-82, D-83) */
    int open_handles;              /* freed when the last one is closed */
    int pid;
    int64_t *ids;                  /* ring of unanswered ids, ring long */
    size_t ring;                   /* the stage's hand_max */
    size_t head;
    size_t count;
    uint64_t head_since_us;        /* when the head message started (ready and at head) */
    uint64_t idle_since_ms;
    int handed;                    /* ids handed over the child's life (D-68) */
    int64_t rss_ready_kb;          /* resident memory when it said ready, -1 unknown (issue 19) */
    uint64_t rss_checked_ms;       /* when it was last read */
    int rss_checked_handed;        /* handed when it was last read */
    bool ready;                    /* said "ready" */
    bool self_recycles;            /* said "ready recycles": it replaces its own
                                      process every MAX_MESSAGES (D-68), so the
                                      dispatcher does not retire it by count */
    bool retiring;                 /* no new ids: recycle once drained */
    bool hung;                     /* killed for MAX_RUNTIME */
    bool protocol_error;           /* torn down for an unreadable line (D-27) */
    bool after_74;                 /* its last answer was 74: it lost its database connection */
    bool in_closed;
    bool exited;
    int64_t exit_status;
    int term_signal;
    bool out_eof;
    bool finalized;
    uint64_t exited_at_ms;
    uint64_t close_deadline_ms;
    struct line_buf out_lb;
    struct line_buf err_lb;
    char last_err[256];            /* the child's last stderr line, to name a cause */
    char violation[320];           /* how it broke the protocol, for the log and the strike */
};

struct write_req {
    uv_write_t req;
    char buf[];
};

static void worker_finalize(struct worker *w);
static void worker_close(struct worker *w, uint64_t now);
static bool program_is_builtin(const char *program, const char *self_dir);

/* ---- stage bookkeeping ---- */

/* Whether PROGRAM is one of pepsi's own stage programs, found next to the
 * runner (resolve_program): those are recycled on memory growth rather
 * than every MAX_MESSAGES (issue 19; e2e 72-recycle-builtin.t runs the
 * pass worker under valgrind). The names are those of stages/stages.c,
 * which dispatch/ may not include (scripts/check-includes). */
static bool program_is_builtin(const char *program, const char *self_dir)
{
    static const char *const names[] = {"pass", "exec", "discard", "http", "if", "edit-settings"};
    if (program == NULL || self_dir == NULL || strchr(program, '/') || strncmp(program, "pepsi-stage-", 12) != 0)
        return false;
    bool known = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !known; i++)
        known = strcmp(program + 12, names[i]) == 0;
    if (!known)
        return false;
    char *full = xasprintf("%s/%s", self_dir, program);
    bool there = access(full, X_OK) == 0;
    free(full);
    return there;
}

void stage_init(struct stage *s, const struct stage_conf *conf, struct pool_env *env)
{
    memset(s, 0, sizeof *s);
    s->name = xstrdup(conf->name);
    s->conf = conf;
    s->env = env;
    s->parallelism_cap = conf->parallelism;
    s->rss_recycle = conf->max_messages == 0 && program_is_builtin(conf->program, env->self_dir);
    s->max_messages = conf->max_messages > 0 ? conf->max_messages : s->rss_recycle ? INT_MAX : CONF_MAX_MESSAGES;
    s->hand_max = conf_stage_hand_max(conf);
    s->hand_limit = conf->queue_limit;
}

void stage_adapt(struct stage *s, int asked, int got)
{
    int floor = s->conf->queue_limit;
    if (s->hand_max <= floor || asked <= 0)
        return;
    if (got < asked) {
        s->hand_limit = s->hand_limit / 2 > floor ? s->hand_limit / 2 : floor;
        return;
    }
    if (s->service_us <= 0)
        return; /* no pace measured yet */
    int64_t by_pace = HAND_QUEUED_MS * 1000 / s->service_us;
    int target = by_pace > s->hand_max ? s->hand_max : by_pace < floor ? floor : (int)by_pace;
    int next = s->hand_limit * 2 < target ? s->hand_limit * 2 : target;
    if (next != s->hand_limit)
        log_debug(s->name, "handing %d id(s) per worker (a backlog; %lld us a message)", next,
                  (long long)s->service_us);
    s->hand_limit = next;
}

static bool worker_usable(const struct worker *w)
{
    return (w->state == WORKER_STARTING || w->state == WORKER_READY) && !w->retiring;
}

int stage_active_workers(const struct stage *s)
{
    int n = 0;
    for (const struct worker *w = s->workers; w; w = w->next)
        n += w->state != WORKER_CLOSING;
    return n;
}

/* How many more workers the stage may start now. A worker being recycled
 * (retiring, draining what it holds) does not hold its successor back
 * (issue 19): the stage may run one process more than PARALLELISM while
 * one drains; no more, so a stage never holds more than PARALLELISM + 1
 * database connections. */
static int stage_spawnable(const struct stage *s, uint64_t now)
{
    if (s->env->shutting_down || s->retired || now < s->cooldown_until_ms)
        return 0;
    int recycling = 0;
    for (const struct worker *w = s->workers; w; w = w->next)
        recycling += w->retiring && !w->exited;
    int by_cap = s->parallelism_cap - (s->n_workers - recycling);
    int by_extra = s->parallelism_cap + 1 - s->n_workers;
    int n = by_cap < by_extra ? by_cap : by_extra;
    return n > 0 ? n : 0;
}

static bool stage_may_spawn(const struct stage *s, uint64_t now)
{
    return stage_spawnable(s, now) > 0;
}

/* How many more ids the worker can take: its free queue slots, but no more
 * than its child may still handle before it is recycled (D-68). */
static int worker_room(const struct worker *w)
{
    int room = w->stage->hand_limit - (int)w->count;
    if (room < 0)
        room = 0; /* the hand-out shrank below what it holds */
    if (w->self_recycles)
        return room;
    int left = w->stage->max_messages - w->handed;
    return room < left ? room : left;
}

int stage_capacity(const struct stage *s, uint64_t now)
{
    int q = s->hand_limit, free_slots = 0, usable = 0;

    if (s->env->shutting_down || s->retired)
        return 0;
    if (q > s->max_messages)
        q = s->max_messages; /* what a new worker may take (D-68) */
    /* Fullest first, as stage_assign packs: beyond the cap, workers get no
     * new work and drain (D-98). */
    for (const struct worker *w = s->workers; w; w = w->next) {
        if (!worker_usable(w))
            continue;
        if (usable++ >= s->parallelism_cap)
            continue;
        free_slots += worker_room(w);
    }
    free_slots += stage_spawnable(s, now) * q;
    return free_slots;
}

bool stage_quiet(const struct stage *s)
{
    return s->workers == NULL;
}

void stage_free(struct stage *s)
{
    free(s->name);
    s->name = NULL;
}

/* ---- handles and memory ---- */

static void worker_handle_closed(uv_handle_t *h)
{
    struct worker *w = h->data;
    if (--w->open_handles > 0)
        return;
    line_buf_free(&w->out_lb);
    line_buf_free(&w->err_lb);
    free(w->ids);
    free(w);
}

static void close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, worker_handle_closed);
}

static void worker_unlink(struct worker *w)
{
    struct stage *s = w->stage;
    for (struct worker **p = &s->workers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            s->n_workers--;
            return;
        }
    }
}

/* ---- signals to the child ---- */

/* Kills the worker's whole process group (it is a session leader, so a
 * helper it started dies with it), falling back to the worker alone. */
static void worker_kill_group(struct worker *w, int sig)
{
    if (w->exited || w->pid <= 0)
        return;
    if (kill(-w->pid, sig) != 0 && kill(w->pid, sig) != 0 && errno != ESRCH)
        log_warning(w->stage->name, "cannot signal worker pid=%d: %s", w->pid, strerror(errno));
}

static void shutdown_done_cb(uv_shutdown_t *req, int status)
{
    (void)status;
    struct worker *w = req->data;
    free(req);
    close_handle((uv_handle_t *)&w->in);
}

/* Ends the child's stdin: a worker exits at EOF once its queue is done. */
static void worker_close_stdin(struct worker *w)
{
    if (w->in_closed)
        return;
    w->in_closed = true;
    uv_shutdown_t *req = xmalloc(sizeof *req);
    req->data = w;
    if (uv_shutdown(req, (uv_stream_t *)&w->in, shutdown_done_cb) != 0) {
        free(req);
        close_handle((uv_handle_t *)&w->in);
    }
}

/* ---- the queue of one worker ---- */

static int64_t worker_head(const struct worker *w)
{
    return w->ids[w->head];
}

static int64_t worker_pop(struct worker *w)
{
    int64_t id = w->ids[w->head];
    w->head = (w->head + 1) % w->ring;
    w->count--;
    w->stage->inflight--;
    return id;
}

static void runtime_cb(uv_timer_t *t)
{
    struct worker *w = t->data;
    if (w->count == 0 || w->exited)
        return;
    if (!w->ready) {
        /* Dies before ready: its ids go back without blame (D-90). */
        log_warning(w->stage->name, "worker pid=%d not ready after MAX_RUNTIME (%s); killing it",
                    w->pid, LOG_DURATION(w->stage->conf->max_runtime_ms));
        worker_kill_group(w, SIGKILL);
        return;
    }
    log_warning(w->stage->name, "message %lld exceeded MAX_RUNTIME (%s); killing worker pid=%d",
                (long long)worker_head(w), LOG_DURATION(w->stage->conf->max_runtime_ms), w->pid);
    w->hung = true;
    worker_kill_group(w, SIGKILL);
}

/* The head message starts its MAX_RUNTIME clock now (D-83). */
static void worker_start_head(struct worker *w)
{
    w->head_since_us = now_us();
    int rc = uv_timer_start(&w->runtime, runtime_cb, (uint64_t)w->stage->conf->max_runtime_ms, 0);
    if (rc != 0)
        log_error(w->stage->name, "cannot start the MAX_RUNTIME timer: %s", uv_strerror(rc));
}

static void write_done_cb(uv_write_t *req, int status)
{
    struct write_req *wr = (struct write_req *)req;
    if (status < 0 && status != UV_EPIPE && status != UV_ECANCELED)
        log_debug("pool", "write to a worker failed: %s", uv_strerror(status));
    free(wr);
}

/* Appends ids to the worker's queue and writes them in one buffer (D-66). */
static void worker_give(struct worker *w, const int64_t *ids, size_t n, uint64_t now)
{
    size_t q = w->ring;
    size_t cap = n * 21 + 1;
    struct write_req *wr = xmalloc(sizeof *wr + cap);
    size_t len = proto_format_ids(wr->buf, cap, ids, n);

    bool was_empty = w->count == 0;
    for (size_t i = 0; i < n; i++)
        w->ids[(w->head + w->count + i) % q] = ids[i];
    w->count += n;
    for (size_t i = 0; log_enabled(PLOG_DEBUG) && i < n; i++)
        log_debug(w->stage->name, "message=%lld handed to worker pid=%d", (long long)ids[i], w->pid);
    w->stage->inflight += (int)n;
    w->handed += (int)n;
    if (w->handed >= w->stage->max_messages && !w->self_recycles)
        w->retiring = true;
    if (was_empty && w->state == WORKER_READY)
        worker_start_head(w);
    w->idle_since_ms = now;

    uv_buf_t buf = uv_buf_init(wr->buf, (unsigned)len);
    int rc = uv_write(&wr->req, (uv_stream_t *)&w->in, &buf, 1, write_done_cb);
    if (rc != 0) {
        /* The child is gone or going; its exit hands the ids back. */
        log_warning(w->stage->name, "cannot write to worker pid=%d: %s", w->pid, uv_strerror(rc));
        free(wr);
    }
}

/* ---- memory of the child (issue 19) ---- */

/* The worker's resident memory in KiB, from /proc/PID/statm; -1 when it
 * cannot be read (the process is gone, or no /proc). */
static int64_t worker_rss_kb(int pid)
{
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/%d/statm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    long long size, resident;
    if (sscanf(buf, "%lld %lld", &size, &resident) != 2)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    return resident * (page > 0 ? page : 4096) / 1024;
}

/* A built-in's worker without MAX_MESSAGES is recycled once its resident
 * memory grew MAX_RSS_GROWTH since ready, instead of after every
 * MAX_MESSAGES messages: D-68 bounds memory, and a new worker costs a
 * new PostgreSQL backend (issue 19). Read at its answers, at most every
 * RSS_CHECK_MS unless RSS_CHECK_MESSAGES were handed since the last read; a worker that grew takes no new ids and is replaced once
 * its pipeline has drained, as D-68 says. */
static void worker_check_rss(struct worker *w, uint64_t now)
{
    const struct stage *s = w->stage;
    if (!s->rss_recycle || w->retiring || w->rss_ready_kb < 0)
        return;
    /* Time alone would let a fast worker take any number of messages
     * between two reads; the message count bounds that too. */
    if (now < w->rss_checked_ms + RSS_CHECK_MS && w->handed - w->rss_checked_handed < RSS_CHECK_MESSAGES)
        return;
    w->rss_checked_ms = now;
    w->rss_checked_handed = w->handed;
    int64_t rss = worker_rss_kb(w->pid);
    if (rss < 0 || rss - w->rss_ready_kb <= (int64_t)s->conf->max_rss_growth_mb * 1024)
        return;
    log_info(s->name, "worker pid=%d grew from %lld to %lld KiB since ready (MAX_RSS_GROWTH %d MiB) after %d "
             "message(s); replacing it", w->pid, (long long)w->rss_ready_kb, (long long)rss,
             s->conf->max_rss_growth_mb, w->handed);
    w->retiring = true;
}

/* ---- lines from the child ---- */

/* A line that breaks the protocol (D-27): the worker is torn down. After
 * ready, the stage is held back for the cool-down at once, as after a
 * failed start (issue 12): a worker that prints a stray line on every
 * start must not be respawned in a loop. Its head message is struck when
 * it is finalized (worker_broke_protocol). */
static void worker_protocol_error(struct worker *w, const char *why, const char *line, size_t len)
{
    struct stage *s = w->stage;
    int n = (int)(len > 200 ? 200 : len);
    log_error(s->name, "worker pid=%d is out of step (%s): \"%.*s\"; tearing it down", w->pid, why, n, line);
    snprintf(w->violation, sizeof w->violation, "%s: \"%.*s\"", why, n, line);
    w->protocol_error = true;
    w->state = WORKER_CLOSING;
    if (w->ready)
        s->cooldown_until_ms = now_ms() + (uint64_t)s->env->cooldown_ms;
    worker_kill_group(w, SIGKILL);
}

static int worker_status_line(struct worker *w, const char *line, size_t len)
{
    struct proto_status st;
    enum proto_line_kind kind = proto_parse_line(line, len, &st);

    if (kind != PROTO_STATUS) {
        worker_protocol_error(w, kind == PROTO_BAD ? "an unreadable status" : "a second ready",
                              line, len);
        return -1;
    }
    if (w->count == 0) {
        proto_status_free(&st);
        worker_protocol_error(w, "a status with no message outstanding", line, len);
        return -1;
    }
    uint64_t usec = now_us() - w->head_since_us;
    int64_t id = worker_pop(w);
    /* The stage's pace, for the adaptive hand-out: a batching worker
     * answers its batch at once, so the first answer carries the batch's
     * time and the others none; the average is the time per message. */
    int64_t *pace = &w->stage->service_us;
    *pace = *pace ? *pace + ((int64_t)usec - *pace) / 16 : (int64_t)usec + 1;
    w->after_74 = st.status == EXIT_IOERR;
    w->stage->protocol_violations = 0;
    uv_timer_stop(&w->runtime);
    if (w->count > 0)
        worker_start_head(w);
    else
        w->idle_since_ms = now_ms();
    if (w->count == 0 && w->state == WORKER_CLOSING && w->close_deadline_ms == 0 && !w->protocol_error)
        w->close_deadline_ms = now_ms() + CLOSE_GRACE_MS;
    if (st.has_report && !st.report_ok)
        log_warning(w->stage->name, "dropped an unreadable report for message %lld: %s",
                    (long long)id, st.report_error);
    if (log_enabled(PLOG_DEBUG))
        log_debug(w->stage->name, "message=%lld answered by worker pid=%d status=%d after %s", (long long)id, w->pid,
                  st.status, LOG_DURATION((long long)(usec / 1000)));
    struct pool_events *ev = &w->stage->env->ev;
    ev->answered(ev->arg, w->stage, id, &st, usec);
    proto_status_free(&st);
    if (w->state == WORKER_READY)
        worker_check_rss(w, now_ms());
    if (w->retiring && w->count == 0 && w->state == WORKER_READY)
        worker_close(w, now_ms());
    ev->wake(ev->arg);
    return 0;
}

static int worker_out_line(void *arg, const char *line, size_t len)
{
    struct worker *w = arg;

    if (w->protocol_error)
        return -1;
    /* A worker retired while starting (reload, telemetry_changed) is
     * closing but still owes its "ready": that line is not a second one.
     * It then runs what it holds and goes, as any retired worker. */
    if (w->state == WORKER_STARTING || (w->state == WORKER_CLOSING && !w->ready)) {
        struct proto_status st;
        enum proto_line_kind kind = proto_parse_line(line, len, &st);
        if (kind != PROTO_READY && kind != PROTO_READY_RECYCLES) {
            if (st.report)
                proto_status_free(&st);
            worker_protocol_error(w, "expected ready", line, len);
            return -1;
        }
        /* A worker that replaces its own process (a fork of a clean parent,
         * the Python SDK: issue 16) keeps D-68 itself; one that took its
         * last ids by count before saying so keeps the retirement. */
        w->self_recycles = kind == PROTO_READY_RECYCLES && w->stage->max_messages != INT_MAX;
        if (w->self_recycles)
            log_debug(w->stage->name, "worker pid=%d replaces its own process every %d messages", w->pid,
                      w->stage->max_messages);
        if (w->state == WORKER_STARTING)
            w->state = WORKER_READY;
        w->ready = true;
        w->stage->spawn_failures = 0;
        if (w->stage->rss_recycle)
            w->rss_ready_kb = worker_rss_kb(w->pid);
        w->rss_checked_ms = now_ms();
        w->rss_checked_handed = w->handed;
        log_debug(w->stage->name, "worker pid=%d is ready", w->pid);
        if (w->count > 0)
            worker_start_head(w);
        return 0;
    }
    return worker_status_line(w, line, len);
}

/* A worker's stderr line with an sd-daemon "<N>" prefix (issue 15) takes
 * its level from it; one in our own log format ("LEVEL:  stage: text")
 * keeps its level and loses the duplicate tag; any other line is info. */
static enum log_level child_line_level(const char *stage, const char **line, size_t *len)
{
    static const char *const prefixes[] = {"ERROR:  ", "WARNING:  ", "NOTICE:  ", "INFO:  ", "DEBUG:  "};
    enum log_level sd;
    size_t skip = log_sd_prefix(*line, *len, &sd);
    if (skip > 0) {
        *line += skip;
        *len -= skip;
        return sd;
    }
    for (int i = 0; i <= PLOG_DEBUG; i++) {
        size_t pl = strlen(prefixes[i]);
        if (*len < pl || strncmp(*line, prefixes[i], pl) != 0)
            continue;
        *line += pl;
        *len -= pl;
        size_t sl = strlen(stage);
        if (*len > sl + 1 && strncmp(*line, stage, sl) == 0 && (*line)[sl] == ':') {
            *line += sl + 1;
            *len -= sl + 1;
            while (*len && **line == ' ') {
                (*line)++;
                (*len)--;
            }
        }
        return (enum log_level)i;
    }
    return PLOG_INFO;
}

static int worker_err_line(void *arg, const char *line, size_t len)
{
    struct worker *w = arg;
    enum log_level level = child_line_level(w->stage->name, &line, &len);
    size_t n = len < sizeof w->last_err - 1 ? len : sizeof w->last_err - 1;
    memcpy(w->last_err, line, n);
    w->last_err[n] = '\0';
    /* stderr goes to the runner's log, tagged with the stage (D-21). */
    log_msg(level, w->stage->name, "[%d] %.*s", w->pid, (int)len, line);
    return 0;
}

static char read_buf[65536];

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(read_buf, sizeof read_buf);
}

static void out_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct worker *w = st->data;
    if (n > 0) {
        if (line_buf_feed(&w->out_lb, buf->base, (size_t)n, worker_out_line, w) == -1 &&
            !w->protocol_error)
            worker_protocol_error(w, "a line too long", "", 0);
        return;
    }
    if (n == 0)
        return;
    uv_read_stop(st);
    w->out_eof = true;
    if (w->exited)
        worker_finalize(w);
}

static void err_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct worker *w = st->data;
    if (n > 0) {
        if (line_buf_feed(&w->err_lb, buf->base, (size_t)n, worker_err_line, w) == -1) {
            log_info(w->stage->name, "[%d] (a stderr line too long was dropped)", w->pid);
            line_buf_free(&w->err_lb);
        }
        return;
    }
    if (n < 0)
        uv_read_stop(st);
}

/* ---- exit and clean-up ---- */

static void exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct worker *w = p->data;
    w->exited = true;
    w->exit_status = status;
    w->term_signal = sig;
    w->exited_at_ms = now_ms();
    w->stage->env->dstats->workers_exited++;
    if (w->out_eof)
        worker_finalize(w);
}

static void describe_exit(const struct worker *w, char *buf, size_t cap)
{
    if (w->term_signal)
        snprintf(buf, cap, "killed by signal %d (%s)", w->term_signal, strsignal(w->term_signal));
    else
        snprintf(buf, cap, "exited with status %lld", (long long)w->exit_status);
}

/* Hands back every unanswered id without blame. */
static void worker_requeue_all(struct worker *w)
{
    int64_t ids[1024];
    size_t n = 0;
    struct pool_events *ev = &w->stage->env->ev;
    while (w->count > 0) {
        ids[n++] = worker_pop(w);
        if (n == sizeof ids / sizeof ids[0]) {
            ev->requeue(ev->arg, w->stage, ids, n);
            n = 0;
        }
    }
    if (n)
        ev->requeue(ev->arg, w->stage, ids, n);
}

/* A child that died before "ready": no blame, cool the stage down (D-90, D-91). */
static void worker_died_starting(struct worker *w, const char *how)
{
    struct stage *s = w->stage;
    s->cooldown_until_ms = now_ms() + (uint64_t)s->env->cooldown_ms;
    s->spawn_failures++;
    if (!w->term_signal && w->exit_status == 78)
        log_error(s->name, "worker refused to run (exit 78: configuration or schema): %s; "
                  "retrying after %s", w->last_err[0] ? w->last_err : "no reason given",
                  LOG_DURATION(s->env->cooldown_ms));
    else if (!s->env->shutting_down)
        log_warning(s->name, "worker pid=%d %s before ready%s%s; retrying after %s", w->pid, how,
                    w->last_err[0] ? ": " : "", w->last_err, LOG_DURATION(s->env->cooldown_ms));
    worker_requeue_all(w);
}

/* A child that died after "ready" with work outstanding: strike the head,
 * requeue the rest (D-81, D-82, D-89). */
static void worker_died_working(struct worker *w, const char *how)
{
    struct stage *s = w->stage;
    struct pool_events *ev = &s->env->ev;
    char reason[512];
    int64_t id = worker_pop(w);

    if (w->hung)
        snprintf(reason, sizeof reason, "stage %s: worker killed after MAX_RUNTIME of %lld ms",
                 s->name, (long long)s->conf->max_runtime_ms);
    else
        snprintf(reason, sizeof reason, "stage %s: worker %s%s%s", s->name, how,
                 w->last_err[0] ? ": " : "", w->last_err);
    log_warning(s->name, "worker pid=%d %s holding message %lld; striking it", w->pid,
                w->hung ? "hung" : how, (long long)id);
    ev->strike(ev->arg, s, id, w->hung ? "hang" : "crash", reason);
    worker_requeue_all(w);
}

/* A worker torn down for a line that breaks the protocol after ready: as
 * a crash (D-81), its head message gets a strike and the rest go back
 * untouched (D-89); the stage was cooled down when the line came
 * (worker_protocol_error), like a failed start (D-90). Issue 12: before,
 * nothing was struck and the worker was respawned in a hot loop. */
static void worker_broke_protocol(struct worker *w)
{
    struct stage *s = w->stage;
    struct pool_events *ev = &s->env->ev;
    char reason[512];

    s->protocol_violations++;
    if (w->count == 0) {
        log_warning(s->name, "worker pid=%d broke the worker protocol (%s) holding no message; no new worker "
                    "for %s (%llu violation(s) in a row)", w->pid, w->violation,
                    LOG_DURATION(s->env->cooldown_ms), (unsigned long long)s->protocol_violations);
        return;
    }
    int64_t id = worker_pop(w);
    snprintf(reason, sizeof reason, "stage %s: worker broke the protocol: %s", s->name, w->violation);
    log_warning(s->name, "worker pid=%d broke the worker protocol (%s) holding message %lld; striking it, "
                "requeueing %zu, no new worker for %s (%llu violation(s) in a row)", w->pid, w->violation,
                (long long)id, w->count, LOG_DURATION(s->env->cooldown_ms),
                (unsigned long long)s->protocol_violations);
    ev->strike(ev->arg, s, id, "crash", reason);
    worker_requeue_all(w);
}

/* A worker that died after answering 74: it had lost its database
 * connection, so its death is no message's fault; what it still held
 * never ran and goes back untouched (issue 12: the next id was struck). */
static void worker_died_after_74(struct worker *w, const char *how)
{
    log_warning(w->stage->name, "worker pid=%d %s after reporting a lost database connection (status 74); "
                "its %zu queued message(s) go back to pending without a strike", w->pid, how, w->count);
    worker_requeue_all(w);
}

/* A child that died before "ready" because the database had no connection
 * for it (exit 75, D-94): back-pressure, not a broken stage. Its ids go
 * back, the busiest stage is throttled (D-96) and this one cools down. */
static void worker_overloaded_starting(struct worker *w)
{
    struct stage *s = w->stage;
    struct pool_events *ev = &s->env->ev;
    s->cooldown_until_ms = now_ms() + (uint64_t)s->env->cooldown_ms;
    log_warning(s->name, "worker pid=%d could not connect: database overload (exit 75 before ready)%s%s; "
                "retrying after %s", w->pid, w->last_err[0] ? ": " : "", w->last_err,
                LOG_DURATION(s->env->cooldown_ms));
    worker_requeue_all(w);
    ev->overload(ev->arg, s);
}

static void worker_finalize(struct worker *w)
{
    struct stage *s = w->stage;
    char how[128];

    if (w->finalized)
        return;
    w->finalized = true;
    describe_exit(w, how, sizeof how);
    uv_timer_stop(&w->runtime);
    if (!w->ready && !w->term_signal && w->exit_status == EXIT_TEMPFAIL && !s->env->shutting_down)
        worker_overloaded_starting(w);
    else if (!w->ready)
        worker_died_starting(w, how);
    else if (w->count > 0 && s->env->shutting_down)
        worker_requeue_all(w);
    else if (w->protocol_error && !s->env->shutting_down)
        worker_broke_protocol(w);
    else if (w->count > 0 && w->after_74 && !w->hung)
        worker_died_after_74(w, how);
    else if (w->count > 0)
        worker_died_working(w, how);
    else if (w->state == WORKER_READY && !s->env->shutting_down)
        log_warning(s->name, "idle worker pid=%d %s unasked%s%s", w->pid, how,
                    w->last_err[0] ? ": " : "", w->last_err);
    else
        log_debug(s->name, "worker pid=%d %s", w->pid, how);

    worker_unlink(w);
    close_handle((uv_handle_t *)&w->proc);
    close_handle((uv_handle_t *)&w->in);
    close_handle((uv_handle_t *)&w->out);
    close_handle((uv_handle_t *)&w->err);
    close_handle((uv_handle_t *)&w->runtime);
    s->env->ev.wake(s->env->ev.arg);
}

/* Asks a worker to finish: EOF on stdin; SIGKILL after a grace period. */
static void worker_close(struct worker *w, uint64_t now)
{
    if (w->state == WORKER_CLOSING)
        return;
    w->state = WORKER_CLOSING;
    /* The grace period starts once its queue is empty: what it still holds
     * runs under MAX_RUNTIME like any message (worker_status_line). */
    w->close_deadline_ms = w->count == 0 ? now + CLOSE_GRACE_MS : 0;
    worker_close_stdin(w);
}

/* ---- spawning ---- */

/* Resolves PROGRAM: absolute or relative paths as given; a pepsi-stage-*
 * built-in next to the runner when it exists there; else PATH (D-22). */
static char *resolve_program(const struct stage *s)
{
    const char *p = s->conf->program;
    if (strchr(p, '/') == NULL && strncmp(p, "pepsi-stage-", 12) == 0 && s->env->self_dir) {
        char *full = xasprintf("%s/%s", s->env->self_dir, p);
        if (access(full, X_OK) == 0)
            return full;
        free(full);
    }
    return xstrdup(p);
}

/* Whether an inherited variable stays out of a worker's environment: ours
 * (set below), the journal's, and PGPASSWORD (issue 11: no password in a
 * child's environment; the runner's own went into its passfile). */
static bool env_replaced(const char *var, bool own_passfile)
{
    static const char *const names[] = {"JOURNAL_STREAM=", "PEPSI_STAGE=", "PEPSI_CONFIG=",
                                        "PEPSI_CONNINFO=", "PEPSI_SCHEMA_VERIFIED=", "PEPSI_QUEUE_LIMIT=",
                                        "PEPSI_MAX_HOPS=", "PEPSI_WORKER_SYNCHRONOUS_COMMIT=", "PEPSI_MAX_LIFETIME_MS=",
                                        "PEPSI_MAX_MESSAGES=", "PGPASSWORD="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(var, names[i], strlen(names[i])) == 0)
            return true;
    return own_passfile && strncmp(var, "PGPASSFILE=", 11) == 0;
}

/* environ plus PEPSI_STAGE, PEPSI_CONFIG, PEPSI_CONNINFO (without a
 * password), PEPSI_SCHEMA_VERIFIED and PGPASSFILE when the runner wrote one, replacing any
 * inherited ones, never PGPASSWORD. Also what a worker in another language
 * needs of the file and would otherwise have to parse it for (issue 16):
 * PEPSI_QUEUE_LIMIT and PEPSI_MAX_LIFETIME_MS (the stage's), PEPSI_MAX_HOPS
 * ([pepsi] MAX_HOPS), PEPSI_WORKER_SYNCHRONOUS_COMMIT (yes/no) and
 * PEPSI_MAX_MESSAGES (after how many messages D-68 replaces the worker's
 * process, 0: not by count; a worker that says "ready recycles" does it
 * itself); NEXT
 * and BOUNCE_STAGE come with each message from pepsi.worker_load. The strings are freed by free_env(). */
static char **build_env(const struct stage *s)
{
    size_t n = 0;
    const struct pool_env *pe = s->env;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 11, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        /* A worker's stderr is our pipe, not the journal. */
        if (env_replaced(environ[i], pe->passfile != NULL))
            continue;
        env[k++] = xstrdup(environ[i]);
    }
    env[k++] = xasprintf("PEPSI_STAGE=%s", s->name);
    if (pe->config_path)
        env[k++] = xasprintf("PEPSI_CONFIG=%s", pe->config_path);
    env[k++] = xasprintf("PEPSI_CONNINFO=%s", pe->conninfo ? pe->conninfo : "");
    /* The dispatcher serves only a schema that serves its level (D-12,
     * startup_connect): a worker whose level that range covers need not
     * check it again (issue 19). Empty before a check: workers check. */
    env[k++] = xasprintf("PEPSI_SCHEMA_VERIFIED=%s", schema_verified_token());
    /* The most it takes into one batch (QUEUE_LIMIT; unset, the adaptive
     * batch: it may hold several such batches, issue 19). */
    env[k++] = xasprintf("PEPSI_QUEUE_LIMIT=%d", conf_stage_batch_max(s->conf));
    env[k++] = xasprintf("PEPSI_MAX_LIFETIME_MS=%lld", (long long)s->conf->max_lifetime_ms);
    env[k++] = xasprintf("PEPSI_MAX_HOPS=%d", pe->max_hops);
    env[k++] = xasprintf("PEPSI_WORKER_SYNCHRONOUS_COMMIT=%s", pe->worker_synchronous_commit ? "yes" : "no");
    env[k++] = xasprintf("PEPSI_MAX_MESSAGES=%d", s->max_messages == INT_MAX ? 0 : s->max_messages);
    if (pe->passfile)
        env[k++] = xasprintf("PGPASSFILE=%s", pe->passfile);
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

static void worker_init_handles(struct worker *w, uv_loop_t *loop)
{
    /* uv_pipe_init and uv_timer_init cannot fail on a valid loop. */
    uv_pipe_init(loop, &w->in, 0);
    uv_pipe_init(loop, &w->out, 0);
    uv_pipe_init(loop, &w->err, 0);
    uv_timer_init(loop, &w->runtime);
    w->in.data = w->out.data = w->err.data = w->runtime.data = w->proc.data = w;
    w->open_handles = HANDLES_PER_WORKER;
}

static int worker_exec(struct worker *w, char *file)
{
    struct stage *s = w->stage;
    char *args[5];
    int a = 0;
    args[a++] = file;
    if (s->env->config_file) {
        args[a++] = "-c";
        args[a++] = (char *)s->env->config_file;
    }
    args[a++] = "worker";
    args[a] = NULL;

    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    stdio[0].data.stream = (uv_stream_t *)&w->in;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&w->out;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&w->err;

    char **env = build_env(s);
    uv_process_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.exit_cb = exit_cb;
    opt.file = file;
    opt.args = args;
    opt.env = env;
    opt.stdio_count = 3;
    opt.stdio = stdio;
    /* Its own session and process group, so that a hang kill reaches the
     * helpers it started; its stdin EOF still tells it when we are gone. */
    opt.flags = UV_PROCESS_DETACHED;
    int rc = uv_spawn(s->env->loop, &w->proc, &opt);
    free_env(env);
    return rc;
}

/* Starts a worker for the stage; NULL (stage cooled down) on failure. */
static struct worker *worker_spawn(struct stage *s, uint64_t now)
{
    struct worker *w = xcalloc(1, sizeof *w);
    w->stage = s;
    w->ring = (size_t)s->hand_max;
    w->ids = xcalloc(w->ring, sizeof *w->ids);
    w->state = WORKER_STARTING;
    w->idle_since_ms = now;
    w->rss_ready_kb = -1;
    worker_init_handles(w, s->env->loop);

    char *file = resolve_program(s);
    int rc = worker_exec(w, file);
    if (rc != 0) {
        log_error(s->name, "cannot start \"%s\": %s; retrying after %s", file, uv_strerror(rc),
                  LOG_DURATION(s->env->cooldown_ms));
        free(file);
        s->cooldown_until_ms = now + (uint64_t)s->env->cooldown_ms;
        w->exited = w->finalized = true;
        close_handle((uv_handle_t *)&w->proc);
        close_handle((uv_handle_t *)&w->in);
        close_handle((uv_handle_t *)&w->out);
        close_handle((uv_handle_t *)&w->err);
        close_handle((uv_handle_t *)&w->runtime);
        return NULL;
    }
    free(file);
    w->pid = w->proc.pid;
    /* A start-up that never ends must not strand the ids handed to it:
     * it gets MAX_RUNTIME too, until "ready" starts the head's clock. */
    uv_timer_start(&w->runtime, runtime_cb, (uint64_t)s->conf->max_runtime_ms, 0);
    if (uv_read_start((uv_stream_t *)&w->out, alloc_cb, out_read_cb) != 0 ||
        uv_read_start((uv_stream_t *)&w->err, alloc_cb, err_read_cb) != 0) {
        log_error(s->name, "cannot read from worker pid=%d; killing it", w->pid);
        worker_kill_group(w, SIGKILL);
    }
    w->next = s->workers;
    s->workers = w;
    s->n_workers++;
    s->env->dstats->workers_started++;
    log_debug(s->name, "started worker pid=%d (%d of %d)", w->pid, s->n_workers, s->parallelism_cap);
    return w;
}

/* ---- assignment ---- */

/* The usable worker with the most ids that still has room (packing, D-64). */
static struct worker *fullest_with_room(struct stage *s)
{
    struct worker *best = NULL;
    int usable = 0;
    for (struct worker *w = s->workers; w; w = w->next) {
        if (!worker_usable(w) || usable++ >= s->parallelism_cap || worker_room(w) <= 0)
            continue;
        if (best == NULL || w->count > best->count)
            best = w;
    }
    return best;
}

size_t stage_assign(struct stage *s, const int64_t *ids, size_t n, uint64_t now)
{
    size_t taken = 0;

    while (taken < n) {
        struct worker *w = fullest_with_room(s);
        if (w == NULL) {
            if (!stage_may_spawn(s, now) || (w = worker_spawn(s, now)) == NULL)
                break;
        }
        size_t k = (size_t)worker_room(w);
        if (k > n - taken)
            k = n - taken;
        worker_give(w, ids + taken, k, now);
        taken += k;
    }
    return taken;
}

/* ---- housekeeping ---- */

void stage_tick(struct stage *s, uint64_t now)
{
    struct worker *w = s->workers;
    while (w) {
        struct worker *next = w->next;
        if (w->exited && !w->out_eof && now >= w->exited_at_ms + EXIT_DRAIN_MS) {
            /* A helper outlived the worker and holds its stdout open: end
             * the worker's process group with it (D-08). */
            if (w->pid > 0 && kill(-w->pid, SIGKILL) != 0 && errno != ESRCH)
                log_warning(s->name, "cannot signal the helpers of worker pid=%d: %s", w->pid,
                            strerror(errno));
            worker_finalize(w);
        } else if (w->state == WORKER_READY && w->count == 0 &&
                   (w->retiring || now >= w->idle_since_ms + (uint64_t)s->conf->worker_idle_timeout_ms)) {
            log_debug(s->name, "stopping %s worker pid=%d", w->retiring ? "recycled" : "idle", w->pid);
            worker_close(w, now);
        } else if (w->state == WORKER_CLOSING && !w->exited && w->close_deadline_ms &&
                   now >= w->close_deadline_ms) {
            log_warning(s->name, "worker pid=%d did not exit when asked; killing it", w->pid);
            worker_kill_group(w, SIGKILL);
            w->close_deadline_ms = 0;
        }
        w = next;
    }
    if (s->throttle_until_ms && now >= s->throttle_until_ms) {
        s->throttle_until_ms = 0;
        s->parallelism_cap = s->conf->parallelism;
        log_notice(s->name, "overload window over; back to %d worker(s) (D-98)", s->parallelism_cap);
    }
    /* The cool-down is over: the stage may start a worker again, so claim
     * now rather than at the next heartbeat (D-90, D-91). */
    if (s->cooldown_until_ms && now >= s->cooldown_until_ms) {
        s->cooldown_until_ms = 0;
        s->env->ev.wake(s->env->ev.arg);
    }
}

void stage_retire_workers(struct stage *s)
{
    uint64_t now = now_ms();
    for (struct worker *w = s->workers; w; w = w->next)
        worker_close(w, now);
}

void stage_stop(struct stage *s, bool kill_now)
{
    uint64_t now = now_ms();
    for (struct worker *w = s->workers; w; w = w->next) {
        if (kill_now) {
            worker_kill_group(w, SIGKILL);
            continue;
        }
        /* SIGTERM to the worker alone: the SDK finishes the message in
         * hand, answers it and exits; EOF tells any other program. What
         * it holds runs under MAX_RUNTIME, as when a worker is recycled
         * (issue 15: the unit's TimeoutStopSec follows MAX_RUNTIME); the
         * grace period starts once its queue is empty. */
        if (!w->exited && w->pid > 0 && kill(w->pid, SIGTERM) != 0 && errno != ESRCH)
            log_warning(s->name, "cannot signal worker pid=%d: %s", w->pid, strerror(errno));
        w->state = WORKER_CLOSING;
        w->close_deadline_ms = w->count == 0 ? now + CLOSE_GRACE_MS : 0;
        worker_close_stdin(w);
    }
}
