/* ingress/signature.c — see signature.h. */
#include "ingress/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAC_LEN WEBHOOK_MAC_LEN
#define HEX_LEN (2 * MAC_LEN)           /* 64 */
#define B64_LEN WEBHOOK_B64_LEN
#define MAX_TIMESTAMP_DIGITS 12

static const char *const scheme_names[] = {
    [SIG_STANDARD_WEBHOOKS] = "standard-webhooks",
    [SIG_STRIPE] = "stripe",
    [SIG_GITHUB] = "github",
    [SIG_SLACK] = "slack",
    [SIG_SHOPIFY] = "shopify",
    [SIG_HMAC_SHA256] = "hmac-sha256",
};

int sig_scheme_parse(const char *name, enum sig_scheme *out)
{
    for (size_t i = 0; i < sizeof scheme_names / sizeof scheme_names[0]; i++) {
        if (name && strcmp(name, scheme_names[i]) == 0) {
            *out = (enum sig_scheme)i;
            return 0;
        }
    }
    return -1;
}

const char *sig_scheme_name(enum sig_scheme s)
{
    return (size_t)s < sizeof scheme_names / sizeof scheme_names[0] ? scheme_names[s] : "unknown";
}

const char *sig_result_reason(enum sig_result r)
{
    switch (r) {
    case SIG_OK: return "ok";
    case SIG_NO_SIGNATURE: return "missing_signature";
    case SIG_BAD_SIGNATURE: return "bad_signature";
    case SIG_NO_TIMESTAMP: return "missing_timestamp";
    case SIG_BAD_TIMESTAMP: return "bad_timestamp";
    case SIG_STALE_TIMESTAMP: return "stale_timestamp";
    case SIG_NO_ID: return "missing_id";
    case SIG_CONFLICT: return "conflicting_headers";
    }
    return "unknown";
}

int sig_result_status(enum sig_result r)
{
    switch (r) {
    case SIG_OK: return 200;
    case SIG_NO_SIGNATURE:
    case SIG_BAD_SIGNATURE: return 401;
    default: return 400;
    }
}

/* ---- keys ---- */

int sig_key_from_secret(enum sig_scheme scheme, const char *secret, struct sig_key *out, char *err,
                        size_t errlen)
{
    return webhook_key_from_secret(scheme == SIG_STANDARD_WEBHOOKS, secret, out, err, errlen);
}

/* ---- comparing ---- */

/* The signed content is up to three parts: prefix, body, nothing else. */
struct signed_content {
    const void *parts[2];
    size_t lens[2];
};

/* Expected text (hex or base64) of one key's MAC, written into want. */
static int expected_text(const struct sig_key *key, const struct signed_content *sc, enum sig_encoding enc,
                         char want[B64_LEN + HEX_LEN])
{
    unsigned char mac[MAC_LEN];
    if (sig_hmac_sha256(key, sc->parts, sc->lens, 2, mac) != 0)
        return -1;
    if (enc == SIG_HEX)
        sig_hex(mac, MAC_LEN, want);
    else
        sig_base64(mac, MAC_LEN, want);
    OPENSSL_cleanse(mac, sizeof mac);
    return 0;
}

/* Whether candidate (len bytes, not NUL-terminated) equals want, in time
 * that depends only on the lengths. */
static bool text_equal(const char *candidate, size_t len, const char *want)
{
    size_t wlen = strlen(want);
    return len == wlen && CRYPTO_memcmp(candidate, want, wlen) == 0;
}

/* A list of candidate signatures found in a header, each a slice of it. */
#define MAX_CANDIDATES 16
struct candidates {
    const char *at[MAX_CANDIDATES];
    size_t len[MAX_CANDIDATES];
    size_t n;
};

static void candidates_add(struct candidates *c, const char *at, size_t len)
{
    if (c->n < MAX_CANDIDATES) {
        c->at[c->n] = at;
        c->len[c->n] = len;
        c->n++;
    }
}

/* Whether any candidate matches the MAC of any key. Every pair is
 * compared (no early exit), so the time says nothing about which matched. */
static enum sig_result match_any(const struct sig_config *c, const struct signed_content *sc, enum sig_encoding enc,
                                 const struct candidates *cand)
{
    char want[B64_LEN + HEX_LEN];
    bool ok = false;
    if (cand->n == 0)
        return SIG_BAD_SIGNATURE;
    for (size_t k = 0; k < c->n_keys; k++) {
        if (expected_text(&c->keys[k], sc, enc, want) != 0)
            return SIG_BAD_SIGNATURE;
        for (size_t i = 0; i < cand->n; i++)
            ok |= text_equal(cand->at[i], cand->len[i], want);
    }
    OPENSSL_cleanse(want, sizeof want);
    return ok ? SIG_OK : SIG_BAD_SIGNATURE;
}

/* ---- timestamps ---- */

/* Decimal Unix seconds, digits only. 0, or -1 when malformed. */
static int parse_timestamp(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;
    if (len == 0 || len > MAX_TIMESTAMP_DIGITS)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static bool within_tolerance(int64_t ts, int64_t now, int64_t tolerance)
{
    int64_t d = now - ts;
    return (d < 0 ? -d : d) <= tolerance;
}

/* The result once the signature matched: the timestamp's age decides. */
static enum sig_result after_match(enum sig_result r, int64_t ts, const struct sig_config *c, int64_t now)
{
    if (r != SIG_OK)
        return r;
    return within_tolerance(ts, now, c->tolerance_s) ? SIG_OK : SIG_STALE_TIMESTAMP;
}

/* ---- the schemes ---- */

/* ---- Standard Webhooks and its Svix names ---- */

static const char *const standard_names[][2] = {
    {"webhook-id", "svix-id"},
    {"webhook-timestamp", "svix-timestamp"},
    {"webhook-signature", "svix-signature"},
};

const char *sig_standard_alias(const char *name)
{
    for (size_t i = 0; name && i < sizeof standard_names / sizeof standard_names[0]; i++)
        if (strcasecmp(name, standard_names[i][0]) == 0)
            return standard_names[i][1];
    return NULL;
}

const char *sig_standard_header(sig_header_cb get, void *ctx, const char *name, bool *conflict)
{
    const char *alias = sig_standard_alias(name);
    const char *v = get(ctx, name);
    const char *a = alias ? get(ctx, alias) : NULL;
    if (v && a && strcmp(v, a) != 0) {
        *conflict = true;
        return NULL;
    }
    return v ? v : a;
}

static enum sig_result verify_standard(const struct sig_config *c, sig_header_cb get, void *ctx,
                                       const unsigned char *body, size_t len, int64_t now)
{
    bool conflict = false;
    const char *id = sig_standard_header(get, ctx, "webhook-id", &conflict);
    const char *tss = sig_standard_header(get, ctx, "webhook-timestamp", &conflict);
    const char *sig = sig_standard_header(get, ctx, "webhook-signature", &conflict);
    int64_t ts;
    if (conflict)
        return SIG_CONFLICT;
    if (id == NULL || *id == '\0')
        return SIG_NO_ID;
    if (tss == NULL || *tss == '\0')
        return SIG_NO_TIMESTAMP;
    if (sig == NULL || *sig == '\0')
        return SIG_NO_SIGNATURE;
    if (parse_timestamp(tss, strlen(tss), &ts) != 0)
        return SIG_BAD_TIMESTAMP;

    /* "v1,<b64> v1,<b64> v1a,<ed25519>": only v1 entries are HMAC. */
    struct candidates cand = {.n = 0};
    for (const char *p = sig; *p;) {
        size_t tok = strcspn(p, " ");
        if (tok > 3 && strncmp(p, "v1,", 3) == 0)
            candidates_add(&cand, p + 3, tok - 3);
        p += tok;
        while (*p == ' ')
            p++;
    }
    size_t plen = strlen(id) + strlen(tss) + 2;
    char *prefix = malloc(plen + 1);
    if (prefix == NULL)
        return SIG_BAD_SIGNATURE;
    snprintf(prefix, plen + 1, "%s.%s.", id, tss);
    struct signed_content sc = {{prefix, body}, {plen, len}};
    enum sig_result r = match_any(c, &sc, SIG_BASE64, &cand);
    free(prefix);
    return after_match(r, ts, c, now);
}

static enum sig_result verify_stripe(const struct sig_config *c, sig_header_cb get, void *ctx,
                                     const unsigned char *body, size_t len, int64_t now)
{
    const char *hdr = get(ctx, "Stripe-Signature");
    const char *t = NULL;
    size_t tlen = 0;
    int64_t ts;
    struct candidates cand = {.n = 0};
    if (hdr == NULL || *hdr == '\0')
        return SIG_NO_SIGNATURE;
    /* "t=...,v1=...,v1=...,v0=...": the first t, every v1; v0 is ignored. */
    for (const char *p = hdr; *p;) {
        size_t item = strcspn(p, ",");
        if (item > 2 && strncmp(p, "t=", 2) == 0 && t == NULL) {
            t = p + 2;
            tlen = item - 2;
        } else if (item > 3 && strncmp(p, "v1=", 3) == 0) {
            candidates_add(&cand, p + 3, item - 3);
        }
        p += item;
        if (*p == ',')
            p++;
    }
    if (t == NULL)
        return SIG_NO_TIMESTAMP;
    if (parse_timestamp(t, tlen, &ts) != 0)
        return SIG_BAD_TIMESTAMP;
    if (cand.n == 0)
        return SIG_NO_SIGNATURE;
    char prefix[MAX_TIMESTAMP_DIGITS + 2];
    snprintf(prefix, sizeof prefix, "%.*s.", (int)tlen, t);
    struct signed_content sc = {{prefix, body}, {tlen + 1, len}};
    return after_match(match_any(c, &sc, SIG_HEX, &cand), ts, c, now);
}

static enum sig_result verify_slack(const struct sig_config *c, sig_header_cb get, void *ctx,
                                    const unsigned char *body, size_t len, int64_t now)
{
    const char *tss = get(ctx, "X-Slack-Request-Timestamp");
    const char *sig = get(ctx, "X-Slack-Signature");
    int64_t ts;
    if (sig == NULL || *sig == '\0')
        return SIG_NO_SIGNATURE;
    if (tss == NULL || *tss == '\0')
        return SIG_NO_TIMESTAMP;
    if (parse_timestamp(tss, strlen(tss), &ts) != 0)
        return SIG_BAD_TIMESTAMP;
    struct candidates cand = {.n = 0};
    if (strncmp(sig, "v0=", 3) == 0)
        candidates_add(&cand, sig + 3, strlen(sig) - 3);
    char prefix[MAX_TIMESTAMP_DIGITS + 5];
    int plen = snprintf(prefix, sizeof prefix, "v0:%s:", tss);
    struct signed_content sc = {{prefix, body}, {(size_t)plen, len}};
    return after_match(match_any(c, &sc, SIG_HEX, &cand), ts, c, now);
}

/* Schemes that sign the body alone: one header, an optional prefix. */
static enum sig_result verify_body_only(const struct sig_config *c, const char *sig, const char *prefix,
                                        enum sig_encoding enc, const unsigned char *body, size_t len)
{
    size_t plen = prefix ? strlen(prefix) : 0;
    if (sig == NULL || *sig == '\0')
        return SIG_NO_SIGNATURE;
    struct candidates cand = {.n = 0};
    if (strncmp(sig, prefix ? prefix : "", plen) == 0)
        candidates_add(&cand, sig + plen, strlen(sig) - plen);
    struct signed_content sc = {{"", body}, {0, len}};
    return match_any(c, &sc, enc, &cand);
}

enum sig_result sig_verify(const struct sig_config *c, sig_header_cb get, void *ctx,
                           const unsigned char *body, size_t body_len, int64_t now_s)
{
    const char *sig;
    switch (c->scheme) {
    case SIG_STANDARD_WEBHOOKS:
        return verify_standard(c, get, ctx, body, body_len, now_s);
    case SIG_STRIPE:
        return verify_stripe(c, get, ctx, body, body_len, now_s);
    case SIG_SLACK:
        return verify_slack(c, get, ctx, body, body_len, now_s);
    case SIG_GITHUB:
        return verify_body_only(c, get(ctx, "X-Hub-Signature-256"), "sha256=", SIG_HEX, body, body_len);
    case SIG_SHOPIFY:
        sig = get(ctx, "X-Shopify-Hmac-Sha256");
        return verify_body_only(c, sig ? sig : get(ctx, "Shopify-Hmac-Sha256"), "", SIG_BASE64, body, body_len);
    case SIG_HMAC_SHA256:
        return verify_body_only(c, get(ctx, c->header), c->prefix, c->encoding, body, body_len);
    }
    return SIG_BAD_SIGNATURE;
}
