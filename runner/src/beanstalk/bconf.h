/* beanstalk/bconf.h — the [pepsi-beanstalk] section (issue 17): every key
 * with its default in one table (bconf.c), validated with
 * "FILE:LINE: key ..." errors like the rest of pepsi.conf.
 * Owns: struct bs_conf. Uses: lib/conf.h. */
#ifndef PEPSI_BEANSTALK_BCONF_H
#define PEPSI_BEANSTALK_BCONF_H

#include "lib/conf.h"

#include <stddef.h>
#include <stdint.h>

struct bs_conf {
    char host[64];                 /* LISTEN's address: IPv4 or IPv6, default 127.0.0.1 */
    int port;                      /* LISTEN's port, default 11300; 0: any free port (logged) */
    uint32_t max_job_size;         /* MAX_JOB_SIZE: bytes of a job body, default 65535 */
    int connections;               /* CONNECTIONS: database connections for the clients' commands, default 4 */
    int max_clients;               /* MAX_CLIENTS: open client connections at most, default 1024 */
    int64_t reap_interval_ms;      /* REAP_INTERVAL: pepsi.beanstalk_reap() this often, default 5s */
};

/* Reads conf->beanstalk into *out (defaults first). Returns 0, or -1 with
 * "FILE:LINE: key \"X\" in [pepsi-beanstalk]: ..." in err. */
int bconf_load(const struct conf *conf, struct bs_conf *out, char *err, size_t errlen);

/* The i-th key of [pepsi-beanstalk] and its default text; 0, or -1 past
 * the last key. */
int bconf_key(size_t i, const char **name, const char **def);

/* "HOST:PORT", "[V6]:PORT" or "PORT" into out; 0 or -1. */
int bconf_parse_listen(const char *s, struct bs_conf *out);

#endif
