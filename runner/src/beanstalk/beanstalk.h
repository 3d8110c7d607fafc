/* beanstalk/beanstalk.h — `pepsi-runner beanstalk` (issue 17): a beanstalkd
 * protocol server on libuv whose jobs are pepsi.workqueue rows at the pull
 * stage 'beanstalk' (the contract: the SQL functions pepsi.beanstalk_*).
 * Owns: the frontend process (struct bs_frontend) and its sessions.
 * Uses: the rest of beanstalk/ and lib/; nothing from dispatch/, ingress/,
 * sdk/, stages/ or cli/. */
#ifndef PEPSI_BEANSTALK_BEANSTALK_H
#define PEPSI_BEANSTALK_BEANSTALK_H

#include "beanstalk/bconf.h"
#include "beanstalk/proto.h"
#include "beanstalk/waiters.h"
#include "lib/conf.h"
#include "lib/db.h"
#include "lib/service.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define BS_COMPONENT "beanstalk"
/* The most tubes one client may watch: each is a reference row in SQL and
 * an element of every reserve's array; beyond it, watch is answered
 * OUT_OF_MEMORY (beanstalkd's reply to a watch it cannot hold). */
#define BS_MAX_WATCHED 1024
/* NOTIFY pepsi_beanstalk comes from anyone who can connect (issue 17
 * follow-up): a tube's waiters, and each session, are woken by NOTIFYs at
 * most once per this many ms; the NOTIFYs in between fold into that. */
#define BS_NOTIFY_FLOOR_MS 10
/* NOTIFY payloads that are not tube names are ignored and counted, and
 * said in the log at most once per this many ms. */
#define BS_NOTIFY_LOG_INTERVAL_MS 60000

struct bs_session;

/* The frontend: one per process, one generation in pepsi.beanstalk_frontend. */
struct bs_frontend {
    uv_loop_t *loop;
    const struct conf *conf;
    struct bs_conf bc;
    const char *version;           /* stats' version */
    struct db control;             /* frontend_start's connection: the advisory lock, LISTEN, reap */
    struct db *pool;               /* CONNECTIONS connections for the clients' commands */
    int n_pool;
    int next_pool;                 /* round robin of new sessions over the pool */
    int64_t generation;            /* pepsi.beanstalk_frontend_start's id */
    char generation_text[24];
    uv_tcp_t listener;
    bool listening;
    uv_timer_t reap_timer;
    uv_signal_t sig_term, sig_int;
    struct service_watchdog watchdog; /* WATCHDOG=1 from the loop (WatchdogSec) */
    struct bs_session *sessions;   /* every open session (a list) */
    struct bs_waiters waiters;     /* tube -> the sessions in a reserve that watch it */
    uint64_t notify_invalid;       /* NOTIFY payloads ignored: not a tube name */
    uint64_t notify_invalid_unlogged; /* of those, not yet in a log line */
    uint64_t notify_invalid_logged_ms; /* when the last such line was written, 0: never */
    int n_sessions;                /* client connections open */
    uint64_t cmd[BS_OP_COUNT];     /* commands counted (stats' cmd-*) */
    uint64_t total_connections;
    uint64_t started_ms;
    bool stopping;                 /* SIGTERM or a fatal error: no new client, sessions closing */
    bool dbs_shut;                 /* the database connections are shut down */
    int exit_code;
};

/* Runs the frontend until SIGTERM/SIGINT (0), or a lost database
 * connection (1: systemd restarts it; every acknowledged put is committed),
 * configured by conf's [pepsi-beanstalk] and [pepsi-postgres]. 1 on
 * start-up errors, 78 on a schema mismatch or a bad [pepsi-beanstalk]. */
int beanstalk_serve(const struct conf *conf, const char *config_path, const char *version);

/* A session is gone: the frontend may finish stopping. */
void bs_frontend_session_gone(struct bs_frontend *fe);

/* A database connection broke, or the generation was refused: close every
 * client and exit with code (non-zero). */
void bs_frontend_fatal(struct bs_frontend *fe, const char *why);

#endif
