/* stages/http_get.h — the GET mode of pepsi-stage-http (METHOD = GET): a
 * back-fill request (W-33..W-35) asks the provider's API for one event,
 * and the answer is handed to pepsi.webhook_backfill_store(), which stores
 * a found event through the deliveries' upsert or tombstones the id.
 * Owns: nothing kept between messages. Uses: sdk/ (sdk.h, and
 * sdk_internal.h for the worker's connection), lib/ (pgerr, log, util),
 * libcurl, jansson. */
#ifndef PEPSI_STAGES_HTTP_GET_H
#define PEPSI_STAGES_HTTP_GET_H

#include "sdk/sdk.h"

#include <curl/curl.h>
#include <stdint.h>

#define HTTP_GET_ANSWER_MAX (1024 * 1024)   /* a larger answer fails the request */

/* What one GET needs from the stage's section. */
struct http_get_req {
    CURL *curl;                      /* the stage's handle, reused */
    const char *url_template;        /* URL with {external_id} and {provider} */
    int64_t timeout_ms;              /* TIMEOUT */
    const char *authorization;       /* AUTHORIZATION header value, or NULL */
};

/* The URL for one request: the template with {external_id} and
 * {provider} replaced by the percent-encoded values (RFC 3986: all but
 * unreserved characters). malloc'd. */
char *http_get_url(const char *tmpl, const char *provider, const char *external_id);

/* Runs one back-fill request m (state webhook_provider, external_id) and
 * fills *out:
 *   2xx with a body, 404, 410, 2xx empty   stored by webhook_backfill_store
 *                                          (on the worker's connection),
 *                                          then advance (NEXT, or finish)
 *   408, 429, 5xx, no answer               host error: retried with backoff
 *   any other status, an answer over       failed for good (a back-fill
 *   HTTP_GET_ANSWER_MAX, an answer that    failure, shown by the anomaly
 *   is another event (PX023)               check backfill_failures) */
void http_get_run(struct pepsi_worker *w, const struct http_get_req *req, const struct pepsi_message *m,
                  struct pepsi_outcome *out);

#endif
