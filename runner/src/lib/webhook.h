/* lib/webhook.h — what the webhook ingress and the http stage share:
 * HMAC-SHA256 keys made from configured secrets, the HMAC itself
 * (OpenSSL EVP_MAC, fetched once), the Standard Webhooks signature the
 * http stage re-signs with, canonical hex and base64, and which request
 * headers are transport headers. Pure functions: no I/O, no database.
 * Owns: struct sig_key. May use: libc and OpenSSL only (it is in lib/:
 * nothing from the folders above it; issue 13 moved it out of ingress/ so
 * that stages/ need not include ingress/). */
#ifndef PEPSI_LIB_WEBHOOK_H
#define PEPSI_LIB_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEBHOOK_MAC_LEN 32                                  /* HMAC-SHA256 */
#define WEBHOOK_B64_LEN (4 * ((WEBHOOK_MAC_LEN + 2) / 3))   /* 44 */

/* HMAC key bytes made from one configured secret. */
struct sig_key {
    unsigned char *bytes;
    size_t len;
};

/* An HMAC key from a configured secret: with standard_webhooks the base64
 * after an optional "whsec_" prefix, else the secret's own bytes. Returns
 * 0, or -1 with a message in err (an empty secret, bad base64); *out then
 * holds nothing. */
int webhook_key_from_secret(bool standard_webhooks, const char *secret, struct sig_key *out, char *err,
                            size_t errlen);

/* Frees a key's bytes (wiped first); safe on a zeroed key. */
void sig_key_free(struct sig_key *k);

/* HMAC-SHA256 of the concatenation of n parts into mac (32 bytes). 0 or -1. */
int sig_hmac_sha256(const struct sig_key *key, const void *const *parts, const size_t *lens, size_t n,
                    unsigned char mac[32]);

/* Signs a message the Standard Webhooks way: writes "v1,<base64>" of
 * HMAC-SHA256(key, "id.timestamp.body") into out (at least 48 bytes).
 * Returns 0, or -1 when the HMAC cannot be computed. */
int sig_standard_sign(const struct sig_key *key, const char *id, int64_t timestamp,
                      const unsigned char *body, size_t body_len, char *out, size_t outcap);

/* Lower-case hex (2n+1 bytes) and padded standard base64 (4*ceil(n/3)+1
 * bytes) of n bytes, NUL-terminated. */
void sig_hex(const unsigned char *in, size_t n, char *out);
void sig_base64(const unsigned char *in, size_t n, char *out);

/* Whether a header is worth storing with an event and forwarding:
 * everything but transport headers (Host, Content-Length, Connection, Transfer-Encoding,
 * Keep-Alive, TE, Trailer, Upgrade, Expect, Proxy-*, Accept-Encoding). */
int webhook_keeps_header(const char *name);

#endif
