/* lib/conn.h — blocking connection set-up, shared by the dispatcher's start-up
 * and reconnects and by workers.
 * Owns: nothing kept. Uses: lib/ (log, util), libpq; nothing above lib/. */
#ifndef PEPSI_LIB_CONN_H
#define PEPSI_LIB_CONN_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Connects with conninfo (a libpq key=value string or URI; "" means
 * libpq's defaults and PG* variables), giving up after timeout_ms, as
 * application_name app. Returns NULL (logged under component) on failure;
 * *overload is set when the server refused for lack of connection slots. */
PGconn *conn_open(const char *conninfo, int64_t timeout_ms, const char *app,
                  const char *component, bool *overload);

/* Starts a non-blocking connect with the same parameters (see aconn.h);
 * NULL when libpq cannot allocate one. */
PGconn *conn_start(const char *conninfo, int64_t timeout_ms, const char *app);

/* Whether a connection error says the server has no connection slot left
 * (53300, said before a session exists, so only in the text). */
bool conn_error_is_overload(const char *msg);

/* A libpq error message on one line, without its trailing newline. */
void conn_error_line(const char *msg, char *out, size_t cap);

/* Runs a statement that returns no rows of interest. 0, or -1 (logged). */
int conn_exec(PGconn *c, const char *sql, const char *component);

/* The dispatcher lock's first key, "peps" as an int4; the second is the
 * owner slot (D-14). The one copy in C of the class of
 * pepsi.lock_key('dispatcher', slot) (deploy/schema.sql), an owner-only
 * helper the runner's role may not call; pgtap/01 pins the same value. */
#define DISPATCH_LOCK_CLASS_SQL "1885696115"

/* The statement that tries the dispatcher lock of owner slot $1, in one
 * place for the synchronous start-up and the asynchronous re-take. */
#define DISPATCH_LOCK_TRY_SQL "select pg_try_advisory_lock(" DISPATCH_LOCK_CLASS_SQL ", $1::int)"

/* The dispatcher lock of an owner slot (D-14): a session-level advisory
 * lock. Tries once; 1 when taken, 0 when another session holds it, -1 on
 * error. */
int conn_try_dispatch_lock(PGconn *c, int owner_slot);

/* Tries the lock until wait_ms have passed (D-15). 0 when taken; 1 when
 * another dispatcher still holds it (logged, with its pid); -1 on error. */
int conn_wait_dispatch_lock(PGconn *c, int owner_slot, int64_t wait_ms, const char *component);

#endif
