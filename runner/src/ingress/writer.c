/* ingress/writer.c — see writer.h. */
#include "ingress/writer.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "ingress"
#define RECONNECT_MS 1000      /* at most one connection attempt per writer per second */
#define RETRIES 3              /* a burst that deadlocked or hit a serialization failure */

/* One statement, so one transaction: the burst, and its counters added to
 * pepsi.ingress_stats under this writer's instance name ($3). Counters
 * that commit with the events they count are never lost by a crash of the
 * ingress and never count an event that was not stored (issue 12). Each
 * writer has counter rows of its own, so two writers never wait for each
 * other's row lock (their commits overlap). */
#define INGEST_SQL                                                                                        \
    "with r as materialized (select ord, webhook_event_id, outcome, workqueue_id"                         \
    " from pepsi.webhook_events_ingest($1::jsonb, $2::bytea)),"                                           \
    " c as (select pepsi.ingress_stats_flush($3, jsonb_strip_nulls(jsonb_build_object("                    \
    "'stored', nullif(count(*) filter (where r.outcome = 'new'), 0),"                                     \
    " 'duplicate', nullif(count(*) filter (where r.outcome <> 'new'), 0)))) from r)"                      \
    " select r.ord, r.webhook_event_id, r.outcome, r.workqueue_id from r, c"
#define INSTANCE_MAX 280

struct writer {
    struct writer_pool *pool;
    int index;
    pthread_t thread;
    bool started;
    PGconn *conn;
    uint64_t next_connect_ms;
    char instance[INSTANCE_MAX + 16];  /* "<pool instance>/writer-<index>", set per burst */
};

struct writer_pool {
    struct writer_settings s;
    struct metrics *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct ingress_item *head, *tail;
    size_t queued;
    bool closing;
    char instance[INSTANCE_MAX];       /* writer_pool_set_instance; under mu */
    struct writer *w;
};

/* ---- the connection ---- */

static void writer_disconnect(struct writer *w)
{
    if (w->conn)
        PQfinish(w->conn);
    w->conn = NULL;
}

/* Connects, sets the session up and prepares the statement; 0 or -1. */
static int writer_connect(struct writer *w)
{
    char app[48], timeout[64];
    writer_disconnect(w);
    w->next_connect_ms = now_ms() + RECONNECT_MS;
    snprintf(app, sizeof app, "pepsi-ingress-writer-%d", w->index);
    w->conn = conn_open(w->pool->s.conninfo, w->pool->s.connect_timeout_ms, app, COMPONENT, NULL);
    if (w->conn == NULL)
        return -1;
    snprintf(timeout, sizeof timeout, "set statement_timeout = %lld", (long long)w->pool->s.commit_timeout_ms);
    /* D-78: an event answered 2xx is an event on disk, whatever the
     * database's or the role's default says. */
    if (conn_exec(w->conn, "set synchronous_commit = on", COMPONENT) != 0 ||
        conn_exec(w->conn, timeout, COMPONENT) != 0)
        goto fail;
    PGresult *r = PQprepare(w->conn, "ingest", INGEST_SQL, 3, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        log_error(COMPONENT, "cannot prepare the ingest statement: %s", pgerr_message(w->conn, r));
        PQclear(r);
        goto fail;
    }
    PQclear(r);
    return 0;
fail:
    writer_disconnect(w);
    return -1;
}

/* A usable connection, reconnecting at most once a second. */
static bool writer_ready(struct writer *w)
{
    if (w->conn && PQstatus(w->conn) == CONNECTION_OK)
        return true;
    if (now_ms() < w->next_connect_ms)
        return false;
    if (writer_connect(w) != 0)
        return false;
    log_notice(COMPONENT, "writer %d reconnected to the database", w->index);
    return true;
}

/* ---- one burst ---- */

struct burst {
    struct ingress_item **items;
    size_t n;
};

/* The two parameters: a JSON array of the events, and their payloads one
 * after the other (sent in binary: no escaping of raw bytes). */
static void burst_params(const struct burst *b, char **events, char **payloads, size_t *plen)
{
    size_t jlen = 2, total = 0;
    for (size_t i = 0; i < b->n; i++) {
        jlen += strlen(b->items[i]->event_json) + 1;
        total += b->items[i]->payload_len;
    }
    char *j = xmalloc(jlen + 1), *p = xmalloc(total ? total : 1);
    size_t jo = 0, po = 0;
    j[jo++] = '[';
    for (size_t i = 0; i < b->n; i++) {
        size_t l = strlen(b->items[i]->event_json);
        if (i)
            j[jo++] = ',';
        memcpy(j + jo, b->items[i]->event_json, l);
        jo += l;
        if (b->items[i]->payload_len)
            memcpy(p + po, b->items[i]->payload, b->items[i]->payload_len);
        po += b->items[i]->payload_len;
    }
    j[jo++] = ']';
    j[jo] = '\0';
    *events = j;
    *payloads = p;
    *plen = total;
}

static PGresult *burst_exec(struct writer *w, const struct burst *b)
{
    char *events, *payloads;
    size_t plen;
    burst_params(b, &events, &payloads, &plen);
    const char *values[] = {events, payloads, w->instance};
    int lengths[] = {0, (int)plen, 0};
    int formats[] = {0, 1, 0};
    PGresult *r = PQexecPrepared(w->conn, "ingest", 3, values, lengths, formats, 0);
    free(events);
    free(payloads);
    return r;
}

/* Reads the outcome of every event; 0, or -1 when the result is not what
 * the function promises (then nothing is answered 2xx). */
static int burst_outcomes(struct writer *w, const struct burst *b, const PGresult *r)
{
    if (PQntuples(r) != (int)b->n || PQnfields(r) != 4) {
        log_error(COMPONENT, "webhook_events_ingest returned %d rows for %zu events", PQntuples(r), b->n);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        long ord = atol(PQgetvalue(r, i, 0));
        if (ord < 1 || (size_t)ord > b->n)
            return -1;
        struct ingress_item *it = b->items[ord - 1];
        it->status = 200;
        snprintf(it->outcome, sizeof it->outcome, "%s", PQgetvalue(r, i, 2));
        if (strcmp(it->outcome, "new") == 0)
            atomic_fetch_add(&w->pool->m->accepted, 1);
        else
            atomic_fetch_add(&w->pool->m->duplicates, 1);
    }
    return 0;
}

static void burst_fail(const struct burst *b, int status)
{
    for (size_t i = 0; i < b->n; i++) {
        b->items[i]->status = status;
        b->items[i]->outcome[0] = '\0';
    }
}

enum burst_verdict {
    BURST_STORED,
    BURST_REFUSED,       /* the database refused the content: 500 */
    BURST_UNAVAILABLE,   /* no connection, overload, timeout: 503, the provider retries */
};

/* Writes a burst; every item gets a status. */
static enum burst_verdict burst_write(struct writer *w, const struct burst *b)
{
    enum burst_verdict v = BURST_UNAVAILABLE;
    for (int attempt = 0; attempt <= RETRIES; attempt++) {
        if (!writer_ready(w))
            break;
        uint64_t t0 = now_us();
        PGresult *r = burst_exec(w, b);
        atomic_fetch_add(&w->pool->m->bursts, 1);
        if (PQresultStatus(r) == PGRES_TUPLES_OK) {
            metrics_burst(w->pool->m, b->n, now_us() - t0);
            int rc = burst_outcomes(w, b, r);
            PQclear(r);
            if (rc == 0)
                return BURST_STORED;
            v = BURST_REFUSED;
            break;
        }
        enum pgerr_kind kind = pgerr_classify(w->conn, r);
        bool timeout = strcmp(pgerr_sqlstate(r), "57014") == 0; /* statement_timeout */
        atomic_fetch_add(&w->pool->m->burst_errors, 1);
        log_warning(COMPONENT, "a burst of %zu event(s) was not stored (attempt %d): %s (sqlstate %s)", b->n,
                    attempt + 1, pgerr_message(w->conn, r), pgerr_sqlstate(r));
        PQclear(r);
        if (kind == PGERR_CONNECTION) {
            /* The commit may or may not have happened: writing the burst
             * again is harmless (the upsert makes it a redelivery). */
            writer_disconnect(w);
            w->next_connect_ms = 0;
            if (attempt > 0)
                break;
            continue;
        }
        v = kind == PGERR_OTHER && !timeout ? BURST_REFUSED : BURST_UNAVAILABLE;
        if (kind != PGERR_RETRY)
            break;
    }
    burst_fail(b, v == BURST_REFUSED ? 500 : 503);
    return v;
}

/* Writes the items; a burst refused for its content (not for the
 * database's state) is written again one event at a time, so that one bad
 * event does not cost the others their answer. */
static void write_items(struct writer *w, struct ingress_item **items, size_t n)
{
    struct burst b = {items, n};
    enum burst_verdict v = burst_write(w, &b);
    atomic_store(&w->pool->m->database_up, w->conn != NULL);
    if (v == BURST_REFUSED && n > 1) {
        for (size_t i = 0; i < n; i++) {
            struct burst one = {&items[i], 1};
            (void)burst_write(w, &one);
        }
    }
}

/* ---- the queue ---- */

int writer_submit(struct writer_pool *p, struct ingress_item *it, void (*suspend)(void *arg), void *arg)
{
    pthread_mutex_lock(&p->mu);
    if (p->closing) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    suspend(arg);
    it->next = NULL;
    if (p->tail)
        p->tail->next = it;
    else
        p->head = it;
    p->tail = it;
    p->queued++;
    atomic_store(&p->m->queued, p->queued);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* Takes up to burst_max items, waiting for one; 0 when closing and empty.
 * Also refreshes the writer's instance name for the burst's counters. */
static size_t take_burst(struct writer *w, struct ingress_item **items)
{
    struct writer_pool *p = w->pool;
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    while (p->head == NULL && !p->closing)
        pthread_cond_wait(&p->cv, &p->mu);
    snprintf(w->instance, sizeof w->instance, "%s/writer-%d", p->instance, w->index);
    while (p->head && n < (size_t)p->s.burst_max) {
        items[n++] = p->head;
        p->head = p->head->next;
    }
    if (p->head == NULL)
        p->tail = NULL;
    p->queued -= n;
    atomic_store(&p->m->queued, p->queued);
    pthread_mutex_unlock(&p->mu);
    return n;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct ingress_item **items = xcalloc((size_t)w->pool->s.burst_max, sizeof *items);
    size_t n;
    while ((n = take_burst(w, items)) > 0) {
        write_items(w, items, n);
        for (size_t i = 0; i < n; i++)
            items[i]->done(items[i]); /* the request may be gone after this */
    }
    free(items);
    writer_disconnect(w);
    return NULL;
}

/* ---- the pool ---- */

struct writer_pool *writer_pool_start(const struct writer_settings *s, struct metrics *m)
{
    struct writer_pool *p = xcalloc(1, sizeof *p);
    p->s = *s;
    p->m = m;
    snprintf(p->instance, sizeof p->instance, "unnamed");
    p->w = xcalloc((size_t)s->writers, sizeof *p->w);
    if (pthread_mutex_init(&p->mu, NULL) != 0 || pthread_cond_init(&p->cv, NULL) != 0) {
        log_error(COMPONENT, "cannot create the writers' queue");
        free(p->w);
        free(p);
        return NULL;
    }
    for (int i = 0; i < s->writers; i++) {
        p->w[i].pool = p;
        p->w[i].index = i;
        if (writer_connect(&p->w[i]) != 0) {
            writer_pool_free(p);
            return NULL;
        }
    }
    for (int i = 0; i < s->writers; i++) {
        if (pthread_create(&p->w[i].thread, NULL, writer_main, &p->w[i]) != 0) {
            log_error(COMPONENT, "cannot start writer thread %d", i);
            writer_pool_free(p);
            return NULL;
        }
        p->w[i].started = true;
    }
    atomic_store(&m->database_up, 1);
    return p;
}

void writer_pool_close(struct writer_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void writer_pool_stop(struct writer_pool *p)
{
    if (p == NULL)
        return;
    writer_pool_close(p);
    for (int i = 0; i < p->s.writers; i++) {
        if (p->w[i].started)
            pthread_join(p->w[i].thread, NULL);
        p->w[i].started = false;
        writer_disconnect(&p->w[i]);
    }
}

void writer_pool_free(struct writer_pool *p)
{
    if (p == NULL)
        return;
    writer_pool_stop(p);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->w);
    free(p);
}

void writer_pool_set_instance(struct writer_pool *p, const char *instance)
{
    pthread_mutex_lock(&p->mu);
    snprintf(p->instance, sizeof p->instance, "%s", instance);
    pthread_mutex_unlock(&p->mu);
}

bool writer_pool_database_up(struct writer_pool *p)
{
    return atomic_load(&p->m->database_up) != 0;
}
