/* ingress/metrics.c — see metrics.h. */
#include "ingress/metrics.h"

#include "lib/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_names[RJ_COUNT] = {
    [RJ_METHOD] = "method_not_allowed",
    [RJ_NOT_FOUND] = "not_found",
    [RJ_UNKNOWN_PROVIDER] = "unknown_provider",
    [RJ_BODY_TOO_LARGE] = "body_too_large",
    [RJ_MISSING_SIGNATURE] = "missing_signature",
    [RJ_BAD_SIGNATURE] = "bad_signature",
    [RJ_MISSING_TIMESTAMP] = "missing_timestamp",
    [RJ_BAD_TIMESTAMP] = "bad_timestamp",
    [RJ_STALE_TIMESTAMP] = "stale_timestamp",
    [RJ_MISSING_ID] = "missing_id",
    [RJ_BAD_ID] = "bad_id",
    [RJ_DATABASE] = "database_unavailable",
    [RJ_SHUTTING_DOWN] = "shutting_down",
    [RJ_TIMEOUT] = "client_timeout",
    [RJ_CLIENT_ERROR] = "client_error",
    [RJ_CONFLICTING_HEADERS] = "conflicting_headers",
    [RJ_CONNECTION_LIMIT] = "connection_limit",
};

/* Upper bounds of the latency buckets, in microseconds. */
static const uint64_t latency_le_us[LATENCY_BUCKETS - 1] = {250,    500,    1000,   2500,    5000,    10000, 25000,
                                                            50000,  100000, 250000, 500000, 1000000, 2000000};

const char *metrics_reason_name(enum reject_reason r)
{
    return (unsigned)r < RJ_COUNT ? reason_names[r] : "unknown";
}

void metrics_reject(struct metrics *m, enum reject_reason r)
{
    if ((unsigned)r < RJ_COUNT)
        atomic_fetch_add(&m->rejected[r], 1);
}

static void observe_latency(struct histogram *h, uint64_t usec)
{
    size_t b = 0;
    while (b < LATENCY_BUCKETS - 1 && usec > latency_le_us[b])
        b++;
    atomic_fetch_add(&h->buckets[b], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_us, usec);
}

void metrics_burst(struct metrics *m, size_t n, uint64_t usec)
{
    size_t b = 0;
    while (b < BURST_BUCKETS - 1 && n > ((size_t)1 << b))
        b++;
    atomic_fetch_add(&m->burst_size.buckets[b], 1);
    atomic_fetch_add(&m->burst_size.count, 1);
    atomic_fetch_add(&m->burst_size.sum_us, n);
    observe_latency(&m->commit_latency, usec);
}

void metrics_request(struct metrics *m, uint64_t usec)
{
    observe_latency(&m->request_latency, usec);
}

/* ---- rendering ---- */

struct buf {
    char *s;
    size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)n;
        b->s = xrealloc(b->s, b->cap);
    }
}

static uint64_t load(atomic_uint_fast64_t *v)
{
    return (uint64_t)atomic_load(v);
}

static void counter(struct buf *b, const char *name, const char *help, uint64_t v)
{
    put(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static void gauge(struct buf *b, const char *name, const char *help, long long v)
{
    put(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, v);
}

static void render_latency(struct buf *b, const char *name, const char *help, struct histogram *h)
{
    uint64_t cum = 0;
    put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (size_t i = 0; i < LATENCY_BUCKETS; i++) {
        cum += load(&h->buckets[i]);
        if (i < LATENCY_BUCKETS - 1)
            put(b, "%s_bucket{le=\"%g\"} %llu\n", name, (double)latency_le_us[i] / 1e6, (unsigned long long)cum);
        else
            put(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    put(b, "%s_sum %.6f\n%s_count %llu\n", name, (double)load(&h->sum_us) / 1e6, name,
        (unsigned long long)load(&h->count));
}

static void render_bursts(struct buf *b, struct histogram *h)
{
    const char *name = "pepsi_ingress_burst_size";
    uint64_t cum = 0;
    put(b, "# HELP %s Events written by one statement and one commit.\n# TYPE %s histogram\n", name, name);
    for (size_t i = 0; i < BURST_BUCKETS; i++) {
        cum += load(&h->buckets[i]);
        if (i < BURST_BUCKETS - 1)
            put(b, "%s_bucket{le=\"%zu\"} %llu\n", name, (size_t)1 << i, (unsigned long long)cum);
        else
            put(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    put(b, "%s_sum %llu\n%s_count %llu\n", name, (unsigned long long)load(&h->sum_us), name,
        (unsigned long long)load(&h->count));
}

char *metrics_render(struct metrics *m)
{
    struct buf b = {xmalloc(4096), 0, 4096};
    b.s[0] = '\0';
    counter(&b, "pepsi_ingress_accepted_total", "Verified events stored for the first time.", load(&m->accepted));
    counter(&b, "pepsi_ingress_duplicate_total", "Verified deliveries of events already stored (answered 200).",
            load(&m->duplicates));
    put(&b, "# HELP pepsi_ingress_rejected_total Requests not stored, by reason.\n"
            "# TYPE pepsi_ingress_rejected_total counter\n");
    for (int r = 0; r < RJ_COUNT; r++)
        put(&b, "pepsi_ingress_rejected_total{reason=\"%s\"} %llu\n", reason_names[r],
            (unsigned long long)load(&m->rejected[r]));
    counter(&b, "pepsi_ingress_bursts_total", "Burst statements sent to the database.", load(&m->bursts));
    counter(&b, "pepsi_ingress_burst_errors_total", "Bursts the database did not store.", load(&m->burst_errors));
    counter(&b, "pepsi_ingress_provider_reloads_total", "Provider sets loaded from the database.",
            load(&m->provider_reloads));
    gauge(&b, "pepsi_ingress_providers", "Providers accepted now.", (long long)load(&m->providers));
    gauge(&b, "pepsi_ingress_queued", "Verified events waiting for a writer.", (long long)load(&m->queued));
    gauge(&b, "pepsi_ingress_database_up", "1 when the writers reach the database.", atomic_load(&m->database_up));
    render_bursts(&b, &m->burst_size);
    render_latency(&b, "pepsi_ingress_commit_seconds", "Time of one burst statement, commit included.",
                   &m->commit_latency);
    render_latency(&b, "pepsi_ingress_request_seconds", "Time from a complete verified request to its answer.",
                   &m->request_latency);
    return b.s;
}
