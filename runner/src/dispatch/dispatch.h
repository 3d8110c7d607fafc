/* dispatch/dispatch.h — `pepsi-runner serve`: the dispatcher. One libuv loop, one
 * coordinator connection (LISTEN, claims, statistics), and a pool of
 * workers per stage (pool.h).
 * Owns: struct runner and the loop of `serve`. Uses: the rest of
 * dispatch/ and lib/; nothing from sdk/, stages/, ingress/ or cli/. */
#ifndef PEPSI_DISPATCH_DISPATCH_H
#define PEPSI_DISPATCH_DISPATCH_H

#include "lib/conf.h"
#include "lib/pgpass.h"

/* Runs the dispatcher until SIGINT/SIGTERM. config_path is the file conf
 * was read from (passed to workers as PEPSI_CONFIG), self_dir the directory
 * of the running binary. Returns the process exit status: 0 after a clean
 * shutdown (D-09), 1 on errors such as a failed connection or a held lock
 * (D-10), 78 when the schema is not the one this build expects (D-12).
 * auth is what workers get to connect: PEPSI_CONNINFO, never with a
 * password, and the PGPASSFILE the runner wrote (issue 11). */
int dispatch_serve(struct conf *conf, const char *config_path, const char *self_dir,
                   const struct worker_auth *auth);

#endif
