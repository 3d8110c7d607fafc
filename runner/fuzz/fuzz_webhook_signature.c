/* fuzz_webhook_signature.c — libFuzzer target for every webhook signature
 * header parser of the ingress (runner/src/ingress/signature.c, issue 11):
 * Standard Webhooks "v1,<b64>" lists (under webhook-* and Svix's svix-*
 * names, both at once too), Stripe "t=...,v1=...", GitHub "sha256=<hex>",
 * Slack "v0=<hex>" with its timestamp, Shopify base64, the generic
 * hmac-sha256 header with a prefix, and secrets (whsec_ base64).
 *
 * Input: byte 0 picks the parser, byte 1 holds flags (header names, the
 * hmac-sha256 encoding, the clock), then up to four header values
 * separated by '\n', then the body (everything after the fourth '\n').
 * The keys are fixed, from the published vectors, so that signatures in
 * the seed corpus verify and the fuzzer explores past the comparison. */
#include "ingress/signature.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N_FIELDS 4
#define N_HEADERS 8

struct fuzz_headers {
    const char *name[N_HEADERS];
    const char *value[N_HEADERS];
    size_t n;
};

static const char *fuzz_get(void *ctx, const char *name)
{
    const struct fuzz_headers *h = ctx;
    for (size_t i = 0; i < h->n; i++)
        if (strcasecmp(h->name[i], name) == 0)
            return h->value[i];
    return NULL;
}

static void put(struct fuzz_headers *h, const char *name, const char *value)
{
    if (value && h->n < N_HEADERS) {
        h->name[h->n] = name;
        h->value[h->n] = value;
        h->n++;
    }
}

/* The published secrets (testdata/webhook-vectors.json): sw-1,
 * github-1, slack-1, shopify-1 (stripe-2 for Stripe); made into keys once. */
static struct sig_key keys[6];
static int keys_ready;

static void keys_init(void)
{
    static const struct {
        enum sig_scheme scheme;
        const char *secret;
    } secrets[] = {
        {SIG_STANDARD_WEBHOOKS, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
        {SIG_STRIPE, "whsec_test_secret"},
        {SIG_GITHUB, "It's a Secret to Everybody"},
        {SIG_SLACK, "8f742231b10e8888abcd99yyyzzz85a5"},
        {SIG_SHOPIFY, "secret"},
        {SIG_HMAC_SHA256, "It's a Secret to Everybody"},
    };
    char err[128];
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (sig_key_from_secret(secrets[i].scheme, secrets[i].secret, &keys[i], err, sizeof err) != 0)
            abort();
    keys_ready = 1;
}

/* Splits data into N_FIELDS NUL-terminated fields and a body, in buf. */
static size_t split(char *buf, const uint8_t *data, size_t size, char *field[N_FIELDS], const char **body)
{
    size_t f = 0, start = 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (size_t i = 0; i < size && f < N_FIELDS; i++) {
        if (buf[i] == '\n') {
            buf[i] = '\0';
            field[f++] = buf + start;
            start = i + 1;
        }
    }
    for (; f < N_FIELDS; f++)
        field[f] = NULL;
    *body = buf + start;
    return size - start;
}

static void standard_headers(struct fuzz_headers *h, char *field[N_FIELDS], uint8_t flags)
{
    static const char *const names[2][3] = {{"webhook-id", "webhook-timestamp", "webhook-signature"},
                                            {"svix-id", "svix-timestamp", "svix-signature"}};
    for (int i = 0; i < 3; i++) {
        int svix = (flags >> i) & 1;
        put(h, names[svix][i], field[i]);
        if (flags & 0x08) /* both names: the second from field 3, or the same value */
            put(h, names[!svix][i], field[3] && (flags & 0x10) ? field[3] : field[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *field[N_FIELDS];
    const char *body;
    struct fuzz_headers h = {.n = 0};
    char err[128];
    struct sig_key k;
    if (size < 2)
        return 0;
    if (!keys_ready)
        keys_init();
    uint8_t which = data[0] % 8, flags = data[1];
    char *buf = malloc(size - 2 + 1);
    if (buf == NULL)
        return 0;
    size_t body_len = split(buf, data + 2, size - 2, field, &body);
    /* 1614265331: one second after sw-1's timestamp; else a late clock. */
    int64_t now = (flags & 0x40) ? 1614265331 : (flags & 0x20) ? 1531420618 : 1700000000;
    struct sig_config c = {SIG_STANDARD_WEBHOOKS, &keys[0], 1, 300, "X-Sig", SIG_HEX, NULL};

    switch (which) {
    case 0:
        standard_headers(&h, field, flags);
        break;
    case 1:
        c.scheme = SIG_STRIPE;
        c.keys = &keys[1];
        put(&h, "Stripe-Signature", field[0]);
        break;
    case 2:
        c.scheme = SIG_GITHUB;
        c.keys = &keys[2];
        put(&h, "X-Hub-Signature-256", field[0]);
        break;
    case 3:
        c.scheme = SIG_SLACK;
        c.keys = &keys[3];
        put(&h, "X-Slack-Signature", field[0]);
        put(&h, "X-Slack-Request-Timestamp", field[1]);
        break;
    case 4:
        c.scheme = SIG_SHOPIFY;
        c.keys = &keys[4];
        put(&h, (flags & 1) ? "Shopify-Hmac-Sha256" : "X-Shopify-Hmac-Sha256", field[0]);
        break;
    case 5:
        c.scheme = SIG_HMAC_SHA256;
        c.keys = &keys[5];
        c.encoding = (flags & 1) ? SIG_BASE64 : SIG_HEX;
        c.prefix = field[1];
        put(&h, "X-Sig", field[0]);
        break;
    case 6: /* a configured secret, for each scheme's key rules */
        if (field[0] && sig_key_from_secret((enum sig_scheme)(flags % 6), field[0], &k, err, sizeof err) == 0)
            sig_key_free(&k);
        free(buf);
        return 0;
    default: { /* signing with a fuzzed id, then verifying what was signed */
        char out[64];
        int64_t ts = (int64_t)(flags & 0x3f) * 1000003;
        if (field[0] && sig_standard_sign(&keys[0], field[0], ts, (const unsigned char *)body, body_len, out,
                                          sizeof out) == 0) {
            char tss[24];
            snprintf(tss, sizeof tss, "%lld", (long long)ts);
            put(&h, "webhook-id", field[0]);
            put(&h, "webhook-timestamp", tss);
            put(&h, "webhook-signature", out);
            if (sig_verify(&c, fuzz_get, &h, (const unsigned char *)body, body_len, ts) != SIG_OK && field[0][0])
                abort(); /* what sig_standard_sign signed must verify */
        }
        free(buf);
        return 0;
    }
    }
    enum sig_result r = sig_verify(&c, fuzz_get, &h, (const unsigned char *)body, body_len, now);
    if (sig_result_status(r) < 200 || sig_result_reason(r) == NULL)
        abort();
    free(buf);
    return 0;
}
