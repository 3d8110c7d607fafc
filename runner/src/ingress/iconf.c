/* ingress/iconf.c — see iconf.h. */
#include "ingress/iconf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ikind { IK_ADDRESS, IK_INT, IK_SIZE, IK_DURATION };

struct ikey {
    const char *name;
    enum ikind kind;
    int64_t min, max;              /* IK_INT, IK_SIZE, IK_DURATION (ms) */
    const char *def;
    size_t offset;
    bool limit;                    /* a limit: 0 never means "off" and is refused as such */
};

#define AT(f) offsetof(struct ingress_conf, f)
#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)

/* Every key of [pepsi-ingress] and its default; conf/pepsi.conf and the
 * README list the same. The limits (issue 11) hold before anything is
 * allocated for a request: their ranges keep a typo from turning one off. */
static const struct ikey keys[] = {
    {"LISTEN", IK_ADDRESS, 0, 0, "127.0.0.1", AT(listen), false},
    {"PORT", IK_INT, 0, 65535, "8080", AT(port), false},
    {"THREADS", IK_INT, 1, 64, "2", AT(threads), true},
    {"MAX_CONNECTIONS", IK_INT, 1, 65536, "1024", AT(max_connections), true},
    {"MAX_CONNECTIONS_PER_IP", IK_INT, 1, 65536, "128", AT(max_connections_per_ip), true},
    {"MAX_BODY", IK_SIZE, 1 * KIB, 64 * MIB, "1MiB", AT(max_body), true},
    {"MAX_HEADER", IK_SIZE, 4 * KIB, 1 * MIB, "16KiB", AT(max_header), true},
    {"CLIENT_TIMEOUT", IK_DURATION, 1000, 600 * 1000, "10s", AT(client_timeout_ms), true},
    {"WRITERS", IK_INT, 1, 32, "2", AT(writers), true},
    {"BURST_MAX", IK_INT, 1, 10000, "500", AT(burst_max), true},
    {"COMMIT_TIMEOUT", IK_DURATION, 100, 3600 * 1000, "10s", AT(commit_timeout_ms), true},
    {"RELOAD_INTERVAL", IK_DURATION, 0, (int64_t)7 * 24 * 3600 * 1000, "5min", AT(reload_interval_ms), false},
};

#define N_KEYS (sizeof keys / sizeof keys[0])

int iconf_key(size_t i, const char **name, const char **def)
{
    if (i >= N_KEYS)
        return -1;
    *name = keys[i].name;
    *def = keys[i].def;
    return 0;
}

int iconf_parse_size(const char *s, int64_t *out)
{
    static const struct {
        const char *unit;
        int64_t mult;
    } units[] = {{"", 1}, {"B", 1}, {"k", 1024}, {"K", 1024}, {"KiB", 1024}, {"M", 1 << 20},
                 {"MiB", 1 << 20}, {"G", (int64_t)1 << 30}, {"GiB", (int64_t)1 << 30}};
    char *end;
    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            if (v > INT64_MAX / units[i].mult)
                return -1;
            *out = (int64_t)v * units[i].mult;
            return 0;
        }
    }
    return -1;
}

static int parse_address(const char *s, char *out, size_t cap)
{
    unsigned char buf[sizeof(struct in6_addr)];
    if (strlen(s) >= cap)
        return -1;
    if (inet_pton(AF_INET, s, buf) != 1 && inet_pton(AF_INET6, s, buf) != 1)
        return -1;
    snprintf(out, cap, "%s", s);
    return 0;
}

/* Whether a value reads as zero ("0", "0s", "0KiB", "00"): a limit of
 * zero would mean "no limit" to many servers; here it is refused. */
static bool reads_as_zero(const char *value)
{
    size_t digits = strspn(value, "0");
    return digits > 0 && !isdigit((unsigned char)value[digits]);
}

/* Sets one key from text; returns NULL, or what was expected. */
static const char *set_key(const struct ikey *k, const char *value, struct ingress_conf *c)
{
    char *base = (char *)c + k->offset;
    int64_t v;
    int iv;
    if (k->limit && reads_as_zero(value))
        return "0 is not allowed: this limit cannot be turned off";
    switch (k->kind) {
    case IK_ADDRESS:
        return parse_address(value, base, sizeof c->listen) == 0 ? NULL
               : "expected an IPv4 or IPv6 address such as 127.0.0.1, 0.0.0.0 or ::";
    case IK_INT:
        if (conf_parse_int(value, (int)k->min, (int)k->max, &iv) != 0)
            return "expected a whole number in range";
        *(int *)(void *)base = iv;
        return NULL;
    case IK_SIZE:
        if (iconf_parse_size(value, &v) != 0 || v < k->min || v > k->max)
            return "expected a size in range, such as 65536, 64KiB or 1MiB";
        *(int64_t *)(void *)base = v;
        return NULL;
    case IK_DURATION:
        if (conf_parse_duration(value, &v) != 0 || v < k->min || v > k->max)
            return "expected a duration in range, such as 500ms, 10s or 5min";
        *(int64_t *)(void *)base = v;
        return NULL;
    }
    return "unknown kind";
}

static const struct ikey *find_key(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static void range_text(const struct ikey *k, char *buf, size_t cap)
{
    if (k->kind == IK_INT || k->kind == IK_SIZE)
        snprintf(buf, cap, " (%lld to %lld)", (long long)k->min, (long long)k->max);
    else if (k->kind == IK_DURATION)
        snprintf(buf, cap, " (%lld ms to %lld ms)", (long long)k->min, (long long)k->max);
    else
        buf[0] = '\0';
}

static void known_keys(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_KEYS && used < cap; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", keys[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* The line a key was set on, or 0 when it holds its default. */
static int line_of(const struct conf *conf, const char *name)
{
    int line = 0;
    for (size_t i = 0; i < conf->n_ingress; i++)
        if (strcmp(conf->ingress[i].key, name) == 0 && conf->ingress[i].value[0] != '\0')
            line = conf->ingress[i].line;
    return line;
}

/* Checks between keys, once each holds its value. A default
 * MAX_CONNECTIONS_PER_IP above a lowered MAX_CONNECTIONS follows it down;
 * a value set that way is refused. Returns 0 or -1 with err. */
static int cross_check(const struct conf *conf, struct ingress_conf *out, char *err, size_t errlen)
{
    int line;
    if (out->threads > out->max_connections) { /* only when MAX_CONNECTIONS is set: THREADS <= 64 */
        snprintf(err, errlen,
                 "%s:%d: key \"MAX_CONNECTIONS\" in [pepsi-ingress]: %d is below THREADS (%d); each HTTP "
                 "thread takes its share of the connections",
                 conf->path, line_of(conf, "MAX_CONNECTIONS"), out->max_connections, out->threads);
        return -1;
    }
    if (out->max_connections_per_ip > out->max_connections) {
        line = line_of(conf, "MAX_CONNECTIONS_PER_IP");
        if (line == 0) {
            out->max_connections_per_ip = out->max_connections;
            return 0;
        }
        snprintf(err, errlen,
                 "%s:%d: key \"MAX_CONNECTIONS_PER_IP\" in [pepsi-ingress]: %d is over MAX_CONNECTIONS (%d); "
                 "one address cannot hold more connections than the ingress takes",
                 conf->path, line, out->max_connections_per_ip, out->max_connections);
        return -1;
    }
    return 0;
}

int iconf_load(const struct conf *conf, struct ingress_conf *out, char *err, size_t errlen)
{
    char range[64], names[512];
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < N_KEYS; i++) {
        if (set_key(&keys[i], keys[i].def, out) != NULL) {
            snprintf(err, errlen, "internal error: bad default of %s", keys[i].name);
            return -1;
        }
    }
    for (size_t i = 0; i < conf->n_ingress; i++) {
        const struct conf_kv *kv = &conf->ingress[i];
        const struct ikey *k = find_key(kv->key);
        const char *why;
        if (k == NULL) {
            known_keys(names, sizeof names);
            snprintf(err, errlen, "%s:%d: key \"%s\" in [pepsi-ingress]: unknown key (known: %s)", conf->path,
                     kv->line, kv->key, names);
            return -1;
        }
        if (kv->value[0] == '\0')
            continue; /* "KEY =": the default, as everywhere in pepsi.conf */
        if ((why = set_key(k, kv->value, out)) != NULL) {
            range_text(k, range, sizeof range);
            snprintf(err, errlen, "%s:%d: key \"%s\" in [pepsi-ingress]: %s%s, not \"%s\"", conf->path, kv->line,
                     kv->key, why, range, kv->value);
            return -1;
        }
    }
    return cross_check(conf, out, err, errlen);
}
