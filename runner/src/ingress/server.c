/* ingress/server.c — see server.h.
 *
 * A POST /hooks/<provider> request goes through the access handler in
 * these steps (MHD calls it once with the headers, once per piece of the
 * body, once more when the body is complete, and again after a resume):
 *   1. headers: the path names a provider we know (else 404, no body
 *      read), the method is POST (else 405), a Content-Length over
 *      MAX_BODY is answered 413 at once: the response is queued in this
 *      first call, so MHD reads none of the body and closes the
 *      connection after the answer (a client that sent "Expect:
 *      100-continue" never sends it). Nothing is allocated before these
 *      checks pass, and then only a small buffer (BODY_INITIAL).
 *   2. body pieces are appended; the buffer grows with the bytes that
 *      really arrived, never from what Content-Length claims. A body
 *      without Content-Length (chunked) that grows past MAX_BODY is
 *      dropped at once (buffer freed) and the rest of it is read and
 *      discarded: MHD cannot answer while a body streams in, so the 413
 *      goes out when the body ends; one that goes on past another
 *      MAX_BODY has its connection closed instead.
 *   3. complete: the signature is checked over the exact bytes received
 *      (401/400 on failure, counted by reason, no query), then the
 *      external id is found (400 when missing). The event is queued for a
 *      writer and the connection suspended.
 *   4. resumed by the writer after the commit: 200 for a new or known
 *      event, 503 when the database did not store it (the provider
 *      retries), never 2xx before the commit (D-78).
 * Connections (issue 11): MAX_CONNECTIONS in all, MAX_CONNECTIONS_PER_IP
 * from one address (more are accepted and closed at once by MHD),
 * CLIENT_TIMEOUT of silence closes one, MAX_HEADER bounds the memory MHD
 * gives a connection (headers that do not fit: 431). */
#include "ingress/server.h"

#include "ingress/event.h"
#include "lib/log.h"
#include "lib/util.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COMPONENT "ingress"
#define HOOKS_PREFIX "/hooks/"
#define PROVIDER_NAME_MAX 63
#define BODY_INITIAL 16384              /* bytes of body buffer before any data has arrived */

struct server {
    struct server_env env;
    struct MHD_Daemon *daemon;
    int port;
    atomic_int waiting;                 /* requests handed to the writers, not completed yet */
};

enum phase { PH_BODY, PH_QUEUED, PH_DONE };

/* One POST /hooks/<provider> request. */
struct request {
    struct server *server;
    enum phase phase;
    char provider[PROVIDER_NAME_MAX + 1];
    unsigned char *body;
    size_t len, cap;
    size_t limit;                       /* MAX_BODY, or a smaller Content-Length */
    size_t dropped;                     /* bytes of an over-long chunked body read and thrown away */
    bool too_large;                     /* the body went past MAX_BODY: answered 413 when it ends */
    bool counted;                       /* its rejection has been counted */
    bool submitted;                     /* handed to the writers: counted in waiting */
    struct MHD_Connection *conn;
    uint64_t queued_us;
    struct ingress_item item;
};

/* ---- answers ---- */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned int status, const char *text, bool allow_post)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (allow_post)
        MHD_add_response_header(r, "Allow", "POST");
    if (status == 413) /* what is left of the body is not read: the connection cannot be reused */
        MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* Answers a rejection and counts it by reason. */
static enum MHD_Result reject(struct server *s, struct MHD_Connection *c, unsigned int status,
                              enum reject_reason why)
{
    char text[96];
    metrics_reject(s->env.metrics, why);
    log_debug(COMPONENT, "rejected a request: %u %s", status, metrics_reason_name(why));
    snprintf(text, sizeof text, "{\"error\":\"%s\"}\n", metrics_reason_name(why));
    return respond(c, status, text, why == RJ_METHOD);
}

/* ---- GET endpoints ---- */

static enum MHD_Result serve_healthz(struct server *s, struct MHD_Connection *c)
{
    char text[160];
    bool up = writer_pool_database_up(s->env.writers);
    snprintf(text, sizeof text, "{\"status\":\"%s\",\"database\":%s,\"providers\":%zu}\n", up ? "ok" : "unavailable",
             up ? "true" : "false", provider_cache_count(s->env.providers));
    return respond(c, up ? 200 : 503, text, false);
}

static enum MHD_Result serve_metrics(struct server *s, struct MHD_Connection *c)
{
    atomic_store(&s->env.metrics->providers, provider_cache_count(s->env.providers));
    char *text = metrics_render(s->env.metrics);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- headers of a request ---- */

static const char *header_get(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

struct visit_closure {
    event_header_visit visit;
    void *arg;
};

static enum MHD_Result header_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct visit_closure *v = cls;
    (void)kind;
    if (key && value)
        v->visit(v->arg, key, value);
    return MHD_YES;
}

static void headers_each(void *ctx, event_header_visit visit, void *arg)
{
    struct visit_closure v = {visit, arg};
    (void)MHD_get_connection_values(ctx, MHD_HEADER_KIND, header_iter, &v);
}

/* ---- step 1: the headers ---- */

/* The provider name of a /hooks/<provider> path, or NULL. */
static const char *hook_name(const char *url)
{
    size_t plen = strlen(HOOKS_PREFIX);
    if (strncmp(url, HOOKS_PREFIX, plen) != 0)
        return NULL;
    const char *name = url + plen;
    size_t n = strlen(name);
    if (n == 0 || n > PROVIDER_NAME_MAX || strchr(name, '/'))
        return NULL;
    return name;
}

static bool provider_known(struct server *s, const char *name)
{
    bool known = provider_cache_acquire(s->env.providers, name) != NULL;
    provider_cache_release(s->env.providers);
    return known;
}

/* The declared Content-Length, or -1 when there is none (chunked). */
static long long content_length(struct MHD_Connection *c)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    char *end;
    if (v == NULL)
        return -1;
    long long n = strtoll(v, &end, 10);
    return *end == '\0' && n >= 0 ? n : -1;
}

static enum MHD_Result on_headers(struct server *s, struct MHD_Connection *c, const char *url, const char *method,
                                  void **con_cls)
{
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (strcmp(url, "/healthz") == 0)
        return get ? serve_healthz(s, c) : reject(s, c, 405, RJ_METHOD);
    if (strcmp(url, "/metrics") == 0)
        return get ? serve_metrics(s, c) : reject(s, c, 405, RJ_METHOD);
    const char *name = hook_name(url);
    if (name == NULL)
        return reject(s, c, 404, RJ_NOT_FOUND);
    if (strcmp(method, "POST") != 0)
        return reject(s, c, 405, RJ_METHOD);
    if (!provider_known(s, name))
        return reject(s, c, 404, RJ_UNKNOWN_PROVIDER);
    long long declared = content_length(c);
    if (declared > s->env.conf->max_body)
        return reject(s, c, 413, RJ_BODY_TOO_LARGE);

    struct request *rq = xcalloc(1, sizeof *rq);
    rq->server = s;
    rq->conn = c;
    snprintf(rq->provider, sizeof rq->provider, "%s", name);
    /* Content-Length is the client's claim: it only caps the first buffer. */
    rq->cap = declared >= 0 && declared < BODY_INITIAL ? (size_t)declared : BODY_INITIAL;
    rq->body = xmalloc(rq->cap);
    rq->limit = declared >= 0 ? (size_t)declared : (size_t)s->env.conf->max_body;
    rq->item.owner = rq;
    *con_cls = rq;
    return MHD_YES;
}

/* ---- step 2: the body ---- */

/* Drops the body of a request that went past MAX_BODY: its memory goes
 * now, and what still arrives is counted, not kept. */
static void body_drop(struct request *rq)
{
    rq->too_large = true;
    rq->dropped = rq->len;
    free(rq->body);
    rq->body = NULL;
    rq->len = rq->cap = 0;
}

/* Grows the buffer to hold need bytes: doubling, never past the limit. */
static void body_reserve(struct request *rq, size_t need)
{
    size_t max = rq->limit > need ? rq->limit : need;
    if (need <= rq->cap)
        return;
    size_t cap = rq->cap ? rq->cap : BODY_INITIAL;
    while (cap < need)
        cap *= 2;
    rq->cap = cap < max ? cap : max;
    rq->body = xrealloc(rq->body, rq->cap);
}

static enum MHD_Result on_body(struct request *rq, const char *data, size_t *size)
{
    size_t max = (size_t)rq->server->env.conf->max_body;
    size_t n = *size;
    *size = 0;
    if (!rq->too_large && rq->len + n > max)
        body_drop(rq);
    if (rq->too_large) {
        /* A response cannot be queued while the body streams in: read and
         * discard up to another MAX_BODY to answer 413 at its end; a body
         * that goes on past that is cut off (the connection closed). */
        rq->dropped += n;
        if (rq->dropped <= 2 * max)
            return MHD_YES;
        metrics_reject(rq->server->env.metrics, RJ_BODY_TOO_LARGE);
        rq->counted = true;
        log_debug(COMPONENT, "closed a connection: its body went on past twice MAX_BODY (%zu bytes)", max);
        return MHD_NO;
    }
    body_reserve(rq, rq->len + n);
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
    return MHD_YES;
}

/* ---- step 3: verify and queue ---- */

static const enum reject_reason sig_reasons[] = {
    [SIG_OK] = RJ_COUNT,
    [SIG_NO_SIGNATURE] = RJ_MISSING_SIGNATURE,
    [SIG_BAD_SIGNATURE] = RJ_BAD_SIGNATURE,
    [SIG_NO_TIMESTAMP] = RJ_MISSING_TIMESTAMP,
    [SIG_BAD_TIMESTAMP] = RJ_BAD_TIMESTAMP,
    [SIG_STALE_TIMESTAMP] = RJ_STALE_TIMESTAMP,
    [SIG_NO_ID] = RJ_MISSING_ID,
    [SIG_CONFLICT] = RJ_CONFLICTING_HEADERS,
};

/* Verifies the request and finds its external id. Returns the HTTP
 * status of a rejection (with *why), or 0 with *id set. */
static unsigned int verify(struct request *rq, const struct event_source *src, char **id, enum reject_reason *why)
{
    struct server *s = rq->server;
    unsigned int status = 0;
    const struct provider *p = provider_cache_acquire(s->env.providers, rq->provider);
    if (p == NULL) {
        *why = RJ_UNKNOWN_PROVIDER; /* disabled while the body came in */
        status = 404;
    } else {
        enum sig_result r = sig_verify(&p->sig, header_get, rq->conn, rq->body, rq->len, (int64_t)time(NULL));
        if (r != SIG_OK) {
            *why = sig_reasons[r];
            status = (unsigned int)sig_result_status(r);
        } else {
            enum event_result e = event_external_id(p, src, rq->body, rq->len, id);
            if (e != EV_OK) {
                *why = e == EV_NO_ID ? RJ_MISSING_ID : RJ_BAD_ID;
                status = 400;
            }
        }
    }
    provider_cache_release(s->env.providers);
    return status;
}

/* The writer's callback: the answer is known; wake the request up. */
static void item_done(struct ingress_item *it)
{
    struct request *rq = it->owner;
    rq->phase = PH_DONE;
    MHD_resume_connection(rq->conn);
}

static void suspend_cb(void *arg)
{
    MHD_suspend_connection(arg);
}

static enum MHD_Result on_complete(struct request *rq)
{
    struct server *s = rq->server;
    struct event_source src = {header_get, headers_each, rq->conn};
    enum reject_reason why = RJ_COUNT;
    char *id = NULL;
    char received[40];

    if (rq->too_large) {
        rq->counted = true;
        return reject(s, rq->conn, 413, RJ_BODY_TOO_LARGE);
    }
    unsigned int status = verify(rq, &src, &id, &why);
    if (status != 0) {
        rq->counted = true;
        return reject(s, rq->conn, status, why);
    }
    rq->item.event_json = event_json(rq->provider, id, &src, wall_timestamp(received, sizeof received), rq->len);
    free(id);
    if (rq->item.event_json == NULL) {
        rq->counted = true;
        return reject(s, rq->conn, 400, RJ_BAD_ID);
    }
    rq->item.payload = rq->body;
    rq->item.payload_len = rq->len;
    rq->item.done = item_done;
    rq->phase = PH_QUEUED;
    rq->queued_us = now_us();
    rq->submitted = true;
    atomic_fetch_add(&s->waiting, 1);
    if (writer_submit(s->env.writers, &rq->item, suspend_cb, rq->conn) != 0) {
        rq->phase = PH_DONE;
        rq->counted = true;
        return reject(s, rq->conn, 503, RJ_SHUTTING_DOWN);
    }
    return MHD_YES;
}

/* ---- step 4: the answer ---- */

static enum MHD_Result on_answer(struct request *rq)
{
    struct server *s = rq->server;
    enum MHD_Result ok;
    metrics_request(s->env.metrics, now_us() - rq->queued_us);
    if (rq->item.status == 200) {
        char text[64];
        snprintf(text, sizeof text, "{\"outcome\":\"%s\"}\n", rq->item.outcome);
        ok = respond(rq->conn, 200, text, false);
    } else {
        rq->counted = true;
        ok = reject(s, rq->conn, (unsigned int)rq->item.status, RJ_DATABASE);
    }
    return ok;
}

/* ---- MHD callbacks ---- */

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    struct server *s = cls;
    struct request *rq = *con_cls;
    (void)version;
    if (rq == NULL)
        return on_headers(s, c, url, method, con_cls);
    if (*upload_data_size > 0)
        return on_body(rq, upload_data, upload_data_size);
    switch (rq->phase) {
    case PH_BODY:
        return on_complete(rq);
    case PH_DONE:
        return on_answer(rq);
    default:
        return MHD_YES; /* suspended: not called; resumed: PH_DONE */
    }
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct server *s = cls;
    struct request *rq = *con_cls;
    (void)c;
    if (rq == NULL)
        return;
    if (rq->submitted) /* its answer has been sent, or its client is gone */
        atomic_fetch_sub(&s->waiting, 1);
    if (!rq->counted && toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        metrics_reject(s->env.metrics, RJ_TIMEOUT);
    else if (!rq->counted && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
             toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
        metrics_reject(s->env.metrics, RJ_CLIENT_ERROR);
    free(rq->item.event_json);
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* MHD's own messages, at debug. The one MHD logs when it closes a
 * connection it has just accepted because MAX_CONNECTIONS or
 * MAX_CONNECTIONS_PER_IP is reached is also counted: nothing else tells
 * the application about such a connection. */
static void mhd_log_cb(void *cls, const char *fmt, va_list ap)
{
    static const char limit_msg[] = "Server reached connection limit";
    struct server *s = cls;
    char line[512];
    if (strncmp(fmt, limit_msg, sizeof limit_msg - 1) == 0)
        metrics_reject(s->env.metrics, RJ_CONNECTION_LIMIT);
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_debug(COMPONENT, "http: %s", line);
}

/* ---- the daemon ---- */

union sockaddr_any {
    struct sockaddr sa;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
};

static bool listen_address(const struct ingress_conf *conf, union sockaddr_any *a)
{
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET, conf->listen, &a->v4.sin_addr) == 1) {
        a->v4.sin_family = AF_INET;
        a->v4.sin_port = htons((uint16_t)conf->port);
        return false;
    }
    if (inet_pton(AF_INET6, conf->listen, &a->v6.sin6_addr) != 1)
        log_warning(COMPONENT, "LISTEN \"%s\" is not an address; using ::", conf->listen);
    a->v6.sin6_family = AF_INET6;
    a->v6.sin6_port = htons((uint16_t)conf->port);
    return true;
}

struct server *server_start(const struct server_env *env)
{
    struct server *s = xcalloc(1, sizeof *s);
    union sockaddr_any addr;
    const struct ingress_conf *cf = env->conf;
    s->env = *env;
    bool v6 = listen_address(cf, &addr);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6) /* "::" takes IPv4 too (dual stack); another IPv6 address only itself */
        flags |= strcmp(cf->listen, "::") == 0 ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    unsigned int timeout_s = (unsigned int)((cf->client_timeout_ms + 999) / 1000);
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, access_cb, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb, s,
        MHD_OPTION_SOCK_ADDR, &addr.sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cf->threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cf->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)cf->max_connections_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cf->max_header,
        MHD_OPTION_NOTIFY_COMPLETED, completed_cb, s,
        MHD_OPTION_END);
    if (s->daemon == NULL) {
        log_error(COMPONENT, "cannot listen on %s port %d (in use, or not an address of this host?)", cf->listen,
                  cf->port);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? (int)info->port : cf->port;
    return s;
}

int server_port(const struct server *s)
{
    return s->port;
}

void server_quiesce(struct server *s)
{
    MHD_socket fd = MHD_quiesce_daemon(s->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
}

int server_wait_answered(struct server *s, int64_t timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    while (atomic_load(&s->waiting) > 0 && now_ms() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return atomic_load(&s->waiting);
}

void server_stop(struct server *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    free(s);
}
