/* lib/aconn.c — see aconn.h. */
#include "lib/aconn.h"
#include "lib/pgerr.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct aconn {
    uv_loop_t *loop;
    PGconn *conn;
    int fd;
    uv_poll_t *poll;             /* on fd; replaced when libpq changes sockets */
    uv_timer_t timer;            /* the timeout; also defers an early failure to the loop */
    int open_handles;
    bool done;                   /* cb called or cancelled */
    aconn_cb cb;
    void *arg;
    char why[512];
};

static void aconn_poll_cb(uv_poll_t *h, int status, int events);

static void handle_closed(uv_handle_t *h)
{
    struct aconn *a = h->data;
    if (h != (uv_handle_t *)&a->timer)
        free(h);
    if (--a->open_handles == 0)
        free(a);
}

static void close_poll(struct aconn *a)
{
    if (a->poll == NULL)
        return;
    uv_poll_stop(a->poll);
    uv_close((uv_handle_t *)a->poll, handle_closed);
    a->poll = NULL;
}

/* Ends the attempt: closes the handles, hands over or closes conn. */
static void finish(struct aconn *a, bool ok, bool call)
{
    PGconn *conn = a->conn;
    a->conn = NULL;
    a->done = true;
    close_poll(a);
    uv_timer_stop(&a->timer);
    uv_close((uv_handle_t *)&a->timer, handle_closed);
    if (!ok && conn)
        PQfinish(conn);
    if (call)
        a->cb(ok ? conn : NULL, ok ? NULL : a->why, !ok && conn_error_is_overload(a->why), a->arg);
    else if (ok)
        PQfinish(conn);
}

static void fail(struct aconn *a, const char *why)
{
    conn_error_line(why, a->why, sizeof a->why);
    finish(a, false, true);
}

/* Watches libpq's socket for events. The handle is made anew at every
 * step: libpq may close its socket and open another between two calls of
 * PQconnectPoll (SSL refused, the next host), and the new one can have the
 * same number, which epoll has already forgotten. 0 or -1. */
static int watch(struct aconn *a, int events)
{
    int fd = PQsocket(a->conn);
    if (fd < 0)
        return -1;
    close_poll(a);
    a->poll = xmalloc(sizeof *a->poll);
    if (uv_poll_init_socket(a->loop, a->poll, fd) != 0) {
        free(a->poll);
        a->poll = NULL;
        return -1;
    }
    a->poll->data = a;
    a->open_handles++;
    a->fd = fd;
    return uv_poll_start(a->poll, events, aconn_poll_cb) == 0 ? 0 : -1;
}

/* One step of PQconnectPoll, and what to wait for next. */
static void step(struct aconn *a)
{
    switch (PQconnectPoll(a->conn)) {
    case PGRES_POLLING_OK:
        finish(a, true, true);
        return;
    case PGRES_POLLING_READING:
        if (watch(a, UV_READABLE) != 0)
            fail(a, "cannot poll the database socket");
        return;
    case PGRES_POLLING_WRITING:
        if (watch(a, UV_WRITABLE) != 0)
            fail(a, "cannot poll the database socket");
        return;
    default:
        fail(a, pgerr_conn_message(a->conn));
        return;
    }
}

static void aconn_poll_cb(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct aconn *a = h->data;
    if (a->done || h != a->poll)
        return;
    (void)status; /* an error on the socket: PQconnectPoll reads it and says what it means */
    step(a);
}

static void timeout_cb(uv_timer_t *t)
{
    struct aconn *a = t->data;
    char why[sizeof a->why];
    if (a->done)
        return;
    if (a->conn == NULL)
        snprintf(why, sizeof why, "%s", a->why);
    else
        snprintf(why, sizeof why, "%s", PQstatus(a->conn) == CONNECTION_BAD ? pgerr_conn_message(a->conn) : "timed out");
    fail(a, why);
}

struct aconn *aconn_start(uv_loop_t *loop, const char *conninfo, int64_t timeout_ms, const char *app,
                          aconn_cb cb, void *arg)
{
    struct aconn *a = xcalloc(1, sizeof *a);
    a->loop = loop;
    a->cb = cb;
    a->arg = arg;
    a->fd = -1;
    if (uv_timer_init(loop, &a->timer) != 0) {
        free(a);
        return NULL;
    }
    a->timer.data = a;
    a->open_handles = 1;
    a->conn = conn_start(conninfo, timeout_ms, app);
    if (a->conn == NULL || PQstatus(a->conn) == CONNECTION_BAD) {
        /* Said from the loop, like every other outcome. */
        snprintf(a->why, sizeof a->why, "%s", a->conn ? pgerr_conn_message(a->conn) : "out of memory");
        if (a->conn) {
            PQfinish(a->conn);
            a->conn = NULL;
        }
        if (uv_timer_start(&a->timer, timeout_cb, 0, 0) != 0) {
            finish(a, false, false);
            return NULL;
        }
        return a;
    }
    if (uv_timer_start(&a->timer, timeout_cb, (uint64_t)(timeout_ms > 0 ? timeout_ms : 10000), 0) != 0 ||
        watch(a, UV_WRITABLE) != 0) {
        a->cb = NULL;
        finish(a, false, false);
        return NULL;
    }
    return a;
}

void aconn_cancel(struct aconn *a)
{
    if (a && !a->done)
        finish(a, false, false);
}
