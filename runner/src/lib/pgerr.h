/* lib/pgerr.h — what a PostgreSQL error means to a queue: lost connection
 * (status 74), overload (status 75), worth a retry, or something else.
 * Owns: nothing kept. Uses: libpq only. */
#ifndef PEPSI_LIB_PGERR_H
#define PEPSI_LIB_PGERR_H

#include <libpq-fe.h>
#include <stdbool.h>

enum pgerr_kind {
    PGERR_NONE,        /* no error */
    PGERR_CONNECTION,  /* class 08, 57P01..57P03, or the connection is bad: status 74 (D-99) */
    PGERR_OVERLOAD,    /* 53300 too_many_connections, 53xxx resources: status 75 (D-94) */
    PGERR_RETRY,       /* 40001 serialization, 40P01 deadlock, 55P03 lock not available */
    PGERR_OTHER,       /* anything else */
};

/* Classifies a result (which may be NULL) on conn. */
enum pgerr_kind pgerr_classify(PGconn *conn, const PGresult *res);

/* The SQLSTATE of res, or "" when it has none. */
const char *pgerr_sqlstate(const PGresult *res);

/* The primary message of res (or of conn when res has none), one line. */
const char *pgerr_message(PGconn *conn, const PGresult *res);

/* Folds a libpq message to one log line (issue 15: one line per event):
 * its lines ("FATAL:  x\nDETAIL:  y\n") joined by "; ", the leading
 * severity of the first dropped (the runner's line has its own level),
 * tabs and carriage returns made spaces, trailing blanks cut:
 * "x; DETAIL:  y". Writes at most cap bytes (cap >= 1) to out, which it
 * returns. */
char *pgerr_fold(const char *msg, char *out, size_t cap);

/* PQerrorMessage(conn) folded to one line (pgerr_fold) in one of a few
 * rotating static buffers: valid until the fourth next call, enough for
 * the arguments of one log line. NULL conn: "no connection". */
const char *pgerr_conn_message(PGconn *conn);

/* A libpq notice receiver (PQsetNoticeReceiver) that logs the notice, or
 * an error the server sent while no query ran (a FATAL on a server
 * shutdown), as one line under the component arg (a string that outlives
 * the connection) instead of libpq's bare line on stderr. */
void pgerr_notice_receiver(void *arg, const PGresult *res);

#endif
