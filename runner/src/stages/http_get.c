/* stages/http_get.c — see http_get.h.
 *
 * Storing the answer is its own call, before the SDK commits the
 * message's outcome: webhook_backfill_store() checks that the message is a
 * back-fill request running at this stage, and storing an answer twice
 * (the worker dies between the two calls and the request runs again)
 * changes nothing: the upsert keys on (provider, external_id) and a
 * tombstone is written once. The stage uses the SDK's connection for it
 * (sdk_internal.h), so a worker still holds one connection. */
#include "stages/http_get.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"
#include "sdk/sdk_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_SQL "select pepsi.webhook_backfill_store($1::bigint, $2, $3::int, $4::bytea, $5::jsonb)"

/* ---- the URL ---- */

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

/* Appends v percent-encoded to out (room already made). */
static size_t encode_into(char *out, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (unreserved(*p)) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    return n;
}

char *http_get_url(const char *tmpl, const char *provider, const char *external_id)
{
    static const char k_id[] = "{external_id}", k_prov[] = "{provider}";
    size_t cap = strlen(tmpl) + 1, n = 0;
    for (const char *p = tmpl; *p; p++)
        if (strncmp(p, k_id, sizeof k_id - 1) == 0 || strncmp(p, k_prov, sizeof k_prov - 1) == 0)
            cap += 3 * (strlen(external_id) + strlen(provider));
    char *url = xmalloc(cap);
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, k_id, sizeof k_id - 1) == 0) {
            n += encode_into(url + n, external_id);
            p += sizeof k_id - 1;
        } else if (strncmp(p, k_prov, sizeof k_prov - 1) == 0) {
            n += encode_into(url + n, provider);
            p += sizeof k_prov - 1;
        } else {
            url[n++] = *p++;
        }
    }
    url[n] = '\0';
    return url;
}

/* ---- the request ---- */

struct answer {
    unsigned char *data;
    size_t len, cap;
    bool too_big;
};

static size_t answer_cb(char *data, size_t size, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t total = size * n;
    if (a->too_big || a->len + total > HTTP_GET_ANSWER_MAX) {
        a->too_big = true;
        return total; /* read on, keep nothing: the request fails as a whole */
    }
    if (a->len + total + 1 > a->cap) {
        a->cap = (a->len + total + 1) * 2;
        a->data = xrealloc(a->data, a->cap);
    }
    memcpy(a->data + a->len, data, total);
    a->len += total;
    a->data[a->len] = '\0';
    return total;
}

static CURLcode perform(const struct http_get_req *req, const char *url, struct answer *a, long *status,
                        char **content_type)
{
    CURL *c = req->curl;
    struct curl_slist *hdrs = NULL, *more;
    char *auth = req->authorization ? xasprintf("Authorization: %s", req->authorization) : NULL;
    if (auth && (more = curl_slist_append(hdrs, auth)) != NULL)
        hdrs = more;
    if ((more = curl_slist_append(hdrs, "Accept: application/json, */*")) != NULL)
        hdrs = more;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pepsi-stage-http");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    *content_type = NULL;
    if (rc == CURLE_OK) {
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
            *content_type = xstrdup(ct);
    }
    curl_slist_free_all(hdrs);
    free(auth);
    return rc;
}

/* ---- storing the answer ---- */

/* The headers stored with a found event: its content type and where it
 * came from. A JSON text, malloc'd, or NULL. */
static char *answer_headers(const char *url, const char *content_type)
{
    json_t *h = json_object();
    char *via = xasprintf("GET %s", url);
    int rc = h ? json_object_set_new(h, "x-pepsi-backfill", json_string(via)) : -1;
    if (rc == 0 && content_type)
        rc = json_object_set_new(h, "content-type", json_string(content_type));
    char *text = rc == 0 ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    free(via);
    return text;
}

/* Calls webhook_backfill_store and turns its answer into the outcome. */
static void store(struct pepsi_worker *w, const struct pepsi_message *m, const char *url, long status,
                  const struct answer *a, const char *content_type, struct pepsi_outcome *out)
{
    char id[32], st[16];
    char *headers = answer_headers(url, content_type);
    snprintf(id, sizeof id, "%lld", (long long)m->id);
    snprintf(st, sizeof st, "%ld", status);
    const char *values[] = {id, pepsi_worker_stage(w), st, a->data ? (const char *)a->data : "", headers ? headers : "{}"};
    int lengths[] = {0, 0, 0, (int)a->len, 0};
    int formats[] = {0, 0, 0, 1, 0};
    PGconn *c = w->core->conn;
    PGresult *res = c ? PQexecParams(c, STORE_SQL, 5, NULL, values, lengths, formats, 0) : NULL;
    free(headers);
    if (res && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        log_debug(pepsi_worker_stage(w), "message %lld: GET %s: HTTP %ld: %s", (long long)m->id, url, status,
                  PQgetvalue(res, 0, 0));
        out->kind = PEPSI_ADVANCE;
    } else if (res && strcmp(pgerr_sqlstate(res), "PX004") == 0) {
        out->kind = PEPSI_ADVANCE; /* gone already: the commit says it moved on */
    } else if (res && pgerr_classify(c, res) == PGERR_OTHER) {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: GET %s: HTTP %ld: the answer was refused: %s (sqlstate %s)",
                             pepsi_worker_stage(w), url, status, pgerr_message(c, res), pgerr_sqlstate(res));
    } else {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: GET %s: HTTP %ld: cannot store the answer: %s", pepsi_worker_stage(w), url,
                             status, c ? pgerr_message(c, res) : "no database connection");
    }
    PQclear(res);
}

/* The start of an answer on one line, for a failure reason. */
static void reason_text(const struct answer *a, char *buf, size_t cap)
{
    size_t n = a->len < cap - 1 ? a->len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        char ch = (char)a->data[i];
        buf[i] = (ch == '\r' || ch == '\n' || ch == '\t' || ch == '\0') ? ' ' : ch;
    }
    buf[n] = '\0';
}

void http_get_run(struct pepsi_worker *w, const struct http_get_req *req, const struct pepsi_message *m,
                  struct pepsi_outcome *out)
{
    const char *provider = json_string_value(json_object_get(m->state, "webhook_provider"));
    const char *ext = json_string_value(json_object_get(m->state, "external_id"));
    const char *stage = pepsi_worker_stage(w);
    if (provider == NULL || ext == NULL || !json_is_true(json_object_get(m->state, "backfill"))) {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: METHOD = GET runs back-fill requests; message %lld is not one", stage,
                             (long long)m->id);
        return;
    }
    char *url = http_get_url(req->url_template, provider, ext), *ctype = NULL, text[201];
    struct answer a = {NULL, 0, 0, false};
    long status;
    CURLcode rc = perform(req, url, &a, &status, &ctype);
    reason_text(&a, text, sizeof text);
    if (rc != CURLE_OK) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: GET %s: %s", stage, url, curl_easy_strerror(rc));
    } else if (a.too_big) {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: GET %s: HTTP %ld: an answer over %d bytes", stage, url, status,
                             HTTP_GET_ANSWER_MAX);
    } else if ((status >= 200 && status < 300) || status == 404 || status == 410) {
        store(w, m, url, status, &a, ctype, out);
    } else if (status == 408 || status == 429 || status >= 500) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: GET %s: HTTP %ld %s", stage, url, status, text);
    } else {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: GET %s: HTTP %ld %s", stage, url, status, text);
    }
    free(a.data);
    free(ctype);
    free(url);
}
