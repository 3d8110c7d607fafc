/* ingress/provider.c — see provider.h. */
#include "ingress/provider.h"

#include "lib/log.h"
#include "lib/util.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>

#define COMPONENT "ingress"

/* Columns of pepsi.webhook_provider_list(). */
enum { COL_NAME, COL_SCHEME, COL_SECRETS, COL_TOLERANCE, COL_ID_SOURCE, COL_SIG_HEADER, COL_SIG_ENCODING,
       COL_SIG_PREFIX, N_COLS };

int provider_parse_id_source(const char *src, enum id_kind *kind, char **arg)
{
    *arg = NULL;
    if (src == NULL)
        return -1;
    if (strcmp(src, "sha256") == 0) {
        *kind = ID_SHA256;
        return 0;
    }
    if (strncmp(src, "header:", 7) == 0 && src[7]) {
        *kind = ID_HEADER;
        *arg = xstrdup(src + 7);
        return 0;
    }
    if (strncmp(src, "json:", 5) == 0 && src[5]) {
        *kind = ID_JSON;
        *arg = xstrdup(src + 5);
        return 0;
    }
    return -1;
}

static void provider_free(struct provider *p)
{
    for (size_t i = 0; i < p->sig.n_keys; i++)
        sig_key_free(&p->keys[i]);
    free(p->keys);
    free(p->name);
    free(p->sig_header);
    free(p->sig_prefix);
    free(p->id_arg);
    memset(p, 0, sizeof *p);
}

/* Turns the secrets (a JSON array of strings, newest first) into keys.
 * Returns the number of keys, or -1 with a message. */
static long parse_secrets(const char *json, enum sig_scheme scheme, struct sig_key **out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *arr = json_loads(json, 0, &jerr);
    size_t n = 0, i;
    json_t *v;
    struct sig_key *keys = NULL;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        snprintf(err, errlen, "unreadable secrets");
        json_decref(arr);
        return -1;
    }
    keys = xcalloc(json_array_size(arr), sizeof *keys);
    json_array_foreach(arr, i, v) {
        if (sig_key_from_secret(scheme, json_string_value(v), &keys[n], err, errlen) != 0) {
            while (n > 0)
                sig_key_free(&keys[--n]);
            free(keys);
            json_decref(arr);
            return -1;
        }
        n++;
    }
    json_decref(arr);
    *out = keys;
    return (long)n;
}

static const char *col(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
}

/* One row into *p; 0, or -1 (logged) when the row cannot be used. */
static int provider_from_row(const PGresult *r, int row, struct provider *p)
{
    char err[256];
    memset(p, 0, sizeof *p);
    p->name = xstrdup(PQgetvalue(r, row, COL_NAME));
    if (sig_scheme_parse(col(r, row, COL_SCHEME), &p->sig.scheme) != 0) {
        snprintf(err, sizeof err, "unknown scheme \"%s\"", PQgetvalue(r, row, COL_SCHEME));
        goto bad;
    }
    long n = parse_secrets(PQgetvalue(r, row, COL_SECRETS), p->sig.scheme, &p->keys, err, sizeof err);
    if (n < 0)
        goto bad;
    p->sig.keys = p->keys;
    p->sig.n_keys = (size_t)n;
    p->sig.tolerance_s = atoll(PQgetvalue(r, row, COL_TOLERANCE));
    if (provider_parse_id_source(col(r, row, COL_ID_SOURCE), &p->id_kind, &p->id_arg) != 0) {
        snprintf(err, sizeof err, "unknown id source \"%s\"", PQgetvalue(r, row, COL_ID_SOURCE));
        goto bad;
    }
    if (p->sig.scheme == SIG_HMAC_SHA256) {
        const char *enc = col(r, row, COL_SIG_ENCODING);
        p->sig_header = xstrdup(col(r, row, COL_SIG_HEADER) ? col(r, row, COL_SIG_HEADER) : "");
        p->sig_prefix = xstrdup(col(r, row, COL_SIG_PREFIX) ? col(r, row, COL_SIG_PREFIX) : "");
        p->sig.header = p->sig_header;
        p->sig.prefix = p->sig_prefix;
        p->sig.encoding = enc && strcmp(enc, "base64") == 0 ? SIG_BASE64 : SIG_HEX;
    }
    return 0;
bad:
    log_warning(COMPONENT, "webhook provider \"%s\" left out: %s", p->name, err);
    provider_free(p);
    return -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct provider *)a)->name, ((const struct provider *)b)->name);
}

struct provider_set *provider_set_from_result(const PGresult *r)
{
    struct provider_set *s = xcalloc(1, sizeof *s);
    int rows = PQntuples(r);
    if (PQnfields(r) != N_COLS) {
        log_error(COMPONENT, "pepsi.webhook_provider_list() returned %d columns, expected %d", PQnfields(r), N_COLS);
        return s;
    }
    s->v = xcalloc(rows > 0 ? (size_t)rows : 1, sizeof *s->v);
    for (int i = 0; i < rows; i++)
        if (provider_from_row(r, i, &s->v[s->n]) == 0)
            s->n++;
    qsort(s->v, s->n, sizeof *s->v, by_name);
    return s;
}

void provider_set_free(struct provider_set *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        provider_free(&s->v[i]);
    free(s->v);
    free(s);
}

int provider_cache_init(struct provider_cache *c)
{
    memset(c, 0, sizeof *c);
    c->set = xcalloc(1, sizeof *c->set);
    return pthread_rwlock_init(&c->lock, NULL) == 0 ? 0 : -1;
}

void provider_cache_swap(struct provider_cache *c, struct provider_set *s)
{
    struct provider_set *old;
    if (pthread_rwlock_wrlock(&c->lock) != 0)
        abort(); /* only fails on a misuse of the lock */
    old = c->set;
    c->set = s;
    c->reloads++;
    pthread_rwlock_unlock(&c->lock);
    provider_set_free(old); /* no reader can hold it: they all hold the lock */
}

const struct provider *provider_cache_acquire(struct provider_cache *c, const char *name)
{
    struct provider key;
    memset(&key, 0, sizeof key);
    if (pthread_rwlock_rdlock(&c->lock) != 0)
        abort();
    key.name = (char *)name;
    return c->set->n ? bsearch(&key, c->set->v, c->set->n, sizeof key, by_name) : NULL;
}

void provider_cache_release(struct provider_cache *c)
{
    pthread_rwlock_unlock(&c->lock);
}

size_t provider_cache_count(struct provider_cache *c)
{
    size_t n;
    if (pthread_rwlock_rdlock(&c->lock) != 0)
        abort();
    n = c->set->n;
    pthread_rwlock_unlock(&c->lock);
    return n;
}

void provider_cache_destroy(struct provider_cache *c)
{
    provider_set_free(c->set);
    c->set = NULL;
    pthread_rwlock_destroy(&c->lock);
}
