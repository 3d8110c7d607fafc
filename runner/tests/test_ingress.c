/* test_ingress.c — the ingress's pure parts: [pepsi-ingress] parsing with
 * file:line errors, id sources, the external id of a verified request
 * (header, JSON after verification, SHA-256), the event object sent to
 * webhook_events_ingest, and the Prometheus rendering. */
#include "lib/conf.h"
#include "ingress/event.h"
#include "ingress/iconf.h"
#include "ingress/metrics.h"
#include "ingress/provider.h"
#include "unit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- [pepsi-ingress] ---- */

static int load(const char *text, struct ingress_conf *ic, char *err, size_t errlen)
{
    struct conf c;
    char cerr[256];
    if (conf_load_string(text, "t.conf", &c, cerr, sizeof cerr) != 0) {
        snprintf(err, errlen, "conf: %s", cerr);
        return -2;
    }
    int rc = iconf_load(&c, ic, err, errlen);
    conf_free(&c);
    return rc;
}

/* Issue 11: every limit has a safe default, refuses 0 (a limit cannot be
 * turned off) and absurd values, with the file and line. */
static void test_iconf_limits(void)
{
    static const char *const limits[] = {"THREADS", "MAX_CONNECTIONS", "MAX_CONNECTIONS_PER_IP", "MAX_BODY",
                                         "MAX_HEADER", "CLIENT_TIMEOUT", "WRITERS", "BURST_MAX", "COMMIT_TIMEOUT"};
    static const char *const zeros[] = {"0", "0s", "0KiB", "00"};
    static const struct {
        const char *kv;
        const char *why;
    } absurd[] = {
        {"MAX_BODY = 1GiB", "a 1 GiB body cap"},
        {"MAX_BODY = 512", "a body cap under 1 KiB"},
        {"MAX_HEADER = 4MiB", "4 MiB of headers"},
        {"MAX_CONNECTIONS = 1000000", "a million connections"},
        {"MAX_CONNECTIONS_PER_IP = 1000000", "a million connections from one address"},
        {"CLIENT_TIMEOUT = 1h", "an hour of silence"},
        {"MAX_CONNECTIONS_PER_IP = -5", "a negative limit"},
    };
    struct ingress_conf ic;
    char text[256], err[512] = "", want[128];

    CHECK_INT(load("", &ic, err, sizeof err), 0, "issue 11: the defaults load");
    CHECK_INT(ic.max_connections, 1024, "issue 11: MAX_CONNECTIONS defaults to 1024");
    CHECK_INT(ic.max_connections_per_ip, 128, "issue 11: MAX_CONNECTIONS_PER_IP defaults to 128");
    CHECK_INT(ic.max_header, 16384, "issue 11: MAX_HEADER defaults to 16KiB");
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        for (size_t z = 0; z < sizeof zeros / sizeof zeros[0]; z++) {
            snprintf(text, sizeof text, "[pepsi-ingress]\nPORT = 8080\n%s = %s\n", limits[i], zeros[z]);
            snprintf(want, sizeof want, "t.conf:3: key \"%s\" in [pepsi-ingress]: 0 is not allowed", limits[i]);
            CHECK_INT(load(text, &ic, err, sizeof err), -1, "issue 11: %s = %s is refused", limits[i], zeros[z]);
            CHECK_CONTAINS(err, want, "issue 11: ... naming file, line and key: 0 is not allowed");
        }
    }
    CHECK_INT(load("[pepsi-ingress]\nRELOAD_INTERVAL = 0\nPORT = 0\n", &ic, err, sizeof err), 0,
              "RELOAD_INTERVAL 0 (off) and PORT 0 (any) are not limits: allowed");
    for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
        snprintf(text, sizeof text, "[pepsi-ingress]\n%s\n", absurd[i].kv);
        CHECK_INT(load(text, &ic, err, sizeof err), -1, "issue 11: %s is refused", absurd[i].why);
        CHECK_CONTAINS(err, "t.conf:2: key", "issue 11: ... at its line");
    }
    CHECK_INT(load("[pepsi-ingress]\nMAX_BODY = 64MiB\nMAX_CONNECTIONS_PER_IP = 1024\nCLIENT_TIMEOUT = 10min\n",
                   &ic, err, sizeof err),
              0, "issue 11: the largest sensible values are accepted");

    CHECK_INT(load("[pepsi-ingress]\nMAX_CONNECTIONS = 64\n", &ic, err, sizeof err), 0,
              "issue 11: MAX_CONNECTIONS lowered under the per-address default");
    CHECK_INT(ic.max_connections_per_ip, 64, "issue 11: ... the default MAX_CONNECTIONS_PER_IP follows it down");
    CHECK_INT(load("[pepsi-ingress]\nMAX_CONNECTIONS = 64\nMAX_CONNECTIONS_PER_IP = 100\n", &ic, err, sizeof err), -1,
              "issue 11: a MAX_CONNECTIONS_PER_IP set over MAX_CONNECTIONS is refused");
    CHECK_CONTAINS(err, "t.conf:3: key \"MAX_CONNECTIONS_PER_IP\" in [pepsi-ingress]: 100 is over MAX_CONNECTIONS (64)",
                   "issue 11: ... saying why, at its line");
    CHECK_INT(load("[pepsi-ingress]\nTHREADS = 8\nMAX_CONNECTIONS = 4\n", &ic, err, sizeof err), -1,
              "MAX_CONNECTIONS below THREADS is refused");
    CHECK_CONTAINS(err, "t.conf:3: key \"MAX_CONNECTIONS\"", "... at the line of MAX_CONNECTIONS");
    CHECK_INT(load("[pepsi-ingress]\nMAX_CONNECTIONS_PER_IP = 10\n", &ic, err, sizeof err), 0,
              "issue 11: MAX_CONNECTIONS_PER_IP set");
    CHECK_INT(ic.max_connections_per_ip, 10, "issue 11: ... to 10");
}

/* Every key is documented with its default in conf/pepsi.conf and named in
 * the README (run from the repository root). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long n;
    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        text = calloc(1, (size_t)n + 1);
        if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
            free(text);
            text = NULL;
        }
    }
    fclose(f);
    return text;
}

static void test_iconf_documented(void)
{
    char *conf = slurp("conf/pepsi.conf"), *readme = slurp("README.md");
    const char *name, *def;
    char want[128];
    CHECK(conf != NULL && readme != NULL, "conf/pepsi.conf and README.md are readable");
    for (size_t i = 0; conf && readme && iconf_key(i, &name, &def) == 0; i++) {
        snprintf(want, sizeof want, "# %s = %s\n", name, def);
        CHECK_CONTAINS(conf, want, "conf/pepsi.conf documents %s with its default", name);
        snprintf(want, sizeof want, "`%s`", name);
        CHECK_CONTAINS(readme, want, "the README names %s", name);
    }
    free(conf);
    free(readme);
}

static void test_iconf(void)
{
    struct ingress_conf ic;
    char err[512] = "";
    CHECK_INT(load("", &ic, err, sizeof err), 0, "iconf: an empty file gives the defaults");
    CHECK_STR(ic.listen, "127.0.0.1", "iconf: LISTEN defaults to 127.0.0.1");
    CHECK_INT(ic.port, 8080, "iconf: PORT defaults to 8080");
    CHECK_INT(ic.max_body, 1 << 20, "iconf: MAX_BODY defaults to 1MiB");
    CHECK_INT(ic.client_timeout_ms, 10000, "iconf: CLIENT_TIMEOUT defaults to 10s");
    CHECK_INT(ic.burst_max, 500, "iconf: BURST_MAX defaults to 500");
    CHECK_INT(ic.writers, 2, "iconf: WRITERS defaults to 2");
    CHECK_INT(ic.reload_interval_ms, 300000, "iconf: RELOAD_INTERVAL defaults to 5min");

    CHECK_INT(load("[pepsi-ingress]\nLISTEN = ::\nPORT = 0\nMAX_BODY = 64KiB\nCLIENT_TIMEOUT = 3s\n"
                   "WRITERS = 4\nBURST_MAX = 100\nRELOAD_INTERVAL = 0\nMAX_HEADER =\n",
                   &ic, err, sizeof err),
              0, "iconf: every key set");
    CHECK_STR(ic.listen, "::", "iconf: an IPv6 LISTEN");
    CHECK_INT(ic.port, 0, "iconf: PORT 0 (any free port)");
    CHECK_INT(ic.max_body, 65536, "iconf: 64KiB");
    CHECK_INT(ic.client_timeout_ms, 3000, "iconf: 3s");
    CHECK_INT(ic.reload_interval_ms, 0, "iconf: RELOAD_INTERVAL 0 turns the safety-net reload off");
    CHECK_INT(ic.max_header, 16384, "iconf: an empty value is the default");

    CHECK_INT(load("[pepsi-ingress]\nPORT = 8080\nMAX_BODY = lots\n", &ic, err, sizeof err), -1, "iconf: a bad size");
    CHECK_CONTAINS(err, "t.conf:3: key \"MAX_BODY\" in [pepsi-ingress]", "iconf: the error names file, line and key");
    CHECK_INT(load("[pepsi-ingress]\nPORT = 70000\n", &ic, err, sizeof err), -1, "iconf: a port out of range");
    CHECK_CONTAINS(err, "t.conf:2:", "iconf: ... at its line");
    CHECK_INT(load("[pepsi-ingress]\nLISTEN = localhost\n", &ic, err, sizeof err), -1, "iconf: LISTEN is an address");
    CHECK_INT(load("[pepsi-ingress]\nMAX_BODDY = 1\n", &ic, err, sizeof err), -1, "iconf: an unknown key");
    CHECK_CONTAINS(err, "unknown key", "iconf: says unknown key");
    CHECK_INT(load("[pepsi-ingress]\nMAX_HEADER = 100\n", &ic, err, sizeof err), -1, "iconf: MAX_HEADER below 4096");
    CHECK_INT(load("[pepsi-ingress]\nCLIENT_TIMEOUT = 10ms\n", &ic, err, sizeof err), -1, "iconf: CLIENT_TIMEOUT below 1s");

    test_iconf_limits();
    test_iconf_documented();

    int64_t v;
    CHECK(iconf_parse_size("2M", &v) == 0 && v == 2 << 20, "size: 2M");
    CHECK(iconf_parse_size("512", &v) == 0 && v == 512, "size: bare bytes");
    CHECK_INT(iconf_parse_size("1.5MiB", &v), -1, "size: no fractions");
    CHECK_INT(iconf_parse_size("-1", &v), -1, "size: no negatives");
}

/* ---- a fake request ---- */

struct fake {
    const char *const *kv; /* name, value, ..., NULL */
};

static const char *fake_get(void *ctx, const char *name)
{
    const struct fake *f = ctx;
    for (const char *const *p = f->kv; *p; p += 2)
        if (strcasecmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static void fake_each(void *ctx, event_header_visit visit, void *arg)
{
    const struct fake *f = ctx;
    for (const char *const *p = f->kv; *p; p += 2)
        visit(arg, p[0], p[1]);
}

static enum event_result id_of(const char *source, const struct fake *f, const char *body, char **id)
{
    struct provider p;
    memset(&p, 0, sizeof p);
    if (provider_parse_id_source(source, &p.id_kind, &p.id_arg) != 0)
        return EV_NO_ID;
    struct event_source src = {fake_get, fake_each, (void *)f};
    enum event_result r = event_external_id(&p, &src, (const unsigned char *)body, strlen(body), id);
    free(p.id_arg);
    return r;
}

static void test_ids(void)
{
    static const char *const kv[] = {"Host", "x", "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958",
                                     "Content-Type", "application/json", NULL};
    struct fake f = {kv};
    char *id = NULL;
    enum id_kind k;
    char *arg;

    CHECK(provider_parse_id_source("header:X-Event", &k, &arg) == 0 && k == ID_HEADER && strcmp(arg, "X-Event") == 0,
          "id source header:X-Event");
    free(arg);
    arg = NULL;
    CHECK(provider_parse_id_source("json:data.id", &k, &arg) == 0 && k == ID_JSON, "id source json:data.id");
    free(arg);
    arg = NULL;
    CHECK(provider_parse_id_source("sha256", &k, &arg) == 0 && k == ID_SHA256 && arg == NULL, "id source sha256");
    CHECK_INT(provider_parse_id_source("cookie:x", &k, &arg), -1, "an unknown id source is refused");

    CHECK_INT(id_of("header:x-github-delivery", &f, "{}", &id), EV_OK, "github: id from X-GitHub-Delivery");
    CHECK_STR(id, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "github: the delivery GUID");
    free(id);
    id = NULL;
    CHECK_INT(id_of("header:X-Shopify-Webhook-Id", &f, "{}", &id), EV_NO_ID, "a missing id header: missing_id");
    CHECK_INT(id_of("json:id", &f, "{\"id\":\"evt_123\",\"object\":\"event\"}", &id), EV_OK, "stripe: id from the JSON body");
    CHECK_STR(id, "evt_123", "stripe: evt_123");
    free(id);
    id = NULL;
    CHECK_INT(id_of("json:data.object.id", &f, "{\"data\":{\"object\":{\"id\":42}}}", &id), EV_OK, "a nested integer id");
    CHECK_STR(id, "42", "an integer id as text");
    free(id);
    id = NULL;
    CHECK_INT(id_of("json:event_id", &f, "token=x&team_id=T1", &id), EV_NO_ID, "a body that is not JSON: missing_id");
    CHECK_INT(id_of("json:id", &f, "{\"id\":\"\"}", &id), EV_NO_ID, "an empty id: missing_id");
    CHECK_INT(id_of("json:id", &f, "{\"id\":{\"a\":1}}", &id), EV_NO_ID, "an object is no id");
    CHECK_INT(id_of("sha256", &f, "abc", &id), EV_OK, "sha256 of the body");
    CHECK_STR(id, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(\"abc\")");
    free(id);
    id = NULL;

    char longid[1100];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    static const char *kv2[] = {"X-Id", NULL, "X-Bad", "\xff\xfe", NULL};
    kv2[1] = longid;
    struct fake f2 = {kv2};
    CHECK_INT(id_of("header:X-Id", &f2, "", &id), EV_BAD_ID, "an id over 1024 bytes: bad_id");
    CHECK_INT(id_of("header:X-Bad", &f2, "", &id), EV_BAD_ID, "an id that is not UTF-8: bad_id");
}

/* Issue 11: for standard-webhooks, the default id source header:webhook-id
 * reads Svix's svix-id when webhook-id is absent, as the signature check
 * does; other schemes know no alias. */
static void test_svix_id(void)
{
    static const char *const svix[] = {"svix-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "svix-timestamp", "1614265330",
                                       NULL};
    static const char *const both[] = {"svix-id", "msg_a", "Webhook-Id", "msg_b", NULL};
    struct fake f = {svix}, fb = {both};
    struct event_source src = {fake_get, fake_each, &f}, srcb = {fake_get, fake_each, &fb};
    struct provider p;
    char *id = NULL;
    memset(&p, 0, sizeof p);
    p.sig.scheme = SIG_STANDARD_WEBHOOKS;
    if (provider_parse_id_source("header:webhook-id", &p.id_kind, &p.id_arg) != 0)
        return;
    CHECK_INT(event_external_id(&p, &src, (const unsigned char *)"{}", 2, &id), EV_OK,
              "issue 11: standard-webhooks: the id comes from svix-id when webhook-id is absent");
    CHECK_STR(id, "msg_p5jXN8AQM9LWM0D4loKWxJek", "issue 11: ... Svix's message id");
    free(id);
    id = NULL;
    CHECK_INT(event_external_id(&p, &srcb, (const unsigned char *)"{}", 2, &id), EV_NO_ID,
              "issue 11: webhook-id and svix-id that disagree give no id");
    p.sig.scheme = SIG_GITHUB;
    CHECK_INT(event_external_id(&p, &src, (const unsigned char *)"{}", 2, &id), EV_NO_ID,
              "issue 11: another scheme's header:webhook-id has no svix- alias");
    free(p.id_arg);
}

static void test_event_json(void)
{
    static const char *const kv[] = {"Host", "example.org", "Content-Length", "2", "Content-Type", "application/json",
                                     "X-Multi", "a", "x-multi", "b", "Proxy-Authorization", "secret",
                                     "X-Bin", "\xff", NULL};
    struct fake f = {kv};
    struct event_source src = {fake_get, fake_each, &f};
    char *text = event_json("sw", "msg_1", &src, "2026-11-30T06:00:00.000001Z", 2);
    json_error_t err;
    json_t *j = text ? json_loads(text, 0, &err) : NULL;
    CHECK(json_is_object(j), "event_json is a JSON object");
    CHECK_STR(json_string_value(json_object_get(j, "provider")), "sw", "event_json: provider");
    CHECK_STR(json_string_value(json_object_get(j, "external_id")), "msg_1", "event_json: external_id");
    CHECK_INT(json_integer_value(json_object_get(j, "payload_length")), 2, "event_json: payload_length");
    json_t *h = json_object_get(j, "headers");
    CHECK_STR(json_string_value(json_object_get(h, "content-type")), "application/json", "headers: lower-case names");
    CHECK_STR(json_string_value(json_object_get(h, "x-multi")), "a, b", "headers: a repeated header is joined");
    CHECK(json_object_get(h, "host") == NULL && json_object_get(h, "content-length") == NULL &&
              json_object_get(h, "proxy-authorization") == NULL,
          "headers: transport and proxy headers are left out");
    CHECK(json_object_get(h, "x-bin") == NULL, "headers: a value that is not UTF-8 is left out");
    json_decref(j);
    free(text);
}

static void test_metrics(void)
{
    static struct metrics m; /* zeroed */
    metrics_reject(&m, RJ_BAD_SIGNATURE);
    metrics_reject(&m, RJ_BAD_SIGNATURE);
    metrics_burst(&m, 3, 1200);
    metrics_burst(&m, 300, 30000);
    atomic_fetch_add(&m.accepted, 5);
    char *text = metrics_render(&m);
    CHECK_CONTAINS(text, "pepsi_ingress_accepted_total 5\n", "metrics: accepted");
    CHECK_CONTAINS(text, "pepsi_ingress_rejected_total{reason=\"bad_signature\"} 2\n", "metrics: rejections by reason");
    CHECK_CONTAINS(text, "pepsi_ingress_rejected_total{reason=\"client_timeout\"} 0\n", "metrics: every reason is listed");
    CHECK_CONTAINS(text, "pepsi_ingress_burst_size_bucket{le=\"2\"} 0\n", "metrics: burst histogram, le=2");
    CHECK_CONTAINS(text, "pepsi_ingress_burst_size_bucket{le=\"4\"} 1\n", "metrics: burst histogram is cumulative (3 in le=4)");
    CHECK_CONTAINS(text, "pepsi_ingress_burst_size_bucket{le=\"+Inf\"} 2\n", "metrics: +Inf holds all");
    CHECK_CONTAINS(text, "pepsi_ingress_burst_size_sum 303\n", "metrics: burst sizes add up");
    CHECK_CONTAINS(text, "pepsi_ingress_commit_seconds_bucket{le=\"0.0025\"} 1\n", "metrics: commit latency histogram");
    CHECK_CONTAINS(text, "# TYPE pepsi_ingress_commit_seconds histogram\n", "metrics: TYPE lines");
    free(text);
}

int main(void)
{
    test_iconf();
    test_ids();
    test_svix_id();
    test_event_json();
    test_metrics();
    return unit_done();
}
