/* lib/pgpass.h — secrets stay with their owner (issue 11): the connection
 * string a worker gets holds no password; the password, when the runner has
 * one, reaches workers the way libpq finds it, through a passfile that the
 * runner writes with mode 0600 in a private runtime directory and names in
 * PGPASSFILE. Connection strings are taken apart with libpq's own parser
 * (PQconninfoParse, key=value and URI forms alike), never by hand.
 * Uses libpq and util; nothing above. */
#ifndef PEPSI_LIB_PGPASS_H
#define PEPSI_LIB_PGPASS_H

#include "lib/conf.h"

#include <stdbool.h>
#include <stddef.h>

/* A connection string taken apart by PQconninfoParse. */
struct conninfo_parts {
    char *without;       /* the same string without password (key=value form), malloc'd */
    char *password;      /* its password, or NULL when it has none */
    char *host;          /* what a passfile line matches, each NULL when not given: */
    char *port;          /*   host (or hostaddr when host is not given), port, */
    char *dbname;        /*   dbname and user as given */
    char *user;
    bool has_passfile;   /* it names a passfile= of its own */
    bool has_sslpassword;/* it holds an sslpassword= (a client key's passphrase) */
};

/* Takes conninfo ("" = libpq's defaults) apart into *out. Keys other than
 * password keep their values; with drop_passfile, a passfile= key is left
 * out of out->without too. Returns 0, or -1 with libpq's reason in err
 * (*out then holds nothing to free). */
int conninfo_split(const char *conninfo, bool drop_passfile, struct conninfo_parts *out, char *err,
                   size_t errlen);

/* Frees what conninfo_split allocated; *p is zeroed. */
void conninfo_parts_free(struct conninfo_parts *p);

/* 1 when conninfo holds a non-empty password or sslpassword, 0 when not,
 * -1 when libpq cannot parse it (its reason in err). */
int conninfo_has_password(const char *conninfo, char *err, size_t errlen);

/* One field of a passfile line with ':' and '\' escaped by a '\', as libpq
 * reads them; "*" stays a wildcard only when given as NULL. malloc'd. */
char *pgpass_field(const char *value);

/* "host:port:dbname:user:password\n" for the parts and password, '*' for
 * a field not given (a list of hosts or ports, "a,b", is '*' as well).
 * NULL when the password cannot be written to a passfile (a line break
 * in it, or in a field); malloc'd. */
char *pgpass_line(const struct conninfo_parts *p, const char *password);

/* What the runner gives its workers. */
struct worker_auth {
    char *conninfo;      /* PEPSI_CONNINFO: never holds a password */
    char *passfile;      /* PGPASSFILE for workers (the runner wrote it), or NULL */
    char *dir;           /* the private directory holding the passfile, or NULL */
};

/* Decides *a from the configuration and the runner's environment:
 *   - WORKER_CONNINFO set: workers get it as it is (conf_load refused it
 *     with a password); no passfile is written;
 *   - CONNINFO with an sslpassword: refused (-1), as libpq reads that
 *     from no file and it would be in every worker's environment;
 *   - else CONNINFO without its password; the password (CONNINFO's, else
 *     $PGPASSWORD's) goes to a passfile, mode 0600, in a directory made
 *     with mkdtemp (mode 0700) under $RUNTIME_DIRECTORY (set by systemd's
 *     RuntimeDirectory=), else $TMPDIR, else /tmp;
 *   - no password anywhere: CONNINFO as it is (an operator's passfile=,
 *     service= or PGPASSFILE pass through unchanged), no passfile.
 * The files are removed by worker_auth_cleanup(), and at exit() as a
 * safety net. Returns 0, or -1 with the reason in err (nothing left to
 * clean up). */
int worker_auth_prepare(const struct conf *c, struct worker_auth *a, char *err, size_t errlen);

/* Removes the passfile and its directory and frees *a; *a is zeroed. Safe
 * on a zeroed struct and twice. */
void worker_auth_cleanup(struct worker_auth *a);

#endif
