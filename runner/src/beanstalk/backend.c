/* beanstalk/backend.c — see backend.h. Every statement is one call of the
 * contract's functions (one transaction, committed before the reply is
 * sent: T-19); bodies travel as bytea in hex. */
#include "beanstalk/backend.h"

#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#define ID_MAX INT64_MAX /* a job id is a bigint: a larger one names no job */

/* ---- helpers ---- */

static void send_query(struct bs_session *s, const char *sql, int n, const char *const *params, db_cb cb)
{
    s->busy = true;
    bs_session_hold(s);
    db_query(s->db, sql, n, params, 0, cb, s);
}

static void reply_str(struct bs_session *s, const char *text)
{
    bs_session_reply(s, text, strlen(text));
}

/* "\x" and the hex of data[0..n). */
static char *hex_bytea(const char *data, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *out = xmalloc(2 * n + 3);
    out[0] = '\\';
    out[1] = 'x';
    for (size_t i = 0; i < n; i++) {
        out[2 + 2 * i] = digits[(unsigned char)data[i] >> 4];
        out[3 + 2 * i] = digits[(unsigned char)data[i] & 15];
    }
    out[2 * n + 2] = '\0';
    return out;
}

static int64_t col_int(const PGresult *r, int row, const char *name)
{
    int c = PQfnumber(r, name);
    if (c < 0 || PQgetisnull(r, row, c))
        return 0;
    return strtoll(PQgetvalue(r, row, c), NULL, 10);
}

static const char *col_text(const PGresult *r, int row, const char *name)
{
    int c = PQfnumber(r, name);
    return c < 0 || PQgetisnull(r, row, c) ? "" : PQgetvalue(r, row, c);
}

/* Replies word ("RESERVED", "FOUND") with the job of row: id column
 * job_id, body column body. */
static void reply_job(struct bs_session *s, const PGresult *r, int row, const char *word)
{
    size_t n = 0;
    int c = PQfnumber(r, "body");
    unsigned char *body = c < 0 ? NULL : PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, c), &n);
    if (body == NULL) {
        log_warning(BS_COMPONENT, "cannot decode a job body session=%s", s->id_text);
        reply_str(s, BS_INTERNAL_ERROR);
        return;
    }
    char head[64];
    size_t h = bs_job_header(head, sizeof head, word, (uint64_t)col_int(r, row, "job_id"), n);
    char *out = xmalloc(h + n + 2);
    memcpy(out, head, h);
    memcpy(out + h, body, n);
    memcpy(out + h + n, "\r\n", 2);
    PQfreemem(body);
    bs_session_reply(s, out, h + n + 2);
    free(out);
}

/* The first column of the first row is true. */
static bool first_true(const PGresult *r)
{
    return PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) && PQgetvalue(r, 0, 0)[0] == 't';
}

/* ---- answers ---- */

static void answer_reserve(struct bs_session *s, const PGresult *r)
{
    const char *outcome = PQntuples(r) > 0 ? col_text(r, 0, "outcome") : "";
    if (strcmp(outcome, "RESERVED") == 0) {
        reply_job(s, r, 0, "RESERVED");
    } else if (strcmp(outcome, "DEADLINE_SOON") == 0) {
        reply_str(s, BS_DEADLINE_SOON);
    } else if (strcmp(outcome, "NONE") == 0 && s->cmd.op != BS_OP_RESERVE_JOB) {
        int c = PQfnumber(r, "next_ms"), a = PQfnumber(r, "next_at_ms");
        bool none = c < 0 || a < 0 || PQgetisnull(r, 0, c);
        bs_session_wait(s, none ? -1 : strtoll(PQgetvalue(r, 0, c), NULL, 10),
                        none ? 0 : strtoll(PQgetvalue(r, 0, a), NULL, 10));
    } else {
        reply_str(s, BS_NOT_FOUND);
    }
}

static void answer_bool(struct bs_session *s, const PGresult *r, const char *yes)
{
    reply_str(s, first_true(r) ? yes : BS_NOT_FOUND);
}

static void answer_peek(struct bs_session *s, const PGresult *r)
{
    if (PQntuples(r) == 0)
        reply_str(s, BS_NOT_FOUND);
    else
        reply_job(s, r, 0, "FOUND");
}

static void reply_yaml(struct bs_session *s, struct bs_buf *y)
{
    struct bs_buf r = {0};
    bs_reply_ok(&r, y->s, y->len);
    bs_session_reply(s, r.s, r.len);
    bs_buf_free(&r);
    bs_buf_free(y);
}

static void answer_stats_job(struct bs_session *s, const PGresult *r)
{
    if (PQntuples(r) == 0) {
        reply_str(s, BS_NOT_FOUND);
        return;
    }
    struct bs_job_stats j = {
        (uint64_t)col_int(r, 0, "id"), col_text(r, 0, "tube"), col_text(r, 0, "state"),
        (uint32_t)col_int(r, 0, "pri"), col_int(r, 0, "age"), col_int(r, 0, "delay"), col_int(r, 0, "ttr"),
        col_int(r, 0, "time_left"), (int)col_int(r, 0, "file"), (uint32_t)col_int(r, 0, "reserves"),
        (uint32_t)col_int(r, 0, "timeouts"), (uint32_t)col_int(r, 0, "releases"), (uint32_t)col_int(r, 0, "buries"),
        (uint32_t)col_int(r, 0, "kicks"),
    };
    struct bs_buf y = {0};
    bs_yaml_job(&y, &j);
    reply_yaml(s, &y);
}

static void answer_stats_tube(struct bs_session *s, const PGresult *r)
{
    if (PQntuples(r) == 0) {
        reply_str(s, BS_NOT_FOUND);
        return;
    }
#define U(name) ((uint64_t)col_int(r, 0, name))
    struct bs_tube_stats t = {
        col_text(r, 0, "name"), U("current_jobs_urgent"), U("current_jobs_ready"), U("current_jobs_reserved"),
        U("current_jobs_delayed"), U("current_jobs_buried"), U("total_jobs"), U("current_using"),
        U("current_watching"), U("current_waiting"), U("cmd_delete"), U("cmd_pause_tube"), U("pause"),
        col_int(r, 0, "pause_time_left"),
    };
    struct bs_buf y = {0};
    bs_yaml_tube(&y, &t);
    reply_yaml(s, &y);
}

static void answer_stats(struct bs_session *s, const PGresult *r)
{
    struct bs_frontend *fe = s->fe;
    struct bs_server_stats st;
    struct rusage ru;
    struct utsname un;
    char host[256] = "", id[24];
    memset(&st, 0, sizeof st);
    if (PQntuples(r) > 0) {
        st.urgent = U("current_jobs_urgent");
        st.ready = U("current_jobs_ready");
        st.reserved = U("current_jobs_reserved");
        st.delayed = U("current_jobs_delayed");
        st.buried = U("current_jobs_buried");
        st.tubes = U("current_tubes");
        st.connections = U("current_connections");
        st.producers = U("current_producers");
        st.workers = U("current_workers");
        st.total_jobs = U("total_jobs");
    }
#undef U
    memcpy(st.cmd, fe->cmd, sizeof st.cmd);
    st.max_job_size = fe->bc.max_job_size;
    for (struct bs_session *o = fe->sessions; o; o = o->next)
        st.waiting += o->waiting || (o->busy && (o->cmd.op == BS_OP_RESERVE || o->cmd.op == BS_OP_RESERVE_TIMEOUT));
    st.total_connections = fe->total_connections;
    st.pid = (long)getpid();
    st.version = fe->version;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        st.utime_s = (long)ru.ru_utime.tv_sec;
        st.utime_us = (long)ru.ru_utime.tv_usec;
        st.stime_s = (long)ru.ru_stime.tv_sec;
        st.stime_us = (long)ru.ru_stime.tv_usec;
    }
    st.uptime = (now_ms() - fe->started_ms) / 1000;
    st.draining = fe->stopping;
    snprintf(id, sizeof id, "%016" PRIx64, (uint64_t)fe->generation);
    st.id = id;
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    st.hostname = host;
    if (uname(&un) == 0) {
        st.os = un.version;
        st.platform = un.machine;
    } else {
        st.os = st.platform = "";
    }
    struct bs_buf y = {0};
    bs_yaml_server(&y, &st);
    reply_yaml(s, &y);
}

static void answer_list(struct bs_session *s, const PGresult *r)
{
    int n = PQntuples(r);
    const char **names = xcalloc((size_t)n + 1, sizeof *names);
    for (int i = 0; i < n; i++)
        names[i] = PQgetvalue(r, i, 0);
    struct bs_buf y = {0};
    bs_yaml_list(&y, names, (size_t)n);
    free(names);
    reply_yaml(s, &y);
}

/* use, watch, ignore: the session's state follows what SQL committed. */
static void answer_reference(struct bs_session *s, const PGresult *r)
{
    char line[TUBE_NAME_MAX + 32];
    const char *t = s->cmd.tube;
    if (s->cmd.op == BS_OP_USE) {
        snprintf(s->use, sizeof s->use, "%s", t);
        snprintf(line, sizeof line, "USING %s\r\n", t);
        reply_str(s, line);
        return;
    }
    if (s->cmd.op == BS_OP_WATCH)
        bs_session_watch_add(s);
    else if (s->cmd.op == BS_OP_IGNORE)
        bs_session_watch_remove(s, t);
    long long n = PQntuples(r) > 0 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : (long long)s->n_watch;
    if (n != (long long)s->n_watch)
        log_warning(BS_COMPONENT, "the database counts %lld watched tubes, the frontend %zu session=%s", n,
                    s->n_watch, s->id_text);
    snprintf(line, sizeof line, "WATCHING %zu\r\n", s->n_watch);
    reply_str(s, line);
}

/* An error answer: beanstalkd's reply for the SQLSTATE, or the client is
 * dropped (PX060, PX061), or the frontend stops (connection). */
static void answer_error(struct bs_session *s, PGresult *res)
{
    const char *state = pgerr_sqlstate(res);
    if (strcmp(state, "PX043") == 0)
        reply_str(s, BS_NOT_FOUND);
    else if (strcmp(state, "PX062") == 0)
        reply_str(s, BS_NOT_IGNORED);
    else if (strcmp(state, "PX006") == 0 || strcmp(state, "PX003") == 0)
        reply_str(s, BS_BAD_FORMAT);
    else if (strcmp(state, "PX060") == 0)
        bs_frontend_fatal(s->fe, "this frontend's generation is not live any more (PX060: reaped, or its lock is "
                                 "free); it must not serve");
    else if (strcmp(state, "PX061") == 0)
        bs_session_drop(s, pgerr_message(s->db->conn, res));
    else if (pgerr_classify(s->db->conn, res) == PGERR_CONNECTION)
        bs_frontend_fatal(s->fe, "lost a database connection");
    else {
        log_warning(BS_COMPONENT, "%s failed: %s sqlstate=%s session=%s", bs_op_name(s->cmd.op),
                    pgerr_message(s->db->conn, res), state, s->id_text);
        reply_str(s, BS_INTERNAL_ERROR);
    }
}

static void command_cb(struct db *db, PGresult *res, void *arg)
{
    (void)db;
    struct bs_session *s = arg;
    s->busy = false;
    if (res == NULL) {
        bs_frontend_fatal(s->fe, "lost a database connection");
        bs_session_reply(s, NULL, 0);
    } else if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        answer_error(s, res);
    } else {
        switch (s->cmd.op) {
        case BS_OP_RESERVE:
        case BS_OP_RESERVE_TIMEOUT:
        case BS_OP_RESERVE_JOB:
            answer_reserve(s, res);
            break;
        case BS_OP_PUT:
            if (PQntuples(res) == 1) {
                char line[48];
                snprintf(line, sizeof line, "INSERTED %s\r\n", PQgetvalue(res, 0, 0));
                reply_str(s, line);
            } else {
                reply_str(s, BS_INTERNAL_ERROR);
            }
            break;
        case BS_OP_DELETE:
            answer_bool(s, res, BS_DELETED);
            break;
        case BS_OP_RELEASE:
            answer_bool(s, res, BS_RELEASED);
            break;
        case BS_OP_BURY:
            answer_bool(s, res, BS_BURIED);
            break;
        case BS_OP_TOUCH:
            answer_bool(s, res, BS_TOUCHED);
            break;
        case BS_OP_KICK_JOB:
            answer_bool(s, res, BS_KICKED);
            break;
        case BS_OP_KICK: {
            char line[48];
            snprintf(line, sizeof line, "KICKED %s\r\n", PQntuples(res) ? PQgetvalue(res, 0, 0) : "0");
            reply_str(s, line);
            break;
        }
        case BS_OP_PEEK:
        case BS_OP_PEEK_READY:
        case BS_OP_PEEK_DELAYED:
        case BS_OP_PEEK_BURIED:
            answer_peek(s, res);
            break;
        case BS_OP_STATS_JOB:
            answer_stats_job(s, res);
            break;
        case BS_OP_STATS_TUBE:
            answer_stats_tube(s, res);
            break;
        case BS_OP_STATS:
            answer_stats(s, res);
            break;
        case BS_OP_LIST_TUBES:
            answer_list(s, res);
            break;
        case BS_OP_USE:
        case BS_OP_WATCH:
        case BS_OP_IGNORE:
            answer_reference(s, res);
            break;
        case BS_OP_PAUSE_TUBE:
            reply_str(s, BS_PAUSED);
            break;
        default:
            reply_str(s, BS_INTERNAL_ERROR);
            break;
        }
    }
    PQclear(res);
    bs_session_release(s);
}

/* ---- the statements ---- */

static void run_reserve(struct bs_session *s)
{
    struct pgarray a = PGARRAY_INIT;
    for (size_t i = 0; i < s->n_watch; i++)
        pgarray_add_text(&a, s->watch[i]);
    char *tubes = pgarray_finish(&a);
    const char *p[] = {s->id_text, tubes};
    send_query(s,
               "select outcome, job_id, body, ceil(extract(epoch from (next_at - now())) * 1000)::bigint as next_ms,"
               " (extract(epoch from next_at) * 1000)::bigint as next_at_ms"
               " from pepsi.beanstalk_reserve($1::bigint, $2::text[])",
               2, p, command_cb);
    free(tubes);
}

void bs_backend_run(struct bs_session *s)
{
    char id[24], a[24], b[24], c[24];
    const struct bs_cmd *k = &s->cmd;
    snprintf(id, sizeof id, "%" PRIu64, k->id);
    /* A job id past a bigint names no job (beanstalkd takes 2^64-1). */
    bool big = k->id > (uint64_t)ID_MAX;
    switch (k->op) {
    case BS_OP_PUT: {
        char *hex = hex_bytea(s->body ? s->body : "", k->bytes);
        snprintf(a, sizeof a, "%" PRIu32, k->pri);
        snprintf(b, sizeof b, "%" PRIu32, k->delay);
        snprintf(c, sizeof c, "%" PRIu32, k->ttr);
        const char *p[] = {s->use, a, b, c, hex};
        send_query(s, "select pepsi.beanstalk_put($1, $2::bigint, $3::bigint, $4::bigint, $5::bytea)", 5, p,
                   command_cb);
        free(hex);
        free(s->body);
        s->body = NULL;
        return;
    }
    case BS_OP_RESERVE:
    case BS_OP_RESERVE_TIMEOUT:
        run_reserve(s);
        return;
    default:
        break;
    }
    if (big) { /* only the commands that name a job have an id */
        reply_str(s, BS_NOT_FOUND);
        return;
    }
    const char *p2[] = {s->id_text, id};
    const char *pt[] = {s->fe->generation_text, s->id_text, k->tube};
    switch (k->op) {
    case BS_OP_RESERVE_JOB:
        send_query(s, "select outcome, job_id, body from pepsi.beanstalk_reserve_job($1::bigint, $2::bigint)", 2, p2,
                   command_cb);
        return;
    case BS_OP_DELETE:
        send_query(s, "select pepsi.beanstalk_delete($1::bigint, $2::bigint)", 2, p2, command_cb);
        return;
    case BS_OP_TOUCH:
        send_query(s, "select pepsi.beanstalk_touch($1::bigint, $2::bigint)", 2, p2, command_cb);
        return;
    case BS_OP_RELEASE: {
        snprintf(a, sizeof a, "%" PRIu32, k->pri);
        snprintf(b, sizeof b, "%" PRIu32, k->delay);
        const char *p[] = {s->id_text, id, a, b};
        send_query(s, "select pepsi.beanstalk_release($1::bigint, $2::bigint, $3::bigint, $4::bigint)", 4, p,
                   command_cb);
        return;
    }
    case BS_OP_BURY: {
        snprintf(a, sizeof a, "%" PRIu32, k->pri);
        const char *p[] = {s->id_text, id, a};
        send_query(s, "select pepsi.beanstalk_bury($1::bigint, $2::bigint, $3::bigint)", 3, p, command_cb);
        return;
    }
    case BS_OP_PEEK: {
        const char *p[] = {id};
        send_query(s, "select job_id, body from pepsi.beanstalk_peek($1::bigint)", 1, p, command_cb);
        return;
    }
    case BS_OP_PEEK_READY:
    case BS_OP_PEEK_DELAYED:
    case BS_OP_PEEK_BURIED: {
        const char *state = k->op == BS_OP_PEEK_READY ? "ready" : k->op == BS_OP_PEEK_DELAYED ? "delayed" : "buried";
        const char *p[] = {s->use, state};
        send_query(s, "select job_id, body from pepsi.beanstalk_peek_state($1, $2)", 2, p, command_cb);
        return;
    }
    case BS_OP_KICK: {
        snprintf(a, sizeof a, "%" PRIu32, k->bound);
        const char *p[] = {s->use, a};
        send_query(s, "select pepsi.beanstalk_kick($1, $2::bigint)", 2, p, command_cb);
        return;
    }
    case BS_OP_KICK_JOB: {
        const char *p[] = {id};
        send_query(s, "select pepsi.beanstalk_kick_job($1::bigint)", 1, p, command_cb);
        return;
    }
    case BS_OP_STATS_JOB: {
        const char *p[] = {id};
        send_query(s, "select * from pepsi.beanstalk_stats_job($1::bigint)", 1, p, command_cb);
        return;
    }
    case BS_OP_STATS_TUBE: {
        const char *p[] = {k->tube};
        send_query(s, "select * from pepsi.beanstalk_stats_tube($1)", 1, p, command_cb);
        return;
    }
    case BS_OP_STATS:
        send_query(s, "select * from pepsi.beanstalk_stats()", 0, NULL, command_cb);
        return;
    case BS_OP_LIST_TUBES:
        send_query(s, "select t from pepsi.beanstalk_list_tubes() t", 0, NULL, command_cb);
        return;
    case BS_OP_USE:
        send_query(s, "select pepsi.beanstalk_use($1::bigint, $2::bigint, $3)", 3, pt, command_cb);
        return;
    case BS_OP_WATCH:
        send_query(s, "select pepsi.beanstalk_watch($1::bigint, $2::bigint, $3)", 3, pt, command_cb);
        return;
    case BS_OP_IGNORE:
        send_query(s, "select pepsi.beanstalk_ignore($1::bigint, $2::bigint, $3)", 3, pt, command_cb);
        return;
    case BS_OP_PAUSE_TUBE: {
        /* beanstalkd pauses for at least a moment; tube_pause(t, 0) ends a pause, which is the same */
        snprintf(a, sizeof a, "%" PRIu32, k->delay);
        const char *p[] = {k->tube, a};
        send_query(s, "select pepsi.tube_pause($1, least($2::bigint, 2147483647)::int)", 2, p, command_cb);
        return;
    }
    default:
        reply_str(s, BS_INTERNAL_ERROR);
        return;
    }
}

/* ---- open and close ---- */

static void open_cb(struct db *db, PGresult *res, void *arg)
{
    (void)db;
    struct bs_session *s = arg;
    s->busy = false;
    if (res == NULL) {
        bs_frontend_fatal(s->fe, "lost a database connection");
        bs_session_reply(s, NULL, 0);
    } else if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        if (pgerr_classify(s->db->conn, res) == PGERR_CONNECTION)
            bs_frontend_fatal(s->fe, "lost a database connection");
        else if (strcmp(pgerr_sqlstate(res), "PX060") == 0)
            bs_frontend_fatal(s->fe, "this frontend's generation is not live any more (PX060: reaped, or its lock "
                                     "is free); it must not serve");
        else
            bs_session_drop(s, pgerr_message(s->db->conn, res));
    } else {
        s->id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        bs_session_opened(s);
    }
    PQclear(res);
    bs_session_release(s);
}

void bs_backend_open(struct bs_session *s)
{
    const char *p[] = {s->fe->generation_text};
    send_query(s, "select pepsi.beanstalk_session_open($1::bigint)", 1, p, open_cb);
}

struct close_op {
    struct bs_session *s;
    void (*done)(struct bs_session *s);
};

static void close_cb(struct db *db, PGresult *res, void *arg)
{
    struct close_op *op = arg;
    struct bs_session *s = op->s;
    if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK) {
        const char *n = PQntuples(res) ? PQgetvalue(res, 0, 0) : "0";
        if (strcmp(n, "0") != 0)
            log_debug(BS_COMPONENT, "session closed: %s reserved job(s) back to ready session=%s", n, s->id_text);
    } else if (res != NULL) {
        log_warning(BS_COMPONENT, "cannot close a session: %s sqlstate=%s session=%s", pgerr_message(db->conn, res),
                    pgerr_sqlstate(res), s->id_text);
    }
    PQclear(res);
    op->done(s);
    free(op);
    bs_session_release(s);
}

void bs_backend_close(struct bs_session *s, void (*done)(struct bs_session *s))
{
    struct close_op *op = xmalloc(sizeof *op);
    op->s = s;
    op->done = done;
    bs_session_hold(s);
    const char *p[] = {s->fe->generation_text, s->id_text};
    db_query(s->db, "select pepsi.beanstalk_session_close($1::bigint, $2::bigint)", 2, p, 0, close_cb, op);
}
