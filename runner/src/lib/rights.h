/* lib/rights.h — may this login do its component's work? (issue 15)
 * A login that lacks its duty role (pepsi_runner, pepsi_worker, ...) used
 * to start, then fail every statement with 42501: workers retried each
 * message as a host error until MAX_LIFETIME. Components check their
 * rights once at start instead and refuse (78) with the grant to make.
 * Owns: nothing kept. Uses: lib/log.h, libpq; nothing above lib/. */
#ifndef PEPSI_LIB_RIGHTS_H
#define PEPSI_LIB_RIGHTS_H

#include <libpq-fe.h>

/* The functions (names in schema pepsi; any overload will do) and tables
 * a component needs, each list ended by NULL, and the role that grants
 * them all. */
struct rights_need {
    const char *role;
    const char *const *functions;
    const char *const *tables;
};

/* What the dispatcher (serve) and a stage program (worker) call. */
extern const struct rights_need rights_runner;
extern const struct rights_need rights_worker;

/* Checks that the session's login may use schema pepsi, execute every
 * function and select every table of need (blocking, catalogue only).
 * Returns 0 when it may; 78 (EXIT_CONFIG) when something is missing,
 * logged under component with the login, what it lacks and the grant
 * that gives it; 1 when the check itself failed (logged). */
int rights_check(PGconn *c, const struct rights_need *need, const char *component);

#endif
