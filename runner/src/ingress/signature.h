/* ingress/signature.h — webhook signature schemes, verified over the exact
 * raw request bytes before anything parses them (W-04), with constant-time
 * comparisons (CRYPTO_memcmp). Pure functions: no I/O, no database, so the
 * unit tests run them against the published vectors
 * (testdata/webhook-vectors.json).
 *
 * Schemes (the formats of each provider's own documentation):
 *   standard-webhooks  webhook-id, webhook-timestamp, webhook-signature:
 *                      space-separated "v1,<base64>" entries; key: base64
 *                      after an optional "whsec_"; signed "id.timestamp.body".
 *                      Svix's names svix-id, svix-timestamp, svix-signature
 *                      are aliases (the same scheme, issue 11): each value
 *                      is read from webhook-X, else from svix-X; both
 *                      present with different values is SIG_CONFLICT.
 *   stripe             Stripe-Signature: t=<ts>,v1=<hex>[,v1=...][,v0=...]
 *                      (only v1 counts); key: the secret text; signed "t.body"
 *   github             X-Hub-Signature-256: sha256=<hex>; signed: the body
 *   slack              X-Slack-Signature: v0=<hex>, X-Slack-Request-Timestamp;
 *                      signed "v0:ts:body"
 *   shopify            X-Shopify-Hmac-Sha256 (or Shopify-Hmac-Sha256):
 *                      base64; signed: the body
 *   hmac-sha256        a configured header holding prefix + hex or base64
 *                      of HMAC-SHA256(secret, body)
 * The expected signature is encoded canonically (lower-case hex, padded
 * standard base64) and compared as text, so a re-encoded signature (upper
 * case, base64url, other padding bits) is refused like a forged one.
 * Timestamps: decimal Unix seconds; refused when |now - ts| > tolerance
 * (both ways: a timestamp from the future is as suspect as a stale one).
 * Owns: the provider schemes (enum sig_scheme) and verification. Uses:
 * lib/webhook.h (keys, HMAC, encodings), OpenSSL. */
#ifndef PEPSI_INGRESS_SIGNATURE_H
#define PEPSI_INGRESS_SIGNATURE_H

#include "lib/webhook.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sig_scheme {
    SIG_STANDARD_WEBHOOKS,
    SIG_STRIPE,
    SIG_GITHUB,
    SIG_SLACK,
    SIG_SHOPIFY,
    SIG_HMAC_SHA256,
};

enum sig_encoding { SIG_HEX, SIG_BASE64 };

/* What a verification concluded. Each has a reason name for metrics. */
enum sig_result {
    SIG_OK,
    SIG_NO_SIGNATURE,     /* 401 missing_signature */
    SIG_BAD_SIGNATURE,    /* 401 bad_signature: no candidate matched any secret */
    SIG_NO_TIMESTAMP,     /* 400 missing_timestamp */
    SIG_BAD_TIMESTAMP,    /* 400 bad_timestamp: not decimal seconds */
    SIG_STALE_TIMESTAMP,  /* 400 stale_timestamp: authentic but outside the tolerance */
    SIG_NO_ID,            /* 400 missing_id: the signed content needs the id (standard-webhooks) */
    SIG_CONFLICT,         /* 400 conflicting_headers: webhook-X and svix-X disagree */
};

/* One provider's verification settings. */
struct sig_config {
    enum sig_scheme scheme;
    const struct sig_key *keys;   /* active secrets, newest first; any one verifies */
    size_t n_keys;
    int64_t tolerance_s;          /* standard-webhooks, stripe, slack */
    const char *header;           /* hmac-sha256: the signature header */
    enum sig_encoding encoding;   /* hmac-sha256 */
    const char *prefix;           /* hmac-sha256: text before the value ("" or NULL: none) */
};

/* Looks up a request header by name, case-insensitively; NULL when absent. */
typedef const char *(*sig_header_cb)(void *ctx, const char *name);

/* The Svix alias of a Standard Webhooks header name ("webhook-id" ->
 * "svix-id", any case), or NULL when name has none. */
const char *sig_standard_alias(const char *name);

/* A Standard Webhooks header read through its alias: the value of name,
 * else of its svix- alias; NULL when neither is there. *conflict is set
 * when both are there with different values (the result is then NULL). */
const char *sig_standard_header(sig_header_cb get, void *ctx, const char *name, bool *conflict);

/* "standard-webhooks", "stripe", ... into *out; 0 or -1. */
int sig_scheme_parse(const char *name, enum sig_scheme *out);

/* The scheme's name as sig_scheme_parse reads it. */
const char *sig_scheme_name(enum sig_scheme s);

/* The reason name of a result ("ok", "bad_signature", ...). */
const char *sig_result_reason(enum sig_result r);

/* The HTTP status a result is answered with (200 for SIG_OK). */
int sig_result_status(enum sig_result r);

/* The HMAC key of a configured secret for scheme: webhook_key_from_secret
 * (lib/webhook.h), the Standard Webhooks way for standard-webhooks. */
int sig_key_from_secret(enum sig_scheme scheme, const char *secret, struct sig_key *out, char *err,
                        size_t errlen);

/* Verifies one request: its headers (through get) and its raw body, at
 * wall-clock time now_s. Never reads the body beyond body_len and never
 * parses it. */
enum sig_result sig_verify(const struct sig_config *c, sig_header_cb get, void *ctx,
                           const unsigned char *body, size_t body_len, int64_t now_s);

#endif
