/* ingress/provider.h — the providers the ingress accepts, kept in memory
 * so that verifying (and rejecting) a request needs no query. Loaded at
 * start from pepsi.webhook_provider_list() and reloaded when the provider
 * functions NOTIFY webhook_provider_changed; a reload swaps the whole set
 * under a write lock, and requests read it under a read lock.
 * Owns: the provider set and its lock. Uses: ingress/signature.h,
 * lib/ (log, util), libpq, jansson. */
#ifndef PEPSI_INGRESS_PROVIDER_H
#define PEPSI_INGRESS_PROVIDER_H

#include "ingress/signature.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stddef.h>

/* Where a provider's external id comes from. */
enum id_kind {
    ID_HEADER,   /* header:<Name> */
    ID_JSON,     /* json:<key>[.<key>...], read from the body after verification */
    ID_SHA256,   /* sha256: the hex SHA-256 of the raw body */
};

struct provider {
    char *name;
    struct sig_config sig;           /* sig.keys points into keys */
    struct sig_key *keys;
    char *sig_header;                /* hmac-sha256 */
    char *sig_prefix;
    enum id_kind id_kind;
    char *id_arg;                    /* the header name, or the JSON path */
};

/* An immutable set of providers, sorted by name. */
struct provider_set {
    struct provider *v;
    size_t n;
};

struct provider_cache {
    pthread_rwlock_t lock;
    struct provider_set *set;
    unsigned long reloads;           /* successful loads, the first included */
};

/* Builds a set from the rows of pepsi.webhook_provider_list(). A provider
 * whose row cannot be used (bad secret, unknown scheme) is left out with
 * a warning: the others keep working. Never fails but for memory. */
struct provider_set *provider_set_from_result(const PGresult *r);

/* Frees a set and wipes its keys; NULL is fine. */
void provider_set_free(struct provider_set *s);

/* Sets up an empty cache; 0 or -1. */
int provider_cache_init(struct provider_cache *c);

/* Replaces the cache's set with s (taken over) and frees the old one. */
void provider_cache_swap(struct provider_cache *c, struct provider_set *s);

/* Read-locks the cache and returns the provider called name, or NULL.
 * Every call, whatever it returned, is paired with provider_cache_release. */
const struct provider *provider_cache_acquire(struct provider_cache *c, const char *name);

/* Ends what provider_cache_acquire began. */
void provider_cache_release(struct provider_cache *c);

/* How many providers the cache holds now. */
size_t provider_cache_count(struct provider_cache *c);

/* Frees the cache and its set. */
void provider_cache_destroy(struct provider_cache *c);

/* Parses an id source ("header:X", "json:a.b", "sha256"); 0 or -1. The
 * argument (header name or path) is copied into *arg, to be freed. */
int provider_parse_id_source(const char *src, enum id_kind *kind, char **arg);

#endif
