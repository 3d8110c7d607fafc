/* beanstalk/bconf.c — see bconf.h. */
#include "beanstalk/bconf.h"


#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum bkind { BK_LISTEN, BK_INT, BK_DURATION };

struct bkey {
    const char *name;
    enum bkind kind;
    int64_t min, max;              /* BK_INT, BK_DURATION (ms) */
    const char *def;
};

/* Every key of [pepsi-beanstalk] and its default; conf/pepsi.conf and the
 * README list the same. */
static const struct bkey keys[] = {
    {"LISTEN", BK_LISTEN, 0, 0, "127.0.0.1:11300"},
    {"MAX_JOB_SIZE", BK_INT, 0, 16 * 1024 * 1024, "65535"},
    {"CONNECTIONS", BK_INT, 1, 64, "4"},
    {"MAX_CLIENTS", BK_INT, 1, 65536, "1024"},
    {"REAP_INTERVAL", BK_DURATION, 500, 60 * 1000, "5s"},
};

#define N_KEYS (sizeof keys / sizeof keys[0])

int bconf_key(size_t i, const char **name, const char **def)
{
    if (i >= N_KEYS)
        return -1;
    *name = keys[i].name;
    *def = keys[i].def;
    return 0;
}

int bconf_parse_listen(const char *s, struct bs_conf *out)
{
    unsigned char buf[sizeof(struct in6_addr)];
    char host[64];
    const char *colon = strrchr(s, ':');
    const char *port = colon ? colon + 1 : s;
    size_t hlen = colon ? (size_t)(colon - s) : 0;
    if (colon && hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
        s++;
        hlen -= 2;
    }
    if (hlen >= sizeof host)
        return -1;
    if (colon) {
        memcpy(host, s, hlen);
        host[hlen] = '\0';
    } else {
        snprintf(host, sizeof host, "127.0.0.1");
    }
    if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
        return -1;
    int p;
    if (conf_parse_int(port, 0, 65535, &p) != 0)
        return -1;
    snprintf(out->host, sizeof out->host, "%s", host);
    out->port = p;
    return 0;
}

/* Sets one key from text; returns NULL, or what was expected. */
static const char *set_key(const struct bkey *k, const char *value, struct bs_conf *c)
{
    int iv;
    int64_t ms;
    switch (k->kind) {
    case BK_LISTEN:
        return bconf_parse_listen(value, c) == 0 ? NULL
               : "expected ADDRESS:PORT such as 127.0.0.1:11300, 0.0.0.0:11300 or [::1]:11300";
    case BK_INT:
        if (conf_parse_int(value, (int)k->min, (int)k->max, &iv) != 0)
            return "expected a whole number in range";
        if (strcmp(k->name, "MAX_JOB_SIZE") == 0)
            c->max_job_size = (uint32_t)iv;
        else if (strcmp(k->name, "CONNECTIONS") == 0)
            c->connections = iv;
        else
            c->max_clients = iv;
        return NULL;
    case BK_DURATION:
        if (conf_parse_duration(value, &ms) != 0 || ms < k->min || ms > k->max)
            return "expected a duration in range, such as 1s or 5s";
        c->reap_interval_ms = ms;
        return NULL;
    }
    return "unknown kind";
}

int bconf_load(const struct conf *conf, struct bs_conf *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < N_KEYS; i++) {
        if (set_key(&keys[i], keys[i].def, out) != NULL) {
            snprintf(err, errlen, "internal error: bad default of %s", keys[i].name);
            return -1;
        }
    }
    for (size_t i = 0; i < conf->n_beanstalk; i++) {
        const struct conf_kv *kv = &conf->beanstalk[i];
        const struct bkey *k = NULL;
        for (size_t j = 0; j < N_KEYS; j++)
            if (strcmp(keys[j].name, kv->key) == 0)
                k = &keys[j];
        if (k == NULL) {
            snprintf(err, errlen,
                     "%s:%d: key \"%s\" in [pepsi-beanstalk]: unknown key (known: LISTEN, MAX_JOB_SIZE, "
                     "CONNECTIONS, MAX_CLIENTS, REAP_INTERVAL)",
                     conf->path, kv->line, kv->key);
            return -1;
        }
        if (kv->value[0] == '\0')
            continue; /* "KEY =": the default, as everywhere in pepsi.conf */
        const char *why = set_key(k, kv->value, out);
        if (why != NULL) {
            char range[64] = "";
            if (k->kind == BK_INT)
                snprintf(range, sizeof range, " (%lld to %lld)", (long long)k->min, (long long)k->max);
            snprintf(err, errlen, "%s:%d: key \"%s\" in [pepsi-beanstalk]: %s%s, not \"%s\"", conf->path, kv->line,
                     kv->key, why, range, kv->value);
            return -1;
        }
    }
    return 0;
}
