/* lib/webhook.c — see webhook.h. */
#include "lib/webhook.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAC_LEN WEBHOOK_MAC_LEN
#define B64_LEN WEBHOOK_B64_LEN

/* ---- encodings ---- */

void sig_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

void sig_base64(const unsigned char *in, size_t n, char *out)
{
    /* EVP_EncodeBlock writes padded standard base64 and a NUL, no newlines. */
    (void)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

/* Strict base64 into a new buffer: length a multiple of 4, at most two
 * '=' at the end, only the standard alphabet. Returns the length, or -1. */
static long base64_decode(const char *in, unsigned char **out)
{
    size_t len = strlen(in), pad = 0;
    if (len == 0 || len % 4 != 0 || len > 4096)
        return -1;
    while (pad < 2 && in[len - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < len - pad; i++) {
        char c = in[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
            return -1;
    }
    unsigned char *buf = malloc(len / 4 * 3 + 1);
    if (buf == NULL)
        return -1;
    int n = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
    if (n < 0 || (size_t)n < pad) {
        free(buf);
        return -1;
    }
    *out = buf;
    return (long)((size_t)n - pad);
}

/* ---- keys ---- */

int webhook_key_from_secret(bool standard_webhooks, const char *secret, struct sig_key *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (secret == NULL || *secret == '\0') {
        snprintf(err, errlen, "empty secret");
        return -1;
    }
    if (standard_webhooks) {
        const char *b64 = strncmp(secret, "whsec_", 6) == 0 ? secret + 6 : secret;
        unsigned char *key = NULL;
        long n = *b64 ? base64_decode(b64, &key) : -1;
        if (n <= 0) {
            free(key);
            snprintf(err, errlen, "a standard-webhooks secret is whsec_ followed by non-empty base64");
            return -1;
        }
        out->bytes = key;
        out->len = (size_t)n;
        return 0;
    }
    out->len = strlen(secret);
    out->bytes = malloc(out->len);
    if (out->bytes == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(out->bytes, secret, out->len);
    return 0;
}

void sig_key_free(struct sig_key *k)
{
    if (k->bytes) {
        OPENSSL_cleanse(k->bytes, k->len);
        free(k->bytes);
    }
    k->bytes = NULL;
    k->len = 0;
}

/* ---- HMAC ---- */

/* The HMAC implementation, fetched once: fetching on every request would
 * take the provider store's lock each time. */
static EVP_MAC *hmac_impl;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_fetch(void)
{
    hmac_impl = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

int sig_hmac_sha256(const struct sig_key *key, const void *const *parts, const size_t *lens, size_t n,
                    unsigned char mac[32])
{
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    size_t outlen = 0;
    int ok = 0;

    if (pthread_once(&hmac_once, hmac_fetch) != 0 || hmac_impl == NULL)
        return -1;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(hmac_impl);
    if (ctx == NULL)
        return -1;
    if (EVP_MAC_init(ctx, key->bytes, key->len, params) == 1) {
        ok = 1;
        for (size_t i = 0; i < n && ok; i++)
            ok = lens[i] == 0 || EVP_MAC_update(ctx, parts[i], lens[i]) == 1;
        ok = ok && EVP_MAC_final(ctx, mac, &outlen, MAC_LEN) == 1 && outlen == MAC_LEN;
    }
    EVP_MAC_CTX_free(ctx);
    return ok ? 0 : -1;
}

int sig_standard_sign(const struct sig_key *key, const char *id, int64_t timestamp,
                      const unsigned char *body, size_t body_len, char *out, size_t outcap)
{
    char prefix[1100];
    unsigned char mac[MAC_LEN];
    char b64[B64_LEN + 1];
    int plen = snprintf(prefix, sizeof prefix, "%s.%lld.", id, (long long)timestamp);
    if (plen < 0 || (size_t)plen >= sizeof prefix || outcap < B64_LEN + 4)
        return -1;
    const void *parts[] = {prefix, body};
    size_t lens[] = {(size_t)plen, body_len};
    if (sig_hmac_sha256(key, parts, lens, 2, mac) != 0)
        return -1;
    sig_base64(mac, MAC_LEN, b64);
    snprintf(out, outcap, "v1,%s", b64);
    return 0;
}

/* ---- headers ---- */

int webhook_keeps_header(const char *name)
{
    static const char *const dropped[] = {"host",    "content-length", "connection", "transfer-encoding",
                                          "keep-alive", "te",          "trailer",    "upgrade",
                                          "expect",  "accept-encoding"};
    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++)
        if (strcasecmp(name, dropped[i]) == 0)
            return 0;
    return strncasecmp(name, "proxy-", 6) != 0;
}
