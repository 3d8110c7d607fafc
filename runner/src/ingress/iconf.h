/* ingress/iconf.h — the [pepsi-ingress] section: every key with its
 * default in one table (iconf.c), validated with "FILE:LINE: key ..."
 * errors like the rest of pepsi.conf.
 * Owns: struct ingress_conf. Uses: lib/conf.h. */
#ifndef PEPSI_INGRESS_ICONF_H
#define PEPSI_INGRESS_ICONF_H

#include "lib/conf.h"

#include <stddef.h>
#include <stdint.h>

struct ingress_conf {
    char listen[64];               /* LISTEN: an IPv4 or IPv6 address (:: is dual stack), default 127.0.0.1 */
    int port;                      /* PORT, default 8080; 0: any free port (logged) */
    int threads;                   /* THREADS: HTTP threads, default 2 */
    int max_connections;           /* MAX_CONNECTIONS: open connections at most, default 1024 */
    int max_connections_per_ip;    /* MAX_CONNECTIONS_PER_IP: from one address, default 128 (or MAX_CONNECTIONS) */
    int64_t max_body;              /* MAX_BODY: bytes of a request body, default 1MiB (1KiB..64MiB) */
    int64_t max_header;            /* MAX_HEADER: memory of a connection, request line and headers, default 16KiB */
    int64_t client_timeout_ms;     /* CLIENT_TIMEOUT: a connection idle this long is closed, default 10s */
    int writers;                   /* WRITERS: database connections writing bursts, default 2 */
    int burst_max;                 /* BURST_MAX: events per statement, default 500 */
    int64_t commit_timeout_ms;     /* COMMIT_TIMEOUT: statement_timeout of a burst, default 10s */
    int64_t reload_interval_ms;    /* RELOAD_INTERVAL: safety-net provider reload, default 5min; 0 off */
};

/* Reads conf->ingress into *out (defaults first). Returns 0, or -1 with
 * "FILE:LINE: key \"X\" in [pepsi-ingress]: ..." in err: an unknown key,
 * a value out of its range, 0 for a limit (limits cannot be turned off),
 * MAX_CONNECTIONS below THREADS, MAX_CONNECTIONS_PER_IP over MAX_CONNECTIONS. */
int iconf_load(const struct conf *conf, struct ingress_conf *out, char *err, size_t errlen);

/* The i-th key of [pepsi-ingress] and its default text; 0, or -1 past
 * the last key. */
int iconf_key(size_t i, const char **name, const char **def);

/* "1MiB", "512KiB", "64k", "2M", or a bare number of bytes. 0 or -1. */
int iconf_parse_size(const char *s, int64_t *out);

#endif
