/* ingress/event.h — a verified request becomes an event: its external id
 * (from a header, from the body's JSON once the signature has been
 * verified, or the body's SHA-256), the headers worth keeping
 * (webhook_keeps_header, lib/webhook.h), and the JSON object that
 * pepsi.webhook_events_ingest() reads for it.
 * Owns: nothing kept (pure functions). Uses: ingress/provider.h,
 * lib/ (webhook, util), jansson, OpenSSL (SHA-256). */
#ifndef PEPSI_INGRESS_EVENT_H
#define PEPSI_INGRESS_EVENT_H

#include "ingress/provider.h"
#include "lib/webhook.h"

#include <stddef.h>

#define EVENT_ID_MAX 1024   /* bytes of an external id (webhook_events_external_id_check) */

/* Called for each request header by an event_headers_cb. */
typedef void (*event_header_visit)(void *arg, const char *name, const char *value);

/* Visits every request header of ctx, in order. */
typedef void (*event_headers_cb)(void *ctx, event_header_visit visit, void *arg);

/* How the request's headers are read. */
struct event_source {
    sig_header_cb get;           /* one header by name, case-insensitively */
    event_headers_cb each;       /* all of them */
    void *ctx;
};

enum event_result {
    EV_OK,
    EV_NO_ID,    /* no id where the provider says it is: 400 missing_id */
    EV_BAD_ID,   /* empty after all, over EVENT_ID_MAX bytes, or not UTF-8: 400 bad_id */
};

/* Finds the external id of a verified request; *id is malloc'd on EV_OK.
 * A JSON id may be a string or an integer. */
enum event_result event_external_id(const struct provider *p, const struct event_source *src,
                                    const unsigned char *body, size_t body_len, char **id);

/* The event's object for webhook_events_ingest: provider, external_id,
 * headers (lower-case names; a repeated header's values joined by ", ";
 * values that are not UTF-8 left out), received_at and payload_length.
 * Returns a malloc'd JSON text, or NULL when it cannot be encoded. */
char *event_json(const char *provider, const char *external_id, const struct event_source *src,
                 const char *received_at, size_t payload_len);

#endif
