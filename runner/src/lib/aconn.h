/* lib/aconn.h — a libpq connection opened without blocking the event loop
 * (issue 12): PQconnectStartParams, then PQconnectPoll each time the
 * socket is ready as libpq asked, on a uv_poll that follows the socket
 * when libpq moves to another one (another host of a multi-host
 * conninfo, a retry without SSL), with a timeout of our own since
 * PQconnectPoll does not apply connect_timeout.
 * Owns: the connection until it is handed over, its poll and timer.
 * Uses: libpq, libuv, conn (the connection parameters), log. */
#ifndef PEPSI_LIB_ACONN_H
#define PEPSI_LIB_ACONN_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct aconn;

/* The outcome, called once, from the loop: conn is the open connection
 * (the callee owns it) or NULL, with why (one line) and whether the
 * server refused for lack of connection slots. */
typedef void (*aconn_cb)(PGconn *conn, const char *why, bool overload, void *arg);

/* Starts connecting with conninfo (as conn_open) as application app.
 * Returns the attempt, or NULL when it cannot start (out of memory,
 * libuv); cb is then never called. */
struct aconn *aconn_start(uv_loop_t *loop, const char *conninfo, int64_t timeout_ms, const char *app,
                          aconn_cb cb, void *arg);

/* Abandons an attempt in progress: the connection is closed and cb is
 * never called. */
void aconn_cancel(struct aconn *a);

#endif
