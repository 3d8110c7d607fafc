/* ingress/event.c — see event.h. */
#include "ingress/event.h"

#include "lib/util.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A copy of an id, checked: non-empty, at most EVENT_ID_MAX bytes, UTF-8
 * (it is stored as text). */
static enum event_result take_id(const char *s, size_t len, char **id)
{
    if (len == 0)
        return EV_NO_ID;
    if (len > EVENT_ID_MAX)
        return EV_BAD_ID;
    json_t *probe = json_stringn(s, len); /* NULL unless valid UTF-8 without NUL */
    if (probe == NULL)
        return EV_BAD_ID;
    json_decref(probe);
    *id = xmalloc(len + 1);
    memcpy(*id, s, len);
    (*id)[len] = '\0';
    return EV_OK;
}

/* Walks a dotted path ("data.object.id") through JSON objects. */
static json_t *json_path(json_t *root, const char *path)
{
    char key[128];
    json_t *cur = root;
    while (cur && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        cur = json_object_get(cur, key);
        path += n;
        if (*path == '.')
            path++;
    }
    return cur;
}

static enum event_result id_from_json(const char *path, const unsigned char *body, size_t len, char **id)
{
    json_error_t err;
    char num[32];
    enum event_result r = EV_NO_ID;
    json_t *root = json_loadb((const char *)body, len, JSON_DECODE_ANY, &err);
    json_t *v = root ? json_path(root, path) : NULL;
    if (json_is_string(v)) {
        r = take_id(json_string_value(v), json_string_length(v), id);
    } else if (json_is_integer(v)) {
        int n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        r = take_id(num, (size_t)n, id);
    }
    json_decref(root);
    return r;
}

static enum event_result id_from_sha256(const unsigned char *body, size_t len, char **id)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(body, len, md, &mdlen, EVP_sha256(), NULL) != 1)
        return EV_BAD_ID;
    *id = xmalloc(2 * mdlen + 1);
    sig_hex(md, mdlen, *id);
    return EV_OK;
}

/* The id header's value. For standard-webhooks, webhook-id is read
 * through its Svix alias svix-id, as the signature check read it (a
 * conflict has been refused there already). */
static const char *id_header(const struct provider *p, const struct event_source *src)
{
    bool conflict = false;
    if (p->sig.scheme == SIG_STANDARD_WEBHOOKS && sig_standard_alias(p->id_arg) != NULL)
        return sig_standard_header(src->get, src->ctx, p->id_arg, &conflict);
    return src->get(src->ctx, p->id_arg);
}

enum event_result event_external_id(const struct provider *p, const struct event_source *src,
                                    const unsigned char *body, size_t body_len, char **id)
{
    const char *v;
    *id = NULL;
    switch (p->id_kind) {
    case ID_HEADER:
        v = id_header(p, src);
        return v ? take_id(v, strlen(v), id) : EV_NO_ID;
    case ID_JSON:
        return id_from_json(p->id_arg, body, body_len, id);
    case ID_SHA256:
        return id_from_sha256(body, body_len, id);
    }
    return EV_NO_ID;
}

/* Adds one header to the object, lower-cased; a repeat is appended. */
static void add_header(void *arg, const char *name, const char *value)
{
    json_t *obj = arg;
    char lower[256];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof lower || !webhook_keeps_header(name))
        return;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    json_t *old = json_object_get(obj, lower);
    if (old) {
        char *joined = xasprintf("%s, %s", json_string_value(old), value);
        json_t *s = json_string(joined);
        free(joined);
        if (s)
            json_object_set_new(obj, lower, s);
        return;
    }
    json_t *s = json_string(value);
    if (s) /* NULL: not UTF-8; such a header is not kept */
        json_object_set_new(obj, lower, s);
}

char *event_json(const char *provider, const char *external_id, const struct event_source *src,
                 const char *received_at, size_t payload_len)
{
    json_t *headers = json_object();
    if (headers == NULL)
        return NULL;
    src->each(src->ctx, add_header, headers);
    json_t *ev = json_pack("{s:s, s:s, s:o, s:s, s:I}", "provider", provider, "external_id", external_id, "headers",
                           headers, "received_at", received_at, "payload_length", (json_int_t)payload_len);
    if (ev == NULL)
        return NULL; /* json_pack released headers ("o" steals it, even on failure) */
    char *text = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    return text;
}
