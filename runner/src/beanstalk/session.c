/* beanstalk/session.c — see session.h. The life of a session:
 *   accept -> opening (beanstalk_session_open; input is read and kept)
 *   -> serving (one command at a time: busy while its query runs, waiting
 *   while a reserve waits) -> gone (the client closed, quit, or was
 *   dropped; the TCP handle closes) -> beanstalk_session_close (its
 *   reserved jobs go back to ready) -> freed once nothing refers to it
 *   (refs: the two handles and the query in flight). */
#include "beanstalk/session.h"

#include "beanstalk/backend.h"
#include "lib/log.h"
#include "lib/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK 65536          /* room offered to each read */
#define IN_HIGH (128 * 1024)      /* unframed input above this: stop reading until it is framed */
#define WRITE_HIGH (256 * 1024)   /* replies queued above this: run no command until they are sent */
#define NEVER UINT64_MAX
#define MIN_WAIT_MS 5             /* a next_at already due is tried again after this */
#define DEADLINE_SOON_MS 1000     /* beanstalkd's safety margin before a TTR deadline */
#define EARLY_MARGIN_MS 20        /* the early wake lands this far inside that last second */

static void pump(struct bs_session *s);
static void reserve_end(struct bs_session *s);

/* ---- life ---- */

static void session_free(struct bs_session *s)
{
    struct bs_frontend *fe = s->fe;
    if (s->prev)
        s->prev->next = s->next;
    else
        fe->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    bs_framer_free(&s->framer);
    free(s->in);
    free(s->body);
    for (size_t i = 0; i < s->n_watch; i++) {
        free(s->watch[i]);
        bs_waiters_unwatch(&fe->waiters, s->wlink[i]);
    }
    free(s->watch);
    free(s->wlink);
    bs_waiters_unwatch(&fe->waiters, s->new_link);
    free(s);
    bs_frontend_session_gone(fe);
}

void bs_session_release(struct bs_session *s)
{
    if (--s->refs == 0)
        session_free(s);
}

void bs_session_hold(struct bs_session *s)
{
    s->refs++;
}

static void handle_closed(uv_handle_t *h)
{
    bs_session_release(h->data);
}

static void sql_closed(struct bs_session *s)
{
    (void)s;
}

/* Once the client is gone and no query runs: the session is closed in SQL. */
static void maybe_close_sql(struct bs_session *s)
{
    if (!s->gone || s->busy || s->closed_sql)
        return;
    s->closed_sql = true;
    if (s->id == 0 || s->fe->dbs_shut)
        return;
    bs_backend_close(s, sql_closed);
}

/* The client connection ends (EOF, error, quit, drop, shutdown). */
static void session_end(struct bs_session *s)
{
    if (s->gone)
        return;
    s->gone = true;
    reserve_end(s);
    s->waiting = false;
    s->fe->n_sessions--;
    uv_timer_stop(&s->timer);
    if (s->reading)
        uv_read_stop((uv_stream_t *)&s->tcp);
    s->reading = false;
    uv_close((uv_handle_t *)&s->tcp, handle_closed);
    uv_close((uv_handle_t *)&s->timer, handle_closed);
    maybe_close_sql(s);
}

void bs_session_shutdown(struct bs_session *s, bool hard)
{
    if (hard || !s->busy)
        session_end(s);
    /* else: ends once its command is answered (pump sees the frontend stopping) */
}

void bs_session_drop(struct bs_session *s, const char *why)
{
    log_warning(BS_COMPONENT, "dropping client session=%s: %s", s->id_text, why);
    s->closed_sql = true; /* refused by SQL: nothing to close there */
    session_end(s);
}

/* ---- output ---- */

struct wreq {
    uv_write_t req;
    struct bs_session *s;
    char data[];
};

static void write_cb(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    struct bs_session *s = w->s;
    free(w);
    if (s->gone)
        return;
    if (status < 0) {
        log_debug(BS_COMPONENT, "client write failed: %s session=%s", uv_strerror(status), s->id_text);
        session_end(s);
        return;
    }
    if (s->tcp.write_queue_size <= WRITE_HIGH)
        pump(s);
}

void bs_session_write(struct bs_session *s, const char *text, size_t len)
{
    if (s->gone || len == 0)
        return;
    struct wreq *w = xmalloc(sizeof *w + len);
    w->s = s;
    memcpy(w->data, text, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&s->tcp, &b, 1, write_cb);
    if (rc != 0) {
        free(w);
        session_end(s);
    }
}

void bs_session_reply(struct bs_session *s, const char *reply, size_t len)
{
    reserve_end(s);
    s->waiting = false;
    bs_waiters_unwatch(&s->fe->waiters, s->new_link); /* a watch answered otherwise than WATCHING */
    s->new_link = NULL;
    free(s->body);
    s->body = NULL;
    if (s->gone) {
        maybe_close_sql(s);
        return;
    }
    bs_session_write(s, reply, len);
    pump(s);
}

/* ---- waiting reserves ----
 *
 * A NOTIFY pepsi_beanstalk may come from anyone who can connect, as often
 * as they like, so what one costs is bounded here. The frontend's waiter
 * index (waiters.h) lists, per tube, the sessions in a reserve that watch
 * it. A NOTIFY wakes one of them, the next in turn (the tube's "woken"
 * link): its reserve runs again, not sooner than BS_NOTIFY_FLOOR_MS after
 * the tube's last such wake and that session's last NOTIFY-made query;
 * until it answers, further NOTIFYs of the tube fold into that query (or,
 * when its query already runs and may have missed them, into one more wake
 * after it). When the woken reserve finds a job (or ends another way: a
 * timeout, the client gone) the wake passes on at once to the next
 * waiter, since more jobs may be ready; when it finds nothing, the wake
 * ends there. So a stream of NOTIFYs costs one query per tube per floor,
 * whatever the number of waiters, and a real job still reaches a waiter
 * within the floor. */

static void wake_cb(uv_timer_t *t);

/* s (waiting) runs its reserve again in delay ms at the latest. */
static void session_arm(struct bs_session *s, uint64_t delay)
{
    if (s->gone || !s->waiting)
        return;
    s->notify_armed = true;
    if (uv_is_active((uv_handle_t *)&s->timer) && uv_timer_get_due_in(&s->timer) <= delay)
        return; /* it wakes sooner anyway */
    int rc = uv_timer_start(&s->timer, wake_cb, delay, 0);
    if (rc != 0)
        log_warning(BS_COMPONENT, "cannot arm a reserve's wake-up: %s session=%s", uv_strerror(rc), s->id_text);
}

/* Wakes the next waiter of t: at once (the last one found a job), or
 * after the floor. */
static void tube_wake(struct bs_wtube *t, bool at_once)
{
    if (t->woken != NULL) {
        const struct bs_session *w = t->woken->owner;
        if (!w->waiting)
            t->again = true; /* its query runs and may not see what was just notified */
        return;
    }
    struct bs_wlink *l = bs_waiters_rotate(t);
    if (l == NULL)
        return; /* nobody waits on it */
    struct bs_session *s = l->owner;
    t->woken = l;
    s->n_woken++;
    uint64_t now = now_ms(), at = now;
    if (!at_once) {
        if (t->last_wake_ms != 0 && t->last_wake_ms + BS_NOTIFY_FLOOR_MS > at)
            at = t->last_wake_ms + BS_NOTIFY_FLOOR_MS;
        if (s->last_notify_ms != 0 && s->last_notify_ms + BS_NOTIFY_FLOOR_MS > at)
            at = s->last_notify_ms + BS_NOTIFY_FLOOR_MS;
    }
    t->last_wake_ms = at;
    if (s->waiting)
        session_arm(s, at - now);
    else
        t->again = true; /* its query runs and may not see what was just notified */
}

/* s answered the wake(s) it was given: passed on to the next waiter at
 * once (pass_on: it found a job, or its reserve ended), or, when it found
 * nothing, once more only if its tube was notified while its query ran. */
static void wakes_settle(struct bs_session *s, bool pass_on)
{
    for (size_t i = 0; i < s->n_watch && s->n_woken > 0; i++) {
        struct bs_wtube *t = s->wlink[i]->tube;
        if (t->woken != s->wlink[i])
            continue;
        t->woken = NULL;
        s->n_woken--;
        bool again = t->again;
        t->again = false;
        if (pass_on || again)
            tube_wake(t, pass_on);
    }
}

/* A reserve starts: the session waits on each tube it watches. */
static void reserve_begin(struct bs_session *s)
{
    s->in_reserve = true;
    s->notify_armed = false;
    for (size_t i = 0; i < s->n_watch; i++)
        bs_waiters_link(s->wlink[i]);
}

/* The reserve is answered, or its client is gone: off the tubes' lists,
 * and the wakes it held pass on. */
static void reserve_end(struct bs_session *s)
{
    if (!s->in_reserve)
        return;
    s->in_reserve = false;
    s->notify_armed = false;
    for (size_t i = 0; i < s->n_watch; i++)
        bs_waiters_unlink(s->wlink[i]);
    wakes_settle(s, true);
}

static void wake_cb(uv_timer_t *t)
{
    struct bs_session *s = t->data;
    if (!s->waiting || s->gone)
        return;
    s->waiting = false;
    if (s->notify_armed)
        s->last_notify_ms = now_ms();
    s->notify_armed = false;
    if (s->deadline_ms != NEVER && now_ms() >= s->deadline_ms) {
        bs_session_reply(s, BS_TIMED_OUT, strlen(BS_TIMED_OUT));
        return;
    }
    bs_backend_run(s);
}

void bs_session_wait(struct bs_session *s, int64_t wait_ms, int64_t next_at_ms)
{
    if (s->gone) {
        maybe_close_sql(s);
        return;
    }
    if (s->fe->stopping) {
        session_end(s);
        return;
    }
    uint64_t now = now_ms();
    if (s->deadline_ms != NEVER && now >= s->deadline_ms) {
        bs_session_reply(s, BS_TIMED_OUT, strlen(BS_TIMED_OUT));
        return;
    }
    uint64_t delay = NEVER;
    /* A second early: DEADLINE_SOON if it is a TTR of our own. Every wait
     * longer than that second plans the early wake again, also one that
     * follows a wake-up before it (a NOTIFY): remembering that next_at as
     * "already tried" made such a reserve sleep through the last second.
     * At most one extra query per next_at: the early wake itself lands
     * inside the second. */
    (void)next_at_ms;
    if (wait_ms > DEADLINE_SOON_MS)
        wait_ms -= DEADLINE_SOON_MS - EARLY_MARGIN_MS;
    if (wait_ms >= 0)
        delay = wait_ms < MIN_WAIT_MS ? MIN_WAIT_MS : (uint64_t)wait_ms;
    if (s->deadline_ms != NEVER && s->deadline_ms - now < delay)
        delay = s->deadline_ms - now;
    s->waiting = true;
    s->notify_armed = false;
    uv_timer_stop(&s->timer);
    if (delay != NEVER)
        uv_timer_start(&s->timer, wake_cb, delay, 0);
    log_debug(BS_COMPONENT, "reserve waits session=%s wake_ms=%lld", s->id_text,
              delay == NEVER ? -1LL : (long long)delay);
    wakes_settle(s, false); /* found nothing: a tube notified meanwhile is woken again */
}

bool bs_session_watches(const struct bs_session *s, const char *tube)
{
    for (size_t i = 0; i < s->n_watch; i++)
        if (strcmp(s->watch[i], tube) == 0)
            return true;
    return false;
}

void bs_session_notify(struct bs_frontend *fe, const char *tube, size_t len)
{
    struct bs_wtube *t = bs_waiters_find(&fe->waiters, tube, len);
    if (t != NULL)
        tube_wake(t, false);
}

void bs_session_watch_add(struct bs_session *s)
{
    if (s->new_link == NULL || bs_session_watches(s, s->cmd.tube))
        return; /* watched meanwhile: the link is freed with the reply */
    s->watch = xrealloc(s->watch, (s->n_watch + 1) * sizeof *s->watch);
    s->wlink = xrealloc(s->wlink, (s->n_watch + 1) * sizeof *s->wlink);
    s->watch[s->n_watch] = xstrdup(s->cmd.tube);
    s->wlink[s->n_watch] = s->new_link;
    s->new_link = NULL;
    s->n_watch++;
}

void bs_session_watch_remove(struct bs_session *s, const char *tube)
{
    for (size_t i = 0; i < s->n_watch; i++) {
        if (strcmp(s->watch[i], tube) != 0)
            continue;
        free(s->watch[i]);
        bs_waiters_unwatch(&s->fe->waiters, s->wlink[i]);
        memmove(s->watch + i, s->watch + i + 1, (s->n_watch - i - 1) * sizeof *s->watch);
        memmove(s->wlink + i, s->wlink + i + 1, (s->n_watch - i - 1) * sizeof *s->wlink);
        s->n_watch--;
        return;
    }
}

/* ---- commands ---- */

/* The commands answered from the session's own state. True when handled. */
static bool run_local(struct bs_session *s)
{
    char line[TUBE_NAME_MAX + 32];
    struct bs_buf y = {0}, r = {0};
    switch (s->cmd.op) {
    case BS_OP_QUIT:
        session_end(s);
        return true;
    case BS_OP_LIST_TUBE_USED:
        snprintf(line, sizeof line, "USING %s\r\n", s->use);
        bs_session_write(s, line, strlen(line));
        return true;
    case BS_OP_LIST_TUBES_WATCHED:
        bs_yaml_list(&y, (const char *const *)s->watch, s->n_watch);
        bs_reply_ok(&r, y.s, y.len);
        bs_session_write(s, r.s, r.len);
        bs_buf_free(&y);
        bs_buf_free(&r);
        return true;
    case BS_OP_WATCH:
    case BS_OP_IGNORE:
        /* Watching a watched tube, or ignoring one not watched, changes
         * nothing: answered without a round trip. */
        if (s->cmd.op == BS_OP_WATCH && !bs_session_watches(s, s->cmd.tube) && s->n_watch >= BS_MAX_WATCHED) {
            /* A client may not grow its watch list (and its references
             * in SQL, and every reserve's array) without bound: past
             * BS_MAX_WATCHED it gets beanstalkd's answer to a watch the
             * server cannot hold. */
            if (!s->watch_limit_logged)
                log_warning(BS_COMPONENT, "session=%s watches %zu tubes, the most a client may: watch answered "
                            "OUT_OF_MEMORY", s->id_text, s->n_watch);
            s->watch_limit_logged = true;
            bs_session_write(s, "OUT_OF_MEMORY\r\n", 15);
            return true;
        }
        if (bs_session_watches(s, s->cmd.tube) != (s->cmd.op == BS_OP_WATCH))
            return false;
        snprintf(line, sizeof line, "WATCHING %zu\r\n", s->n_watch);
        bs_session_write(s, line, strlen(line));
        return true;
    default:
        return false;
    }
}

/* A watch of a new tube: its link in the waiter index is made before the
 * SQL runs, so that what SQL commits the frontend can follow. 0, or -1
 * (answered OUT_OF_MEMORY, logged, nothing written). */
static int watch_prepare(struct bs_session *s)
{
    s->new_link = bs_waiters_watch(&s->fe->waiters, s->cmd.tube, s);
    if (s->new_link != NULL)
        return 0;
    log_warning(BS_COMPONENT, "out of memory for the waiter index: watch answered OUT_OF_MEMORY session=%s",
                s->id_text);
    bs_session_write(s, BS_OUT_OF_MEMORY, strlen(BS_OUT_OF_MEMORY));
    return -1;
}

static void run_command(struct bs_session *s, const struct bs_cmd *cmd, char *body)
{
    s->fe->cmd[cmd->op]++;
    s->cmd = *cmd;
    free(s->body);
    s->body = body;
    if (run_local(s)) {
        free(s->body);
        s->body = NULL;
        return;
    }
    if (cmd->op == BS_OP_WATCH && watch_prepare(s) != 0)
        return;
    if (cmd->op == BS_OP_RESERVE_TIMEOUT && cmd->timeout >= 0)
        s->deadline_ms = now_ms() + (uint64_t)cmd->timeout * 1000;
    else
        s->deadline_ms = NEVER;
    if (cmd->op == BS_OP_RESERVE || cmd->op == BS_OP_RESERVE_TIMEOUT)
        reserve_begin(s);
    bs_backend_run(s);
}

/* Frames and runs what was read, one command at a time. */
static void pump(struct bs_session *s)
{
    while (!s->busy && !s->waiting && !s->gone && s->id != 0) {
        if (s->fe->stopping) {
            session_end(s);
            return;
        }
        if (s->tcp.write_queue_size > WRITE_HIGH || s->in_off == s->in_len)
            break;
        size_t used;
        struct bs_frame fr;
        bs_framer_feed(&s->framer, s->in + s->in_off, s->in_len - s->in_off, &used, &fr);
        s->in_off += used;
        if (fr.kind == BS_FRAME_MORE)
            break;
        if (fr.kind == BS_FRAME_ERROR) {
            s->fe->cmd[fr.cmd.op]++;
            bs_session_write(s, fr.reply, strlen(fr.reply));
            continue;
        }
        run_command(s, &fr.cmd, fr.body);
    }
    if (s->gone)
        return;
    if (s->in_off == s->in_len) {
        s->in_off = s->in_len = 0;
    } else if (s->in_off > 0) {
        memmove(s->in, s->in + s->in_off, s->in_len - s->in_off);
        s->in_len -= s->in_off;
        s->in_off = 0;
    }
    if (!s->reading && s->in_len < IN_HIGH)
        bs_session_read_start(s);
}

/* ---- input ---- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct bs_session *s = h->data;
    if (s->in_cap - s->in_len < READ_CHUNK) {
        s->in_cap = s->in_len + READ_CHUNK;
        s->in = xrealloc(s->in, s->in_cap);
    }
    *buf = uv_buf_init(s->in + s->in_len, (unsigned)(s->in_cap - s->in_len));
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    struct bs_session *s = st->data;
    if (n < 0) {
        if (n != UV_EOF)
            log_debug(BS_COMPONENT, "client read failed: %s session=%s", uv_strerror((int)n), s->id_text);
        session_end(s);
        return;
    }
    s->in_len += (size_t)n;
    if (s->in_len - s->in_off > IN_HIGH) {
        uv_read_stop(st);
        s->reading = false;
    }
    pump(s);
}

void bs_session_read_start(struct bs_session *s)
{
    if (s->gone || s->reading)
        return;
    if (uv_read_start((uv_stream_t *)&s->tcp, alloc_cb, read_cb) == 0)
        s->reading = true;
    else
        session_end(s);
}

void bs_session_opened(struct bs_session *s)
{
    snprintf(s->id_text, sizeof s->id_text, "%" PRId64, s->id);
    log_debug(BS_COMPONENT, "session opened session=%s", s->id_text);
    bs_session_reply(s, NULL, 0);
}

/* ---- accept ---- */

static void rejected_closed(uv_handle_t *h)
{
    free(h);
}

static void unaccepted_closed(uv_handle_t *h)
{
    free(h->data);
}

/* A client that cannot be served: accepted and closed at once, with why
 * in the log (NULL: nothing to say, the frontend stops). */
static void accept_refuse(struct bs_frontend *fe, uv_stream_t *listener, const char *why)
{
    uv_tcp_t *t = xmalloc(sizeof *t);
    uv_tcp_init(fe->loop, t);
    if (uv_accept(listener, (uv_stream_t *)t) == 0 && why != NULL)
        log_warning(BS_COMPONENT, "client connection refused: %s", why);
    uv_close((uv_handle_t *)t, rejected_closed);
}

int bs_session_accept(struct bs_frontend *fe, uv_stream_t *listener)
{
    char why[80];
    if (fe->stopping || fe->n_sessions >= fe->bc.max_clients) {
        snprintf(why, sizeof why, "MAX_CLIENTS (%d) are open", fe->bc.max_clients);
        accept_refuse(fe, listener, fe->stopping ? NULL : why);
        return 0;
    }
    struct bs_session *s = xcalloc(1, sizeof *s);
    struct bs_wlink *dflt = bs_waiters_watch(&fe->waiters, "default", s);
    if (dflt == NULL) {
        free(s);
        accept_refuse(fe, listener, "out of memory for the waiter index");
        return 0;
    }
    s->fe = fe;
    uv_tcp_init(fe->loop, &s->tcp);
    s->tcp.data = s;
    if (uv_accept(listener, (uv_stream_t *)&s->tcp) != 0) {
        bs_waiters_unwatch(&fe->waiters, dflt);
        uv_close((uv_handle_t *)&s->tcp, unaccepted_closed);
        return -1;
    }
    uv_timer_init(fe->loop, &s->timer);
    s->timer.data = s;
    s->refs = 2;
    s->next = fe->sessions;
    if (fe->sessions)
        fe->sessions->prev = s;
    fe->sessions = s;
    fe->n_sessions++;
    fe->total_connections++;
    snprintf(s->id_text, sizeof s->id_text, "opening");
    snprintf(s->use, sizeof s->use, "default");
    s->watch = xmalloc(sizeof *s->watch);
    s->watch[0] = xstrdup("default");
    s->wlink = xmalloc(sizeof *s->wlink);
    s->wlink[0] = dflt;
    s->n_watch = 1;
    s->deadline_ms = NEVER;
    bs_framer_init(&s->framer, fe->bc.max_job_size);
    s->db = &fe->pool[fe->next_pool++ % fe->n_pool];
    uv_tcp_nodelay(&s->tcp, 1);
    bs_session_read_start(s);
    bs_backend_open(s);
    return 0;
}
