/* beanstalk/server.c — `pepsi-runner beanstalk`: start-up, the listener,
 * the control connection and shutdown.
 *
 * Start-up (blocking, before anything is served): connect the control
 * connection, check the schema (exit 78 on a mismatch), call
 * pepsi.beanstalk_frontend_start(name) on it — it holds this generation's
 * advisory lock for the process's life — and LISTEN pepsi_beanstalk on
 * it; connect CONNECTIONS more for the clients' commands; bind LISTEN;
 * READY=1. A timer calls pepsi.beanstalk_reap() every REAP_INTERVAL.
 *
 * A lost database connection (the control one: the lock is gone and
 * another frontend may reap this generation; or a pool one) closes every
 * client and exits 1, so that systemd starts a new generation: clients
 * reconnect, and every put they saw acknowledged is committed.
 * SIGTERM/SIGINT: stop accepting, let each command in flight finish and
 * be answered, close every session in SQL, exit 0. */
#include "beanstalk/beanstalk.h"

#include "beanstalk/session.h"
#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/schema.h"
#include "lib/service.h"
#include "lib/util.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#define CHANNEL "pepsi_beanstalk"
#define APP "pepsi-beanstalk"

/* ---- stopping ---- */

static void shut_dbs(struct bs_frontend *fe)
{
    if (fe->dbs_shut)
        return;
    fe->dbs_shut = true;
    for (int i = 0; i < fe->n_pool; i++)
        db_shutdown(&fe->pool[i]);
    db_shutdown(&fe->control);
}

static void close_loop_handles(struct bs_frontend *fe)
{
    if (fe->listening) {
        uv_close((uv_handle_t *)&fe->listener, NULL);
        fe->listening = false;
    }
    if (!uv_is_closing((uv_handle_t *)&fe->reap_timer))
        uv_close((uv_handle_t *)&fe->reap_timer, NULL);
    if (!uv_is_closing((uv_handle_t *)&fe->sig_term))
        uv_close((uv_handle_t *)&fe->sig_term, NULL);
    if (!uv_is_closing((uv_handle_t *)&fe->sig_int))
        uv_close((uv_handle_t *)&fe->sig_int, NULL);
    if (fe->watchdog.active) {
        uv_close((uv_handle_t *)&fe->watchdog.timer, NULL);
        fe->watchdog.active = 0;
    }
}

void bs_frontend_session_gone(struct bs_frontend *fe)
{
    if (fe->stopping && fe->sessions == NULL)
        shut_dbs(fe);
}

static void stop(struct bs_frontend *fe, int code)
{
    if (fe->stopping)
        return;
    fe->stopping = true;
    fe->exit_code = code;
    sd_notify(0, "STOPPING=1");
    close_loop_handles(fe);
    if (code != 0)
        fe->dbs_shut = true; /* no SQL close: the connections are being dropped */
    for (struct bs_session *s = fe->sessions, *next; s; s = next) {
        next = s->next;
        bs_session_shutdown(s, code != 0);
    }
    if (code != 0) {
        fe->dbs_shut = false;
        shut_dbs(fe); /* fails the queries in flight: their sessions are freed */
    } else if (fe->sessions == NULL) {
        shut_dbs(fe);
    }
}

void bs_frontend_fatal(struct bs_frontend *fe, const char *why)
{
    if (fe->stopping && fe->exit_code != 0)
        return;
    log_error(BS_COMPONENT, "%s; closing every client connection and exiting so that a new generation starts",
              why);
    if (fe->stopping) { /* a SIGTERM drain in progress: end it now */
        fe->exit_code = 1;
        fe->dbs_shut = true;
        for (struct bs_session *s = fe->sessions, *next; s; s = next) {
            next = s->next;
            bs_session_shutdown(s, true);
        }
        fe->dbs_shut = false;
        shut_dbs(fe);
        return;
    }
    stop(fe, 1);
}

static void signal_cb(uv_signal_t *h, int signo)
{
    struct bs_frontend *fe = h->data;
    log_info(BS_COMPONENT, "received %s; finishing the commands in flight", strsignal(signo));
    stop(fe, 0);
}

/* ---- the control connection ---- */

static void control_lost(void *arg)
{
    bs_frontend_fatal(arg, "lost the control connection (it holds this generation's lock)");
}

static void pool_lost(void *arg)
{
    bs_frontend_fatal(arg, "lost a database connection");
}

/* A payload that is not a tube name: anyone who can connect may send one,
 * as often as they like, so it is counted and said at most once per
 * BS_NOTIFY_LOG_INTERVAL_MS. */
static void notify_invalid(struct bs_frontend *fe, size_t len)
{
    fe->notify_invalid++;
    fe->notify_invalid_unlogged++;
    uint64_t now = now_ms();
    if (fe->notify_invalid_logged_ms != 0 && now - fe->notify_invalid_logged_ms < BS_NOTIFY_LOG_INTERVAL_MS)
        return;
    log_warning(BS_COMPONENT,
                "ignored %" PRIu64 " NOTIFY " CHANNEL " payload(s) that are not tube names (%" PRIu64
                " since start; the last %s%zu bytes); the next such line comes in a minute at the earliest",
                fe->notify_invalid_unlogged, fe->notify_invalid, len > TUBE_NAME_MAX ? "over " : "",
                len > TUBE_NAME_MAX ? (size_t)TUBE_NAME_MAX : len);
    fe->notify_invalid_unlogged = 0;
    fe->notify_invalid_logged_ms = now;
}

static void notify_payload(void *arg, const char *channel, const char *payload)
{
    struct bs_frontend *fe = arg;
    if (strcmp(channel, CHANNEL) != 0 || payload == NULL || fe->stopping)
        return;
    size_t len = strnlen(payload, TUBE_NAME_MAX + 1);
    if (!tube_name_valid(payload, len)) {
        notify_invalid(fe, len);
        return;
    }
    bs_session_notify(fe, payload, len);
}

static void reap_cb(struct db *db, PGresult *res, void *arg)
{
    struct bs_frontend *fe = arg;
    if (res == NULL)
        return; /* the lost hook says it */
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_warning(BS_COMPONENT, "pepsi.beanstalk_reap() failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                    pgerr_sqlstate(res));
    } else if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "0") != 0) {
        log_notice(BS_COMPONENT, "reaped %s dead frontend(s) with their sessions and references",
                   PQgetvalue(res, 0, 0));
    }
    (void)fe;
    PQclear(res);
}

static void reap_timer_cb(uv_timer_t *t)
{
    struct bs_frontend *fe = t->data;
    if (!fe->stopping && db_idle(&fe->control))
        db_query(&fe->control, "select pepsi.beanstalk_reap()", 0, NULL, 0, reap_cb, fe);
}

/* ---- the listener ---- */

static void accept_cb(uv_stream_t *server, int status)
{
    struct bs_frontend *fe = server->data;
    if (status < 0) {
        log_warning(BS_COMPONENT, "accept failed: %s", uv_strerror(status));
        return;
    }
    if (bs_session_accept(fe, server) != 0)
        log_warning(BS_COMPONENT, "cannot accept a client connection");
}

static int listen_start(struct bs_frontend *fe)
{
    struct sockaddr_storage sa;
    int rc = strchr(fe->bc.host, ':') ? uv_ip6_addr(fe->bc.host, fe->bc.port, (struct sockaddr_in6 *)&sa)
                                      : uv_ip4_addr(fe->bc.host, fe->bc.port, (struct sockaddr_in *)&sa);
    if (rc == 0)
        rc = uv_tcp_init(fe->loop, &fe->listener);
    if (rc != 0) {
        log_error(BS_COMPONENT, "cannot listen on %s port %d: %s", fe->bc.host, fe->bc.port, uv_strerror(rc));
        return -1;
    }
    fe->listener.data = fe;
    fe->listening = true;
    rc = uv_tcp_bind(&fe->listener, (const struct sockaddr *)&sa, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&fe->listener, 511, accept_cb);
    if (rc != 0) {
        log_error(BS_COMPONENT, "cannot listen on %s port %d: %s", fe->bc.host, fe->bc.port, uv_strerror(rc));
        return -1;
    }
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (uv_tcp_getsockname(&fe->listener, (struct sockaddr *)&bound, &len) == 0)
        fe->bc.port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                        : ((struct sockaddr_in *)&bound)->sin_port);
    return 0;
}

/* ---- start ---- */

/* The waiter index, its hash seeded at random (clients choose tube names).
 * 0, or 1 (logged). */
static int waiters_start(struct bs_frontend *fe)
{
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
        seed = now_us() ^ ((uint64_t)getpid() << 32); /* no entropy yet: still not guessable from outside */
    if (bs_waiters_init(&fe->waiters, seed) != 0) {
        log_error(BS_COMPONENT, "cannot allocate the waiter index: out of memory");
        return 1;
    }
    return 0;
}

/* The control connection: schema, generation (with its lock), LISTEN.
 * Returns 0 or an exit code. */
static int control_start(struct bs_frontend *fe)
{
    PGconn *c = conn_open(fe->conf->conninfo, fe->conf->connect_timeout_ms, APP, BS_COMPONENT, NULL);
    if (c == NULL)
        return 1;
    enum schema_verdict v = schema_verify(c, BS_COMPONENT);
    if (v != SCHEMA_OK) {
        PQfinish(c);
        return v == SCHEMA_ERROR ? 1 : EXIT_CONFIG;
    }
    char host[200] = "localhost", name[300];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(name, sizeof name, "%s:%d pid %ld", host, fe->bc.port, (long)getpid());
    const char *p[] = {name};
    PGresult *r = PQexecParams(c, "select pepsi.beanstalk_frontend_start($1)", 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        log_error(BS_COMPONENT, "cannot register the frontend: %s sqlstate=%s", pgerr_message(c, r),
                  pgerr_sqlstate(r));
        PQclear(r);
        PQfinish(c);
        return 1;
    }
    fe->generation = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(fe->generation_text, sizeof fe->generation_text, "%" PRId64, fe->generation);
    PQclear(r);
    if (conn_exec(c, "listen " CHANNEL, BS_COMPONENT) != 0) {
        PQfinish(c);
        return 1;
    }
    PQsetNoticeReceiver(c, pgerr_notice_receiver, (void *)BS_COMPONENT);
    db_init(&fe->control, fe->loop, (struct db_hooks){NULL, control_lost, fe, notify_payload});
    if (db_attach(&fe->control, c) != 0)
        return 1;
    db_open_gate(&fe->control);
    return 0;
}

static int pool_start(struct bs_frontend *fe)
{
    fe->pool = xcalloc((size_t)fe->bc.connections, sizeof *fe->pool);
    for (int i = 0; i < fe->bc.connections; i++) {
        db_init(&fe->pool[i], fe->loop, (struct db_hooks){NULL, pool_lost, fe, NULL});
        fe->n_pool++;
        PGconn *c = conn_open(fe->conf->conninfo, fe->conf->connect_timeout_ms, APP, BS_COMPONENT, NULL);
        if (c == NULL)
            return 1;
        PQsetNoticeReceiver(c, pgerr_notice_receiver, (void *)BS_COMPONENT);
        if (db_attach(&fe->pool[i], c) != 0)
            return 1;
        db_open_gate(&fe->pool[i]);
    }
    return 0;
}

static int start(struct bs_frontend *fe)
{
    int code;
    if (listen_start(fe) != 0)
        return 1;
    if ((code = control_start(fe)) != 0 || (code = pool_start(fe)) != 0)
        return code;
    uv_timer_start(&fe->reap_timer, reap_timer_cb, 0, (uint64_t)fe->bc.reap_interval_ms);
    uv_signal_start(&fe->sig_term, signal_cb, SIGTERM);
    uv_signal_start(&fe->sig_int, signal_cb, SIGINT);
    fe->started_ms = now_ms();
    log_info(BS_COMPONENT, "listening on %s port %d: generation %s, %d database connection(s), MAX_JOB_SIZE %" PRIu32,
             fe->bc.host, fe->bc.port, fe->generation_text, fe->n_pool, fe->bc.max_job_size);
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s port %d, generation %s\nMAINPID=%lu", fe->bc.host, fe->bc.port,
               fe->generation_text, (unsigned long)getpid());
    service_started();
    service_watchdog_start(&fe->watchdog, fe->loop, BS_COMPONENT);
    return 0;
}

int beanstalk_serve(const struct conf *conf, const char *config_path, const char *version)
{
    struct bs_frontend fe;
    char err[1024];
    uv_loop_t loop;
    memset(&fe, 0, sizeof fe);
    if (bconf_load(conf, &fe.bc, err, sizeof err) != 0) {
        log_error(BS_COMPONENT, "%s", err);
        return EXIT_CONFIG;
    }
    if (uv_loop_init(&loop) != 0) {
        log_error(BS_COMPONENT, "cannot start the event loop");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    fe.loop = &loop;
    fe.conf = conf;
    fe.version = version;
    db_init(&fe.control, &loop, (struct db_hooks){NULL, NULL, NULL, NULL});
    uv_timer_init(&loop, &fe.reap_timer);
    fe.reap_timer.data = &fe;
    uv_signal_init(&loop, &fe.sig_term);
    uv_signal_init(&loop, &fe.sig_int);
    fe.sig_term.data = fe.sig_int.data = &fe;
    log_info(BS_COMPONENT, "starting with %s", config_path ? config_path : conf->path);
    int code = waiters_start(&fe);
    if (code == 0)
        code = start(&fe);
    if (code != 0) {
        fe.stopping = true;
        fe.exit_code = code;
        close_loop_handles(&fe);
        shut_dbs(&fe);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        log_warning(BS_COMPONENT, "handles still open at exit");
    free(fe.pool);
    bs_waiters_free(&fe.waiters);
    if (fe.exit_code == 0)
        log_info(BS_COMPONENT, "stopped");
    return fe.exit_code;
}
