/* lib/conn.c — see conn.h. */
#include "lib/conn.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The parameters every pepsi connection uses: conninfo expanded as
 * dbname, a connect timeout in whole seconds and a default
 * application_name. */
#define CONN_PARAMS(conninfo, timeout_ms, app)                                                      \
    char timeout[32];                                                                              \
    /* libpq counts whole seconds, and treats 1 as 2. */                                           \
    snprintf(timeout, sizeof timeout, "%lld", (long long)((timeout_ms) < 2000 ? 2 : (timeout_ms) / 1000)); \
    const char *keys[] = {"dbname", "connect_timeout", "fallback_application_name", NULL};         \
    const char *vals[] = {(conninfo) ? (conninfo) : "", timeout, (app), NULL}

bool conn_error_is_overload(const char *msg)
{
    /* The server refuses before a session exists, so there is no
     * SQLSTATE to read; its message is the only sign of 53300. */
    return msg && (strstr(msg, "too many clients") || strstr(msg, "too many connections") ||
                   strstr(msg, "connection slots are reserved"));
}

void conn_error_line(const char *msg, char *out, size_t cap)
{
    pgerr_fold(msg, out, cap);
}

PGconn *conn_start(const char *conninfo, int64_t timeout_ms, const char *app)
{
    CONN_PARAMS(conninfo, timeout_ms, app);
    PGconn *c = PQconnectStartParams(keys, vals, 1);
    if (c)
        PQsetNoticeReceiver(c, pgerr_notice_receiver, (void *)"db");
    return c;
}

PGconn *conn_open(const char *conninfo, int64_t timeout_ms, const char *app,
                  const char *component, bool *overload)
{
    CONN_PARAMS(conninfo, timeout_ms, app);
    if (overload)
        *overload = false;
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (c)
        PQsetNoticeReceiver(c, pgerr_notice_receiver, (void *)component);
    if (c == NULL) {
        log_error(component, "cannot allocate a database connection");
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        const char *msg = pgerr_conn_message(c);
        if (overload)
            *overload = conn_error_is_overload(msg);
        char oneline[512];
        conn_error_line(msg, oneline, sizeof oneline);
        log_error(component, "cannot connect to the database: %s", oneline);
        PQfinish(c);
        return NULL;
    }
    return c;
}

int conn_exec(PGconn *c, const char *sql, const char *component)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        log_error(component, "\"%s\" failed: %s", sql, pgerr_conn_message(c));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

int conn_try_dispatch_lock(PGconn *c, int owner_slot)
{
    char slot[16];
    snprintf(slot, sizeof slot, "%d", owner_slot);
    const char *params[] = {slot};
    PGresult *r = PQexecParams(c, DISPATCH_LOCK_TRY_SQL,
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        log_error("dispatch", "cannot take the dispatcher lock: %s", pgerr_conn_message(c));
        PQclear(r);
        return -1;
    }
    int got = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return got;
}

/* Who holds the lock, for the log: "pid 123 user \"x\" application
 * \"psql\" client 10.0.0.5 since 2026-..." from pg_stat_activity (its
 * columns read NULL for a login this one may not see: then "?"). Any
 * login can take an advisory lock, so the log must say whose it is. */
static void lock_holder(PGconn *c, int owner_slot, char *out, size_t cap)
{
    char slot[16];
    snprintf(slot, sizeof slot, "%d", owner_slot);
    const char *params[] = {slot};
    PGresult *r = PQexecParams(c,
                               "select l.pid, coalesce(a.usename::text, '?'),"
                               " coalesce(nullif(a.application_name, ''), '?'),"
                               " coalesce(host(a.client_addr), case when a.pid is not null and a.client_port = -1"
                               " then 'local socket' end, '?'),"
                               " coalesce(to_char(a.backend_start, 'YYYY-MM-DD HH24:MI:SSOF'), '?')"
                               " from pg_locks l left join pg_stat_activity a on a.pid = l.pid"
                               " where l.locktype = 'advisory' and l.granted"
                               " and l.classid = " DISPATCH_LOCK_CLASS_SQL " and l.objid = $1::int and l.objsubid = 2"
                               " and l.database = (select oid from pg_database where datname = current_database())",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
        snprintf(out, cap, "pid %s user \"%s\" application \"%s\" client %s since %s", PQgetvalue(r, 0, 0),
                 PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 4));
    else
        snprintf(out, cap, "unknown holder");
    PQclear(r);
}

int conn_wait_dispatch_lock(PGconn *c, int owner_slot, int64_t wait_ms, const char *component)
{
    uint64_t deadline = now_ms() + (uint64_t)wait_ms;
    bool told = false;
    char holder[512];
    for (;;) {
        int got = conn_try_dispatch_lock(c, owner_slot);
        if (got != 0)
            return got == 1 ? 0 : -1;
        if (!told) {
            lock_holder(c, owner_slot, holder, sizeof holder);
            log_notice(component, "another dispatcher or session holds owner slot %d: %s; waiting up to %s",
                       owner_slot, holder, LOG_DURATION(wait_ms));
            told = true;
        }
        if (now_ms() >= deadline)
            break;
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    lock_holder(c, owner_slot, holder, sizeof holder);
    log_error(component, "another dispatcher or session still holds owner slot %d after %s: %s; "
              "refusing to run a second one", owner_slot, LOG_DURATION(wait_ms), holder);
    return 1;
}
