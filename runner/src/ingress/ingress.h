/* ingress/ingress.h — `pepsi-runner ingress`: the webhook HTTP endpoint.
 * Verifies each request's signature over the raw bytes before anything
 * touches the database, then stores verified events exactly once
 * (spec/ingest.md, W-xx).
 * Owns: the ingress process's start-up and shutdown. Uses: the rest of
 * ingress/ and lib/; nothing from dispatch/, sdk/, stages/ or cli/. */
#ifndef PEPSI_INGRESS_INGRESS_H
#define PEPSI_INGRESS_INGRESS_H

#include "lib/conf.h"

/* Runs the ingress until SIGINT/SIGTERM, configured by conf's
 * [pepsi-ingress] and [pepsi-postgres] sections. Returns the exit status:
 * 0 after a clean shutdown, 1 on errors (bad [pepsi-ingress] keys, a port
 * that cannot be bound, no database at start), 78 on a schema mismatch. */
int ingress_serve(struct conf *conf, const char *config_path);

#endif
