/* ingress/metrics.h — the ingress's counters, shared by its threads
 * (atomics, no locks), and their Prometheus text rendering for
 * GET /metrics. Every rejection is counted by reason.
 * Owns: the counters. Uses: lib/util.h. */
#ifndef PEPSI_INGRESS_METRICS_H
#define PEPSI_INGRESS_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Why a request was not stored. */
enum reject_reason {
    RJ_METHOD,              /* 405 method_not_allowed */
    RJ_NOT_FOUND,           /* 404 not_found: not /hooks/<provider>, /healthz or /metrics */
    RJ_UNKNOWN_PROVIDER,    /* 404 unknown_provider (or disabled) */
    RJ_BODY_TOO_LARGE,      /* 413 body_too_large */
    RJ_MISSING_SIGNATURE,   /* 401 */
    RJ_BAD_SIGNATURE,       /* 401 */
    RJ_MISSING_TIMESTAMP,   /* 400 */
    RJ_BAD_TIMESTAMP,       /* 400 */
    RJ_STALE_TIMESTAMP,     /* 400 */
    RJ_MISSING_ID,          /* 400 */
    RJ_BAD_ID,              /* 400: too long, not UTF-8 */
    RJ_DATABASE,            /* 503 database_unavailable: not stored, the provider retries */
    RJ_SHUTTING_DOWN,       /* 503 shutting_down */
    RJ_TIMEOUT,             /* client_timeout: a slow or idle client was cut off */
    RJ_CLIENT_ERROR,        /* client_error: malformed HTTP, connection dropped mid-request */
    RJ_CONFLICTING_HEADERS, /* 400: webhook-X and its alias svix-X both present, with different values */
    RJ_CONNECTION_LIMIT,    /* connection_limit: closed at accept, MAX_CONNECTIONS(_PER_IP) reached */
    RJ_COUNT
};

#define BURST_BUCKETS 11    /* 1, 2, 4 ... 512, +Inf */
#define LATENCY_BUCKETS 14  /* 0.25 ms ... 2 s, +Inf */

struct histogram {
    atomic_uint_fast64_t buckets[16]; /* cumulative counts are computed when rendered */
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_us;      /* or the sum of values, for burst sizes */
};

struct metrics {
    atomic_uint_fast64_t accepted;            /* new events stored */
    atomic_uint_fast64_t duplicates;          /* known events: refreshed, processed, busy, repeated */
    atomic_uint_fast64_t rejected[RJ_COUNT];
    atomic_uint_fast64_t bursts;              /* statements sent */
    atomic_uint_fast64_t burst_errors;        /* bursts that failed */
    atomic_uint_fast64_t provider_reloads;
    atomic_uint_fast64_t queued;              /* events waiting for a writer now */
    atomic_int database_up;                   /* 1 when a writer is connected */
    atomic_uint_fast64_t providers;
    struct histogram burst_size;              /* events per burst */
    struct histogram commit_latency;          /* seconds per burst statement (includes the commit) */
    struct histogram request_latency;         /* seconds from a complete request to its answer */
};

/* The reason's name in metrics and logs. */
const char *metrics_reason_name(enum reject_reason r);

/* Counts one rejection. */
void metrics_reject(struct metrics *m, enum reject_reason r);

/* Records a burst of n events whose statement took usec. */
void metrics_burst(struct metrics *m, size_t n, uint64_t usec);

/* Records the time a stored request waited for its answer. */
void metrics_request(struct metrics *m, uint64_t usec);

/* Renders everything in the Prometheus text format (version 0.0.4) into a
 * new malloc'd string. */
char *metrics_render(struct metrics *m);

#endif
