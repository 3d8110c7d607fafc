/* ingress/server.h — the HTTP/1.1 endpoint (libmicrohttpd, a pool of
 * internal polling threads):
 *   POST /hooks/<provider>   verify, store, answer (see server.c)
 *   GET  /healthz            200 when the writers reach the database, else 503
 *   GET  /metrics            Prometheus text (metrics.h)
 * A request is verified on its exact raw bytes before anything parses it;
 * a rejected request never causes a query. A verified one is suspended
 * until its writer has committed it, then answered.
 * Owns: the libmicrohttpd daemon and suspended requests. Uses: the rest
 * of ingress/, lib/ (log, util). */
#ifndef PEPSI_INGRESS_SERVER_H
#define PEPSI_INGRESS_SERVER_H

#include "ingress/iconf.h"
#include "ingress/metrics.h"
#include "ingress/provider.h"
#include "ingress/writer.h"

#include <stdint.h>

struct server;

/* What the server works with; everything outlives the server. */
struct server_env {
    const struct ingress_conf *conf;
    struct provider_cache *providers;
    struct writer_pool *writers;
    struct metrics *metrics;
};

/* Binds LISTEN:PORT and starts the HTTP threads. NULL on failure (logged). */
struct server *server_start(const struct server_env *env);

/* The port bound (useful with PORT = 0). */
int server_port(const struct server *s);

/* Stops accepting connections (those open are still served). */
void server_quiesce(struct server *s);

/* Waits until every request handed to the writers has been answered, at
 * most timeout_ms; returns how many are still waiting. */
int server_wait_answered(struct server *s, int64_t timeout_ms);

/* Closes every connection and frees the server. Call only once no request
 * is with the writers (writer_pool_stop first). */
void server_stop(struct server *s);

#endif
