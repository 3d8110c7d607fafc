/* dispatch/vacuum.h — VACUUM of pepsi.workqueue when its dead tuples pass
 * a bound (issue 19). Every unfused hop is a non-HOT update of the
 * message row: at 10k hops/s the table gains 10k dead tuples a second,
 * and autovacuum wakes once per autovacuum_naptime (1 min by default, a
 * server-wide setting no table can change), so a sustained run lost a
 * third of its throughput between two autovacuums. The dispatcher reads
 * n_dead_tup every VACUUM_CHECK_MS on a connection of its own (never the
 * claiming one) and, past [pepsi-dispatch] VACUUM_DEAD_TUPLES, runs
 * `VACUUM (SKIP_LOCKED) pepsi.workqueue` there: one at a time (the next
 * check waits for the answer), none while autovacuum or another runner
 * holds the table (SKIP_LOCKED). A login that may not vacuum the table
 * (PostgreSQL 15 answers a non-owner with a WARNING, not an error) is
 * logged once with the grant to make; the checks go on quietly, so a
 * grant made later takes effect without a restart.
 * Owns: its connection (reconnected without blocking), its timer.
 * Uses: db, aconn, conf, pgerr, log. */
#ifndef PEPSI_DISPATCH_VACUUM_H
#define PEPSI_DISPATCH_VACUUM_H

#include "lib/aconn.h"
#include "lib/conf.h"
#include "lib/db.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* How often n_dead_tup is read. */
#define VACUUM_CHECK_MS 2000

struct vacuum {
    uv_loop_t *loop;
    const struct conf *conf;         /* CONNINFO, CONNECT_TIMEOUT, VACUUM_DEAD_TUPLES */
    struct db db;
    struct aconn *connecting;
    uv_timer_t timer;                /* the checks; also the reconnect delay */
    bool inflight;                   /* a check or a VACUUM awaits its answer */
    bool refused_logged;             /* the login's missing right was said */
    long long dead_before;           /* n_dead_tup when the VACUUM in flight started */
    uint64_t started_ms;             /* when it started */
    char owner[64];                  /* the table's owner, for the hint */
    char login[64];                  /* current_user, for the hint */
    char warn_state[6];              /* SQLSTATE of the first WARNING of the VACUUM in flight */
    char warn_text[256];             /* its message */
    unsigned long vacuums;           /* VACUUMs that ran, for tests */
    bool stopped;
};

/* Starts the checks on loop with a connection of their own, unless
 * VACUUM_DEAD_TUPLES is 0. Returns 0, or a negative libuv error (logged). */
int vacuum_start(struct vacuum *v, uv_loop_t *loop, const struct conf *conf);

/* Stops the checks and drops the connection (a VACUUM in flight ends
 * with it); the timer is closed with the loop's handles. */
void vacuum_stop(struct vacuum *v);

#endif
