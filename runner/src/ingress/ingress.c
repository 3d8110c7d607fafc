/* ingress/ingress.c — `pepsi-runner ingress`: start-up, the control loop
 * and shutdown. Threads:
 *   - the HTTP threads (server.c) verify requests and queue events;
 *   - the writers (writer.c) store bursts of events, one commit each;
 *   - this thread: signals, and a listening connection that reloads the
 *     providers on NOTIFY webhook_provider_changed (and every
 *     RELOAD_INTERVAL, on SIGHUP, and after reconnecting, since
 *     notifications sent while it was away are lost). Through the
 *     router of a sharded topology (issue 18) no NOTIFY arrives: there
 *     SIGHUP or RELOAD_INTERVAL reloads.
 * Start-up connects first and refuses to run without the database (exit
 * 1) or with another schema than this build's (exit 78, D-12); then it
 * loads the providers, connects the writers, binds, and tells systemd
 * READY=1. SIGTERM or SIGINT: stop accepting connections, answer 503 to
 * what is verified from then on, write what is queued, answer it, exit 0. */
#include "ingress/ingress.h"

#include "lib/conn.h"
#include "ingress/iconf.h"
#include "ingress/metrics.h"
#include "ingress/provider.h"
#include "ingress/server.h"
#include "ingress/writer.h"
#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/schema.h"
#include "lib/service.h"
#include "lib/util.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#define COMPONENT "ingress"
#define CHANNEL "webhook_provider_changed"
#define LISTENER_RETRY_MS 2000
#define STATUS_EVERY_MS 10000
#define DRAIN_MS 10000          /* how long shutdown waits for answers to be sent */
#define STATS_FLUSH_MS 30000    /* rejection counters into pepsi.ingress_stats (the anomaly checks' rates) */

struct ingress {
    struct conf *conf;
    struct ingress_conf ic;
    struct metrics metrics;
    struct provider_cache providers;
    PGconn *listener;
    uint64_t next_listener_ms;  /* when to reconnect the listener */
    uint64_t next_reload_ms;    /* the safety-net reload */
    uint64_t next_status_ms;
    uint64_t next_stats_ms;
    uint64_t watchdog_ms;       /* WATCHDOG=1 this often (half of $WATCHDOG_USEC), 0: none */
    uint64_t next_watchdog_ms;
    uint64_t flushed_rejected[RJ_COUNT]; /* what pepsi.ingress_stats already has */
    int flushed_port;           /* the instance's port, for pepsi.ingress_stats */
    struct writer_pool *writers;
    struct server *server;
    int sigfd;
};

/* ---- providers ---- */

/* Loads the providers on the listener connection; 0 or -1 (logged). */
static int reload_providers(struct ingress *g)
{
    PGresult *r = PQexec(g->listener, "select * from pepsi.webhook_provider_list()");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot load the webhook providers: %s", pgerr_message(g->listener, r));
        PQclear(r);
        return -1;
    }
    struct provider_set *set = provider_set_from_result(r);
    PQclear(r);
    size_t n = set->n;
    provider_cache_swap(&g->providers, set);
    atomic_fetch_add(&g->metrics.provider_reloads, 1);
    atomic_store(&g->metrics.providers, n);
    log_info(COMPONENT, "loaded %zu webhook provider(s)", n);
    if (g->ic.reload_interval_ms > 0)
        g->next_reload_ms = now_ms() + (uint64_t)g->ic.reload_interval_ms;
    return 0;
}

/* ---- the listening connection ---- */

static void listener_drop(struct ingress *g)
{
    if (g->listener)
        PQfinish(g->listener);
    g->listener = NULL;
    g->next_listener_ms = now_ms() + LISTENER_RETRY_MS;
}

/* Connects, LISTENs and reloads; 0 or -1 (then retried later). */
static int listener_connect(struct ingress *g, bool check_schema, int *code)
{
    g->listener = conn_open(g->conf->conninfo, g->conf->connect_timeout_ms, "pepsi-ingress", COMPONENT, NULL);
    *code = 1;
    if (g->listener == NULL) {
        g->next_listener_ms = now_ms() + LISTENER_RETRY_MS;
        return -1;
    }
    if (check_schema) {
        enum schema_verdict v = schema_verify(g->listener, COMPONENT);
        if (v != SCHEMA_OK) {
            *code = v == SCHEMA_ERROR ? 1 : EXIT_CONFIG;
            listener_drop(g);
            return -1;
        }
    }
    if (conn_exec(g->listener, "listen " CHANNEL, COMPONENT) != 0 || reload_providers(g) != 0) {
        listener_drop(g);
        return -1;
    }
    *code = 0;
    return 0;
}

/* Reads what arrived on the listener: a notification means reload. */
static void listener_input(struct ingress *g)
{
    bool reload = false;
    if (PQconsumeInput(g->listener) != 1) {
        log_warning(COMPONENT, "lost the provider listener connection: %s; reconnecting",
                    pgerr_message(g->listener, NULL));
        listener_drop(g);
        return;
    }
    PGnotify *n;
    while ((n = PQnotifies(g->listener)) != NULL) {
        reload = true;
        PQfreemem(n);
    }
    if (reload && reload_providers(g) != 0)
        listener_drop(g);
}

/* ---- counters for the anomaly checks ---- */

/* Adds a counter's delta since the last flush to obj; true when non-zero. */
static bool add_delta(json_t *obj, const char *key, uint64_t now_value, uint64_t flushed)
{
    if (now_value <= flushed)
        return false;
    return json_object_set_new(obj, key, json_integer((json_int_t)(now_value - flushed))) == 0;
}

/* The instance name in pepsi.ingress_stats: "<host>:<port>". */
static void instance_name(const struct ingress *g, char *out, size_t size)
{
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(out, size, "%.200s:%d", host, g->flushed_port);
}

/* Writes the rejection counters' deltas into pepsi.ingress_stats,
 * aggregated every STATS_FLUSH_MS and at shutdown (one statement, never
 * one per request): the rejection rate check reads them. Nothing when
 * nothing changed. (The stored and duplicate counts need no flush: each
 * writer adds them in its burst's own transaction, writer.c.) Rejections
 * counted since the last flush are lost if the ingress is killed; they
 * are rates, not a ledger. */
static void flush_stats(struct ingress *g)
{
    struct metrics *m = &g->metrics;
    uint64_t rej[RJ_COUNT];
    json_t *d = json_object();
    bool any = false;
    for (int r = 0; d && r < RJ_COUNT; r++) {
        char key[96];
        rej[r] = atomic_load(&m->rejected[r]);
        snprintf(key, sizeof key, "rejected.%s", metrics_reason_name((enum reject_reason)r));
        any |= add_delta(d, key, rej[r], g->flushed_rejected[r]);
    }
    char *text = any ? json_dumps(d, JSON_COMPACT) : NULL;
    json_decref(d);
    if (text == NULL)
        return;
    char instance[256];
    instance_name(g, instance, sizeof instance);
    const char *params[] = {instance, text};
    PGresult *r = PQexecParams(g->listener, "select pepsi.ingress_stats_flush($1, $2::jsonb)", 2, NULL, params,
                               NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        memcpy(g->flushed_rejected, rej, sizeof rej);
    } else {
        log_warning(COMPONENT, "cannot write the ingress counters: %s", pgerr_conn_message(g->listener));
    }
    PQclear(r);
    free(text);
}

/* ---- the control loop ---- */

static void housekeeping(struct ingress *g)
{
    uint64_t now = now_ms();
    int code;
    if (g->listener == NULL && now >= g->next_listener_ms && listener_connect(g, false, &code) == 0)
        log_notice(COMPONENT, "provider listener reconnected");
    if (g->listener && g->ic.reload_interval_ms > 0 && now >= g->next_reload_ms && reload_providers(g) != 0)
        listener_drop(g);
    if (g->listener && g->server && now >= g->next_stats_ms) {
        g->next_stats_ms = now + STATS_FLUSH_MS;
        flush_stats(g);
    }
    if (g->watchdog_ms > 0 && now >= g->next_watchdog_ms) {
        g->next_watchdog_ms = now + g->watchdog_ms;
        service_watchdog_ping();
    }
    if (now >= g->next_status_ms) {
        g->next_status_ms = now + STATUS_EVERY_MS;
        sd_notifyf(0, "STATUS=accepted %llu, duplicates %llu, %zu provider(s), database %s",
                   (unsigned long long)atomic_load(&g->metrics.accepted),
                   (unsigned long long)atomic_load(&g->metrics.duplicates), provider_cache_count(&g->providers),
                   writer_pool_database_up(g->writers) ? "up" : "down");
    }
}

/* SIGHUP and SIGUSR1/2 (issue 15): true when the loop goes on. The
 * providers are what the ingress reads from outside at run time; its
 * file is read once at start. */
static bool signal_handled(struct ingress *g, int signo)
{
    if (signo == SIGHUP) {
        if (g->listener == NULL) {
            log_notice(COMPONENT, "received SIGHUP; the provider listener is reconnecting and reloads the "
                       "providers when it is back");
        } else {
            log_notice(COMPONENT, "received SIGHUP; reloading the webhook providers (the configuration file is "
                       "read only at start)");
            if (reload_providers(g) != 0)
                listener_drop(g);
        }
        return true;
    }
    if (signo == SIGUSR1 || signo == SIGUSR2) {
        log_notice(COMPONENT, "received %s; ignored", signo == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
        return true;
    }
    log_info(COMPONENT, "received %s", strsignal(signo));
    return false;
}

/* Runs until SIGTERM or SIGINT. */
static void control_loop(struct ingress *g)
{
    for (;;) {
        struct pollfd p[2] = {{g->sigfd, POLLIN, 0}, {-1, POLLIN, 0}};
        if (g->listener)
            p[1].fd = PQsocket(g->listener);
        int wait_ms = g->watchdog_ms > 0 && g->watchdog_ms < 1000 ? (int)g->watchdog_ms : 1000;
        if (poll(p, 2, wait_ms) < 0 && errno != EINTR) {
            log_error(COMPONENT, "poll failed: %s", strerror(errno));
            return;
        }
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(g->sigfd, &si, sizeof si) == (ssize_t)sizeof si && signal_handled(g, (int)si.ssi_signo))
                continue;
            return;
        }
        if (g->listener && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
            listener_input(g);
        housekeeping(g);
    }
}

/* ---- start and stop ---- */

/* SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are blocked in every
 * thread (the HTTP and writer threads inherit the mask) and read here
 * through a signalfd. */
static int signals_setup(struct ingress *g)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    g->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
    return g->sigfd < 0 ? -1 : 0;
}

static int start(struct ingress *g)
{
    int code;
    if (listener_connect(g, true, &code) != 0)
        return code;
    struct writer_settings ws = {g->conf->conninfo, g->conf->connect_timeout_ms, g->ic.commit_timeout_ms,
                                 g->ic.writers, g->ic.burst_max};
    g->writers = writer_pool_start(&ws, &g->metrics);
    if (g->writers == NULL)
        return 1;
    struct server_env env = {&g->ic, &g->providers, g->writers, &g->metrics};
    g->server = server_start(&env);
    if (g->server == NULL)
        return 1;
    g->flushed_port = server_port(g->server);
    char instance[256];
    instance_name(g, instance, sizeof instance);
    writer_pool_set_instance(g->writers, instance);
    log_info(COMPONENT, "listening on %s port %d: %zu provider(s), %d writer(s), %d HTTP thread(s)", g->ic.listen,
             server_port(g->server), provider_cache_count(&g->providers), g->ic.writers, g->ic.threads);
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s port %d\nMAINPID=%lu", g->ic.listen, server_port(g->server),
               (unsigned long)getpid());
    service_started();
    /* Pinged from the control loop: a stuck loop stops the pings. */
    g->watchdog_ms = service_watchdog_interval_ms();
    if (g->watchdog_ms > 0) {
        service_watchdog_ping();
        g->next_watchdog_ms = now_ms() + g->watchdog_ms;
    }
    return 0;
}

static void stop(struct ingress *g)
{
    if (g->server) {
        sd_notify(0, "STOPPING=1");
        server_quiesce(g->server);
    }
    /* Writes and answers what is queued; from now on a verified request
     * is answered 503 (never 2xx unstored) until the server stops. */
    writer_pool_stop(g->writers);
    if (g->server) {
        int left = server_wait_answered(g->server, DRAIN_MS);
        if (left > 0)
            log_warning(COMPONENT, "%d answer(s) not sent before shutdown", left);
        server_stop(g->server);
        g->server = NULL;
    }
    writer_pool_free(g->writers); /* no HTTP thread is left to reach it */
    g->writers = NULL;
    if (g->listener == NULL && g->server == NULL && g->flushed_port > 0) /* it was reconnecting */
        g->listener = conn_open(g->conf->conninfo, g->conf->connect_timeout_ms, "pepsi-ingress", COMPONENT, NULL);
    if (g->listener && g->server == NULL && g->flushed_port > 0)
        flush_stats(g); /* the last counters, as the dispatcher flushes at shutdown */
    if (g->listener)
        PQfinish(g->listener);
    g->listener = NULL;
}

int ingress_serve(struct conf *conf, const char *config_path)
{
    struct ingress g;
    char err[1024];
    memset(&g, 0, sizeof g);
    g.conf = conf;
    g.sigfd = -1;
    if (iconf_load(conf, &g.ic, err, sizeof err) != 0) {
        log_error(COMPONENT, "%s", err);
        return 1;
    }
    if (provider_cache_init(&g.providers) != 0 || signals_setup(&g) != 0) {
        log_error(COMPONENT, "cannot set up: %s", strerror(errno));
        return 1;
    }
    log_info(COMPONENT, "starting with %s", config_path ? config_path : conf->path);
    int code = start(&g);
    if (code == 0)
        control_loop(&g);
    stop(&g);
    provider_cache_destroy(&g.providers);
    close(g.sigfd);
    if (code == 0)
        log_info(COMPONENT, "stopped");
    return code;
}
