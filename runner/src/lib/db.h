/* lib/db.h — the coordinator's one libpq connection, non-blocking, driven by a
 * uv_poll on its socket (STYLE: one poll per fd, stopped before PQfinish).
 * Queries queue up and run one at a time, in order; each answer goes to
 * its callback. Serialisation failures and deadlocks are retried (D-20).
 * Notifications are handed to a hook as they arrive. A hot query can run
 * as a named prepared statement of the connection (DB_PREPARED), prepared
 * on its first use there (issue 19: parsing and planning the claim's
 * statement was a quarter of an idle claim's round trip).
 * Owns: the connection, its poll and its queue of queries. Uses: lib/
 * (conn, pgerr, log, util), libpq, libuv; nothing above lib/. */
#ifndef PEPSI_LIB_DB_H
#define PEPSI_LIB_DB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct db;

/* The answer to a query. res is NULL when the connection was lost before
 * an answer came; otherwise the callback owns res and must PQclear it. */
typedef void (*db_cb)(struct db *db, PGresult *res, void *arg);

enum db_flags {
    DB_RESEND = 1,     /* on connection loss keep the query and send it again after reconnect */
    DB_UNGATED = 2,    /* may run while the gate is closed (connection set-up queries) */
    DB_MULTI = 4,      /* several statements, no parameters (the simple protocol); the answer is
                          the first statement's result, a later error replaces it */
    DB_PREPARED = 8,   /* run as a prepared statement of this connection, prepared on first use (one
                          more round trip per connection and text); sql must be one statement whose
                          parameter types the text fixes ($1::int); at most DB_MAX_PREPARED texts */
};

#define DB_MAX_PREPARED 8

/* A statement prepared on the current connection. */
struct db_prepared {
    char *sql;                /* its text, as the ops give it */
    char name[24];            /* its name on the connection */
};

struct db_hooks {
    void (*notify)(void *arg, const char *channel);  /* a NOTIFY arrived */
    void (*lost)(void *arg);                          /* the connection broke; db is now detached */
    void *arg;
    /* a NOTIFY arrived, with its payload (issue 17: the beanstalkd frontend
       wakes the clients watching the tube it names); NULL: not wanted */
    void (*notify_payload)(void *arg, const char *channel, const char *payload);
};

struct db_op;

struct db {
    uv_loop_t *loop;
    PGconn *conn;             /* NULL while disconnected */
    uv_poll_t *poll;          /* one per connection, freed by its close callback */
    int poll_events;          /* events currently watched */
    bool gated;               /* hold ordinary queries (during connection set-up) */
    struct db_op *queue;      /* waiting, in order */
    struct db_op *queue_tail;
    struct db_op *inflight;   /* sent, answer not complete */
    PGresult *answer;         /* first result of the inflight query */
    struct db_hooks hooks;
    unsigned long queries;    /* queries answered, for tests and stats */
    unsigned long n_until;    /* live queries that may be given up (db_query_until) */
    struct db_prepared prepared[DB_MAX_PREPARED]; /* of this connection; forgotten on disconnect */
    int n_prepared;
    bool preparing;           /* the inflight op's Prepare is out (as prepared[n_prepared].name) */
    unsigned long names;      /* statement names handed out on this connection */
};

/* Prepares an unconnected db on loop. */
void db_init(struct db *db, uv_loop_t *loop, struct db_hooks hooks);

/* Takes over a connected conn: makes it non-blocking and starts polling.
 * The gate starts closed: only DB_UNGATED queries run until db_open_gate().
 * Returns 0, or -1 (conn is then finished) when the socket cannot be polled. */
int db_attach(struct db *db, PGconn *conn);

/* Lets ordinary queries run. */
void db_open_gate(struct db *db);

/* Queues sql with n text parameters (copied). cb may be NULL: the result
 * is then only checked and logged. */
void db_query(struct db *db, const char *sql, int n, const char *const *params,
              unsigned flags, db_cb cb, void *arg);

/* As db_query, but the query is given up (callback with NULL) when it is
 * still waiting to be sent at give_up_ms (util.h now_ms()), across
 * reconnects too with DB_RESEND; once sent, it runs to its answer. */
void db_query_until(struct db *db, const char *sql, int n, const char *const *params,
                    unsigned flags, uint64_t give_up_ms, db_cb cb, void *arg);

/* Gives up every queued query whose give_up_ms has passed (callback with
 * NULL); called from a timer so that it happens while disconnected. */
void db_expire(struct db *db, uint64_t now);

/* Whether nothing is queued or in flight. */
bool db_idle(const struct db *db);

/* Whether a connection is attached. */
bool db_connected(const struct db *db);

/* Drops the connection (as if lost, without calling the lost hook): the
 * inflight and queued queries get their callback with NULL, unless
 * DB_RESEND and keep is true. */
void db_disconnect(struct db *db, bool keep);

/* Fails every queued query (callback with NULL) and disconnects; the db
 * can be freed once the loop has run the poll handle's close. */
void db_shutdown(struct db *db);

#endif
