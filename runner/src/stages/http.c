/* stages/http.c — pepsi-stage-http: POSTs each message's body to URL
 * (libcurl), with the message's header block as request headers, and
 * maps the answer to an outcome:
 *   2xx                               advance to NEXT (finish when none)
 *   408, 429, 5xx, no answer at all   host error: retried later with backoff
 *                                     (1, 2, 4 ... minutes, D-104) until MAX_LIFETIME
 *   any other status (3xx, 4xx)       permanent failure, with the status and
 *                                     the start of the answer as the reason
 * For a message made from a webhook event the body is the event's exact
 * payload and the header block its request headers, so the destination
 * receives what the provider sent. Its own keys:
 *   URL              (required) http:// or https:// target
 *   TIMEOUT          whole request, default 30s
 *   FORWARD_HEADERS  yes (default): send the header block's headers (less
 *                    Host, Content-Length and other transport headers)
 *   SIGNING_SECRET   whsec_<base64>: re-sign with Standard Webhooks
 *                    (webhook-id = state.external_id or msg_<id>,
 *                    webhook-timestamp = now, webhook-signature = v1,...),
 *                    replacing any webhook-* headers of the header block
 *   METHOD           POST (default), or GET: the stage runs back-fill
 *                    requests instead (stages/http_get.h): URL is a template,
 *                    {external_id} and {provider} replaced per message, and
 *                    the answer is stored by pepsi.webhook_backfill_store
 *   AUTHORIZATION    GET: the Authorization header's value (the provider's
 *                    API credential, e.g. "Bearer sk_live_...")
 * The final finish of a webhook message marks its event processed
 * (trigger workqueue_webhook_finished), whatever stage finishes it. */
#include "stages/stages.h"

#include "stages/http_get.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/webhook.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define ANSWER_KEEP 200   /* bytes of an answer kept for a failure reason */

static const char *const http_keys[] = {"URL", "TIMEOUT", "FORWARD_HEADERS", "SIGNING_SECRET", "METHOD",
                                         "AUTHORIZATION", NULL};

struct http_stage {
    const char *url;
    int64_t timeout_ms;
    bool forward_headers;
    bool sign;
    bool get;                        /* METHOD = GET: back-fill requests */
    const char *authorization;       /* AUTHORIZATION, or NULL */
    struct sig_key key;
    CURL *curl;                      /* reused: keeps connections alive */
};

/* ---- set-up ---- */

/* METHOD and AUTHORIZATION. */
static int http_method(struct pepsi_worker *w, struct http_stage *h, char *err, size_t errlen)
{
    const struct stage_conf *s = pepsi_worker_section(w);
    const char *method = conf_stage_own(s, "METHOD"), *auth = conf_stage_own(s, "AUTHORIZATION");
    if (method && *method && strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) {
        snprintf(err, errlen, "key \"METHOD\": expected POST or GET, not \"%s\"", method);
        return -1;
    }
    h->get = method && strcmp(method, "GET") == 0;
    h->authorization = auth && *auth ? auth : NULL;
    if (h->authorization && (!h->get || strpbrk(h->authorization, "\r\n"))) {
        snprintf(err, errlen, "key \"AUTHORIZATION\": one line, for METHOD = GET");
        return -1;
    }
    return 0;
}

static int http_options(struct pepsi_worker *w, struct http_stage *h, char *err, size_t errlen)
{
    const struct stage_conf *s = pepsi_worker_section(w);
    const char *url = conf_stage_own(s, "URL"), *timeout = conf_stage_own(s, "TIMEOUT");
    const char *fwd = conf_stage_own(s, "FORWARD_HEADERS"), *secret = conf_stage_own(s, "SIGNING_SECRET");
    char kerr[128];
    if (url == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
        snprintf(err, errlen, "key \"URL\" is required by pepsi-stage-http: an http:// or https:// URL");
        return -1;
    }
    h->url = url;
    h->timeout_ms = 30000;
    if (timeout && *timeout && (conf_parse_duration(timeout, &h->timeout_ms) != 0 || h->timeout_ms < 1)) {
        snprintf(err, errlen, "key \"TIMEOUT\": expected a duration such as 10s, not \"%s\"", timeout);
        return -1;
    }
    h->forward_headers = true;
    if (fwd && *fwd && conf_parse_bool(fwd, &h->forward_headers) != 0) {
        snprintf(err, errlen, "key \"FORWARD_HEADERS\": expected yes or no, not \"%s\"", fwd);
        return -1;
    }
    if (http_method(w, h, err, errlen) != 0)
        return -1;
    if (secret && *secret) {
        if (h->get) {
            snprintf(err, errlen, "key \"SIGNING_SECRET\": only a POST is signed, not METHOD = GET");
            return -1;
        }
        if (webhook_key_from_secret(true, secret, &h->key, kerr, sizeof kerr) != 0) {
            snprintf(err, errlen, "key \"SIGNING_SECRET\": %s", kerr);
            return -1;
        }
        h->sign = true;
    }
    return 0;
}

static void http_teardown(struct pepsi_worker *w)
{
    struct http_stage *h = pepsi_worker_data(w);
    if (h == NULL)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    sig_key_free(&h->key);
    free(h);
    pepsi_worker_set_data(w, NULL);
    curl_global_cleanup();
}

static int http_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    struct http_stage *h = xcalloc(1, sizeof *h);
    pepsi_worker_set_data(w, h);
    if (http_options(w, h, err, errlen) != 0) {
        sig_key_free(&h->key);
        free(h);
        pepsi_worker_set_data(w, NULL);
        return -1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || (h->curl = curl_easy_init()) == NULL) {
        snprintf(err, errlen, "cannot initialise libcurl");
        http_teardown(w);
        return -1;
    }
    return 0;
}

/* ---- the request ---- */

/* Whether a header of the block is sent on: not a transport header, and
 * not a webhook-* header we are about to replace. */
static bool forwarded(const struct http_stage *h, const char *name, size_t len)
{
    char buf[128];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, name, len);
    buf[len] = '\0';
    if (!webhook_keeps_header(buf))
        return false;
    return !(h->sign && strncasecmp(buf, "webhook-", 8) == 0);
}

/* The header block's lines as a curl list (NULL when there are none). */
static struct curl_slist *block_headers(const struct http_stage *h, const char *block, bool *has_type)
{
    struct curl_slist *list = NULL;
    if (block == NULL)
        return NULL;
    for (const char *p = block; *p;) {
        size_t len = strcspn(p, "\r\n");
        const char *colon = memchr(p, ':', len);
        if (colon && forwarded(h, p, (size_t)(colon - p))) {
            char *line = xasprintf("%.*s", (int)len, p);
            if (strncasecmp(line, "content-type:", 13) == 0)
                *has_type = true;
            struct curl_slist *n = curl_slist_append(list, line);
            free(line);
            if (n)
                list = n;
        }
        p += len;
        while (*p == '\r' || *p == '\n')
            p++;
    }
    return list;
}

static struct curl_slist *add(struct curl_slist *list, const char *line)
{
    struct curl_slist *n = curl_slist_append(list, line);
    return n ? n : list;
}

/* The Standard Webhooks headers of a re-signed request. */
static struct curl_slist *sign_headers(const struct http_stage *h, struct curl_slist *list,
                                       const struct pepsi_message *m)
{
    char id[160], sig[64], line[256];
    const char *ext = json_string_value(json_object_get(m->state, "external_id"));
    int64_t ts = (int64_t)time(NULL);
    if (ext && strlen(ext) < 128)
        snprintf(id, sizeof id, "%s", ext);
    else
        snprintf(id, sizeof id, "msg_%lld", (long long)m->id);
    if (sig_standard_sign(&h->key, id, ts, m->body, m->body ? m->body_len : 0, sig, sizeof sig) != 0)
        return list;
    snprintf(line, sizeof line, "webhook-id: %s", id);
    list = add(list, line);
    snprintf(line, sizeof line, "webhook-timestamp: %lld", (long long)ts);
    list = add(list, line);
    snprintf(line, sizeof line, "webhook-signature: %s", sig);
    return add(list, line);
}

static struct curl_slist *request_headers(const struct http_stage *h, const struct pepsi_message *m)
{
    bool has_type = false;
    struct curl_slist *list = h->forward_headers ? block_headers(h, m->headers, &has_type) : NULL;
    if (!has_type)
        list = add(list, "Content-Type: application/octet-stream");
    list = add(list, "Expect:"); /* no 100-continue round trip */
    if (h->sign)
        list = sign_headers(h, list, m);
    return list;
}

struct answer {
    char text[ANSWER_KEEP + 1];
    size_t len;
};

static size_t answer_cb(char *data, size_t size, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t total = size * n, room = ANSWER_KEEP - a->len;
    size_t take = total < room ? total : room;
    memcpy(a->text + a->len, data, take);
    a->len += take;
    a->text[a->len] = '\0';
    return total;
}

/* The start of the answer on one line, for a failure reason. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\r' || *s == '\n' || *s == '\t')
            *s = ' ';
}

static CURLcode perform(struct http_stage *h, const struct pepsi_message *m, struct curl_slist *hdrs,
                        struct answer *a, long *status)
{
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, m->body ? (const char *)m->body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(m->body ? m->body_len : 0));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pepsi-stage-http");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return rc;
}

static void http_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    struct http_stage *h = pepsi_worker_data(w);
    struct answer a = {{0}, 0};
    long status;
    if (h->get) {
        struct http_get_req req = {h->curl, h->url, h->timeout_ms, h->authorization};
        http_get_run(w, &req, m, out);
        return;
    }
    struct curl_slist *hdrs = request_headers(h, m);
    CURLcode rc = perform(h, m, hdrs, &a, &status);
    curl_slist_free_all(hdrs);
    one_line(a.text);
    if (rc != CURLE_OK) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: POST %s: %s", pepsi_worker_stage(w), h->url, curl_easy_strerror(rc));
    } else if (status >= 200 && status < 300) {
        out->kind = PEPSI_ADVANCE;
    } else if (status == 408 || status == 429 || status >= 500) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: POST %s: HTTP %ld %s", pepsi_worker_stage(w), h->url, status, a.text);
    } else {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: POST %s: HTTP %ld %s", pepsi_worker_stage(w), h->url, status, a.text);
    }
    log_debug(pepsi_worker_stage(w), "message %lld: POST %s: %s, HTTP %ld", (long long)m->id, h->url,
              curl_easy_strerror(rc), status);
}

const struct pepsi_stage_def stage_http = {
    .program = "http",
    .loads_body = true,
    .own_keys = http_keys,
    .setup = http_setup,
    .run = http_run,
    .teardown = http_teardown,
};
