/* ingress/writer.h — the writers: verified events go into one queue;
 * each writer thread takes everything queued (up to BURST_MAX), stores it
 * with one call of pepsi.webhook_events_ingest() — one statement, one
 * commit, at most one NOTIFY workqueue for the whole burst (D-32) — on
 * its own connection with synchronous_commit on (D-78), and only then
 * hands each event its answer. The burst's counters (stored, duplicate)
 * go into pepsi.ingress_stats in the same statement, so they commit with
 * the events or not at all (issue 12). While one burst commits, the next one
 * gathers, so bursts grow with the load by themselves; several writers
 * overlap their commits (PostgreSQL folds concurrent WAL flushes too).
 * Owns: the queue of verified events and the writer threads with their
 * connections. Uses: ingress/metrics.h, lib/ (conn, pgerr, log, util),
 * libpq. */
#ifndef PEPSI_INGRESS_WRITER_H
#define PEPSI_INGRESS_WRITER_H

#include "ingress/metrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One verified event on its way to the database; owned by its request. */
struct ingress_item {
    struct ingress_item *next;
    char *event_json;                  /* its object for webhook_events_ingest */
    const unsigned char *payload;
    size_t payload_len;
    /* Set by the writer before done() is called: */
    int status;                        /* 200, or 503/500 when not stored */
    char outcome[16];                  /* new, refreshed, processed, busy, repeated; "" on failure */
    /* Called by the writer once the answer is known. The item and its
     * payload must stay valid until then; the writer does not touch the
     * item after the call. */
    void (*done)(struct ingress_item *it);
    void *owner;
};

struct writer_pool;

struct writer_settings {
    const char *conninfo;
    int64_t connect_timeout_ms;
    int64_t commit_timeout_ms;         /* statement_timeout of a burst */
    int writers;
    int burst_max;
};

/* Connects every writer (fails when the database is not there: the
 * ingress does not start without it) and starts their threads. Returns the
 * pool, or NULL (logged). */
struct writer_pool *writer_pool_start(const struct writer_settings *s, struct metrics *m);

/* Queues a verified event. suspend(arg) is called with the queue locked,
 * before any writer can see the item, so that the request is suspended
 * before it can be answered. Returns 0, or -1 when the pool is closing (the
 * item is not queued and suspend is not called: answer 503). */
int writer_submit(struct writer_pool *p, struct ingress_item *it, void (*suspend)(void *arg), void *arg);

/* Refuses new items from now on; the queued ones are still written. */
void writer_pool_close(struct writer_pool *p);

/* Closes the pool and waits until every queued item is answered and the
 * threads have exited. writer_submit keeps answering -1 (503) until the
 * pool is freed, so the HTTP threads may still call it. */
void writer_pool_stop(struct writer_pool *p);

/* Frees a stopped pool; call once no HTTP thread can reach it. NULL is fine. */
void writer_pool_free(struct writer_pool *p);

/* Names the pool in pepsi.ingress_stats: each writer counts its bursts
 * under "<instance>/writer-<n>" (from its next burst on; "unnamed" until
 * this is called). Truncated at 279 bytes. */
void writer_pool_set_instance(struct writer_pool *p, const char *instance);

/* Whether the last attempt of any writer reached the database. */
bool writer_pool_database_up(struct writer_pool *p);

#endif
