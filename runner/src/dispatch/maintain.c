/* dispatch/maintain.c — see maintain.h. */
#include "dispatch/maintain.h"

#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"
#include "lib/schema.h"
#include "lib/service.h"
#include "lib/conn.h"
#include "lib/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#define COMPONENT "maintain"
#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 30000
#define LISTEN_SQL "listen reconcile; listen config_changed"

static void connect_now(struct maintain *m);

/* ---- the stage limits of a standalone maintainer ---- */

static char *own_limits(void *arg)
{
    struct maintain *m = arg;
    return reconcile_limits_json(m->own_conf);
}

static void overlay_done(struct db *db, PGresult *res, void *arg)
{
    struct maintain *m = arg;
    char err[1024];
    struct conf fresh;
    (void)db;
    if (res == NULL)
        return;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_warning(COMPONENT, "cannot read the configuration overlay: %s; keeping the stage limits",
                    pgerr_message(m->db.conn, res));
    } else if (overlay_apply(m->config_path, res, &fresh, err, sizeof err) != 0) {
        log_warning(COMPONENT, "the configuration does not parse (%s); keeping the stage limits", err);
    } else {
        conf_free(m->own_conf);
        *m->own_conf = fresh;
        log_info(COMPONENT, "stage limits re-read: %zu stage(s)", fresh.n_stages);
    }
    PQclear(res);
}

/* ---- notifications: only versions that moved count (issue 11) ---- */

static void control_act(void *arg, enum control_channel ch)
{
    struct maintain *m = arg;
    if (ch == CONTROL_RECONCILE)
        reconcile_notify(&m->recon);
    else if (ch == CONTROL_CONFIG && m->own_conf)
        db_query(&m->db, OVERLAY_SQL, 0, NULL, 0, overlay_done, m);
}

static void notify_cb(void *arg, const char *channel)
{
    struct maintain *m = arg;
    if (!m->stopped && control_channel_of(channel) >= 0)
        control_signals_check(&m->ctl, channel);
}

/* ---- the connection ---- */

static void retry_cb(uv_timer_t *t)
{
    connect_now(t->data);
}

static void schedule_retry(struct maintain *m)
{
    if (m->stopped)
        return;
    uv_timer_start(&m->retry, retry_cb, (uint64_t)m->delay_ms, 0);
    m->delay_ms = m->delay_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : m->delay_ms * 2;
}

static void lost_cb(void *arg)
{
    struct maintain *m = arg;
    m->delay_ms = RETRY_MIN_MS;
    schedule_retry(m);
}

static void listen_done(struct db *db, PGresult *res, void *arg)
{
    struct maintain *m = arg;
    if (res == NULL)
        return;
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        log_error(COMPONENT, "LISTEN failed: %s", pgerr_message(db->conn, res));
    PQclear(res);
    if (!ok) {
        db_disconnect(&m->db, true);
        schedule_retry(m);
        return;
    }
    log_info(COMPONENT, "connected: reconciliation every %s, anomaly checks every %s",
             LOG_DURATION(m->conf->reconcile_interval_ms), LOG_DURATION(m->conf->anomaly_interval_ms));
    db_open_gate(&m->db);
    control_signals_check(&m->ctl, NULL);
}

static void connected_cb(PGconn *c, const char *why, bool overload, void *arg)
{
    struct maintain *m = arg;
    (void)overload;
    m->connecting = NULL;
    if (c == NULL) {
        log_warning(COMPONENT, "cannot connect to the database: %s; trying again in %s", why, LOG_DURATION(m->delay_ms));
        schedule_retry(m);
        return;
    }
    if (db_attach(&m->db, c) != 0) {
        schedule_retry(m);
        return;
    }
    db_query(&m->db, LISTEN_SQL, 0, NULL, DB_UNGATED | DB_MULTI, listen_done, m);
}

static void connect_now(struct maintain *m)
{
    if (m->stopped || m->connecting || db_connected(&m->db))
        return;
    m->connecting = aconn_start(m->loop, m->conf->conninfo, m->conf->connect_timeout_ms, "pepsi-runner maintain",
                                connected_cb, m);
    if (m->connecting == NULL)
        schedule_retry(m);
}

int maintain_start(struct maintain *m, uv_loop_t *loop, const struct conf *conf, const char *config_path,
                   reconcile_limits_fn limits, void *arg)
{
    struct conf *own = m->own_conf;
    memset(m, 0, sizeof *m);
    m->loop = loop;
    m->conf = conf;
    m->config_path = config_path;
    m->own_conf = own;
    m->delay_ms = RETRY_MIN_MS;
    db_init(&m->db, loop, (struct db_hooks){notify_cb, lost_cb, m, NULL});
    control_signals_init(&m->ctl, &m->db, COMPONENT, control_act, m);
    int err = uv_timer_init(loop, &m->retry);
    if (err == 0) {
        m->retry.data = m;
        err = reconcile_start(&m->recon, loop, &m->db, conf, limits ? limits : own_limits, limits ? arg : m);
    }
    if (err != 0) {
        log_error(COMPONENT, "cannot start maintenance: %s", uv_strerror(err));
        return err;
    }
    connect_now(m);
    return 0;
}

void maintain_stop(struct maintain *m)
{
    if (m->stopped || m->loop == NULL)
        return;
    m->stopped = true;
    reconcile_stop(&m->recon);
    uv_timer_stop(&m->retry);
    aconn_cancel(m->connecting);
    m->connecting = NULL;
    db_shutdown(&m->db);
}

/* ---- pepsi-runner maintain ---- */

struct standalone {
    struct maintain m;
    uv_signal_t sigint, sigterm;
    uv_signal_t sighup, sigusr1, sigusr2; /* issue 15: a reload, a log line, a log line */
    struct service_watchdog watchdog;
};

static void close_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void signal_cb(uv_signal_t *h, int signum)
{
    struct standalone *s = h->data;
    log_info(COMPONENT, "received %s; stopping", strsignal(signum));
    sd_notify(0, "STOPPING=1");
    maintain_stop(&s->m);
    uv_signal_stop(&s->sigint);
    uv_signal_stop(&s->sigterm);
    uv_signal_stop(&s->sighup);
    uv_signal_stop(&s->sigusr1);
    uv_signal_stop(&s->sigusr2);
    if (s->watchdog.active)
        uv_timer_stop(&s->watchdog.timer);
}

/* The stage limits are all a standalone maintainer reads from the
 * configuration: SIGHUP re-reads them as config_changed does. */
static void hup_cb(uv_signal_t *h, int signum)
{
    struct standalone *s = h->data;
    (void)signum;
    if (s->m.stopped) {
        log_notice(COMPONENT, "received SIGHUP while stopping; nothing to reload");
        return;
    }
    log_notice(COMPONENT, "received SIGHUP; re-reading the stage limits (%s and the overlay) as config_changed does",
               s->m.config_path);
    control_act(&s->m, CONTROL_CONFIG);
}

static void usr_cb(uv_signal_t *h, int signum)
{
    (void)h;
    log_notice(COMPONENT, "received %s; ignored", signum == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
}

/* The schema check and the first stage limits, before the loop runs. */
static int standalone_prepare(const struct conf *conf, const char *config_path, struct conf *limits)
{
    char err[1024];
    PGconn *c = conn_open(conf->conninfo, conf->connect_timeout_ms, "pepsi-runner maintain", COMPONENT, NULL);
    if (c == NULL)
        return 1;
    enum schema_verdict v = schema_verify(c, COMPONENT);
    int code = v == SCHEMA_OK ? 0 : v == SCHEMA_ERROR ? 1 : 78;
    if (code == 0 && overlay_load(c, config_path, limits, err, sizeof err) != 0) {
        log_error(COMPONENT, "%s", err);
        code = 78;
    }
    PQfinish(c);
    return code;
}

int maintain_command(struct conf *conf, const char *config_path)
{
    struct standalone s;
    struct conf limits;
    uv_loop_t loop;

    memset(&s, 0, sizeof s);
    int code = standalone_prepare(conf, config_path, &limits);
    if (code != 0)
        return code;
    if (uv_loop_init(&loop) != 0) {
        log_error(COMPONENT, "cannot create the event loop");
        conf_free(&limits);
        return 1;
    }
    s.m.own_conf = &limits;
    int err = uv_signal_init(&loop, &s.sigint);
    err = err ? err : uv_signal_init(&loop, &s.sigterm);
    err = err ? err : uv_signal_init(&loop, &s.sighup);
    err = err ? err : uv_signal_init(&loop, &s.sigusr1);
    err = err ? err : uv_signal_init(&loop, &s.sigusr2);
    s.sigint.data = s.sigterm.data = s.sighup.data = s.sigusr1.data = s.sigusr2.data = &s;
    err = err ? err : uv_signal_start(&s.sigint, signal_cb, SIGINT);
    err = err ? err : uv_signal_start(&s.sigterm, signal_cb, SIGTERM);
    err = err ? err : uv_signal_start(&s.sighup, hup_cb, SIGHUP);
    err = err ? err : uv_signal_start(&s.sigusr1, usr_cb, SIGUSR1);
    err = err ? err : uv_signal_start(&s.sigusr2, usr_cb, SIGUSR2);
    err = err ? err : maintain_start(&s.m, &loop, conf, config_path, NULL, NULL);
    if (err == 0) {
        sd_notify(0, "READY=1\nSTATUS=maintaining");
        service_started();
        if (service_watchdog_start(&s.watchdog, &loop, COMPONENT) == 0)
            uv_run(&loop, UV_RUN_DEFAULT);
        else
            code = 1;
    } else {
        code = 1;
    }
    maintain_stop(&s.m);
    uv_walk(&loop, close_walk_cb, NULL);
    while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
        ;
    if (uv_loop_close(&loop) != 0)
        log_warning(COMPONENT, "event loop closed with handles still open");
    conf_free(&limits);
    log_info(COMPONENT, "stopped");
    return code;
}
