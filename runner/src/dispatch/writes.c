/* dispatch/writes.c — the dispatcher's queue writes other than the claim:
 * requeues, strikes, the pause of a status 74 (D-100..D-102) and the
 * throttle of a status 75 (D-94..D-98), each one SQL call on the
 * coordinator's connection (D-20). */
#include "dispatch/runner.h"

#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- queue writes other than the claim ---- */

static void requeue_done(struct db *db, PGresult *res, void *arg)
{
    (void)arg;
    if (res == NULL) {
        log_warning(COMPONENT, "could not requeue messages (no database); the next start resets them");
        return;
    }
    if (pgerr_classify(db->conn, res) != PGERR_NONE)
        log_error(COMPONENT, "requeue failed: %s sqlstate=%s", pgerr_message(db->conn, res),
                  pgerr_sqlstate(res));
    PQclear(res);
}

void requeue_ids(struct runner *r, const char *const *stages, const int64_t *ids, size_t n)
{
    if (n == 0)
        return;
    char *idbuf = pgarray_of_int64(ids, n), *stbuf = pgarray_of_text(stages, n);
    const char *params[] = {idbuf, stbuf, r->owner_slot};
    db_query(&r->db, "select pepsi.workqueue_requeue($1::bigint[], $2::text[], $3::int)", 3, params, DB_RESEND,
             requeue_done, r);
    free(idbuf);
    free(stbuf);
}

void requeue_cb(void *arg, struct stage *s, const int64_t *ids, size_t n)
{
    struct runner *r = arg;
    const char **stages = xcalloc(n, sizeof *stages);
    for (size_t i = 0; i < n; i++)
        stages[i] = s->name;
    s->delta.requeued += (int64_t)n;
    log_debug(s->name, "requeueing %zu unrun message(s)", n);
    for (size_t i = 0; i < n; i++)
        claimer_requeued(r->claimer, ids[i], now_ms()); /* D-51 */
    requeue_ids(r, stages, ids, n);
    free(stages);
}

struct strike_ctx {
    struct runner *r;
    int64_t id;
    char stage[64];
};

static void strike_done(struct db *db, PGresult *res, void *arg)
{
    struct strike_ctx *sc = arg;
    if (res == NULL) {
        log_warning(sc->stage, "could not record a strike for message %lld (no database)",
                    (long long)sc->id);
    } else if (pgerr_classify(db->conn, res) != PGERR_NONE) {
        const char *code = pgerr_sqlstate(res);
        /* PX004/PX005: the worker finished the message before it died. */
        if (strcmp(code, "PX004") == 0 || strcmp(code, "PX005") == 0)
            log_debug(sc->stage, "message %lld had moved on; no strike", (long long)sc->id);
        else
            log_error(sc->stage, "strike for message %lld failed: %s sqlstate=%s", (long long)sc->id,
                      pgerr_message(db->conn, res), code);
    } else if (PQgetisnull(res, 0, 0)) {
        /* Another owner slot's row (issue 14): never touched. */
        log_error(sc->stage, "message %lld is not of this owner slot; no strike", (long long)sc->id);
    } else {
        const char *status = PQgetvalue(res, 0, 0);
        if (strcmp(status, "paused") == 0)
            schedule_paused(sc->r, 60 * 1000);
        else
            log_warning(sc->stage, "message %lld is %s after its third strike", (long long)sc->id, status);
    }
    if (res)
        PQclear(res);
    free(sc);
}

void strike_cb(void *arg, struct stage *s, int64_t id, const char *kind, const char *reason)
{
    struct runner *r = arg;
    struct strike_ctx *sc = xcalloc(1, sizeof *sc);
    char idtext[32];
    snprintf(idtext, sizeof idtext, "%lld", (long long)id);
    sc->r = r;
    sc->id = id;
    snprintf(sc->stage, sizeof sc->stage, "%s", s->name);
    s->delta.strikes++;
    claimer_struck(r->claimer, id, strcmp(kind, "hang") == 0, s->conf->max_runtime_ms, now_ms()); /* D-52 */
    const char *params[] = {idtext, s->name, kind, reason, r->owner_slot};
    db_query(&r->db, "select pepsi.workqueue_strike($1::bigint, $2, $3, $4, p_owner_slot => $5::int)", 5, params,
             DB_RESEND,
             strike_done, sc);
}

struct defer_ctx {
    struct runner *r;
    int64_t id;
    uint64_t give_up_ms;           /* D-102: the pause is not written after this */
};

static void defer_done(struct db *db, PGresult *res, void *arg)
{
    struct defer_ctx *dc = arg;
    struct runner *r = dc->r;
    if (res == NULL) {
        if (now_ms() >= dc->give_up_ms)
            log_warning(COMPONENT, "could not write the pause of message %lld within %d s (no database); "
                        "leaving it running: the next start of the runner resets it to pending",
                        (long long)dc->id, DEFER_WRITE_MS / 1000);
        else
            log_warning(COMPONENT, "could not defer message %lld (no database); the next start resets it",
                        (long long)dc->id);
    } else if (pgerr_classify(db->conn, res) != PGERR_NONE) {
        log_error(COMPONENT, "defer of message %lld failed: %s sqlstate=%s", (long long)dc->id,
                  pgerr_message(db->conn, res), pgerr_sqlstate(res));
    } else {
        schedule_paused(r, DEFER_74_MS);
    }
    if (res)
        PQclear(res);
    free(dc);
}

/* Status 74: the worker lost its connection; pause the message 30 s
 * without blame (D-100, D-101). The pause is resent after reconnects for
 * about 30 s, then given up: the message stays running, and the next
 * start resets it to pending (D-102; issue 12: it was resent for ever). */
void defer_lost_connection(struct runner *r, struct stage *s, int64_t id)
{
    char until[40];
    snprintf(until, sizeof until, "%d milliseconds", DEFER_74_MS);
    log_warning(COMPONENT, "stage %s lost its database connection on message %lld; deferring it %d s",
                s->name, (long long)id, DEFER_74_MS / 1000);
    const char *name = s->name;
    char *idtext = pgarray_of_int64(&id, 1), *stage = pgarray_of_text(&name, 1);
    const char *params[] = {idtext, stage, until, r->owner_slot};
    struct defer_ctx *dc = xcalloc(1, sizeof *dc);
    dc->r = r;
    dc->id = id;
    dc->give_up_ms = now_ms() + DEFER_WRITE_MS;
    db_query_until(&r->db,
                   "select pepsi.workqueue_defer($1::bigint[], $2::text[], now() + $3::interval,"
                   " 'worker lost its database connection', $4::int)",
                   4, params, DB_RESEND, dc->give_up_ms, defer_done, dc);
    free(idtext);
    free(stage);
}

/* Database overload reported by stage s: halve the parallelism of the
 * stage running the most workers for OVERLOAD_WINDOW (D-96..D-98); what
 * is appended to the reporter's name in the log. */
static void halve_busiest(struct runner *r, struct stage *s, const char *what)
{
    struct stage *big = s;
    for (size_t i = 0; i < r->tabs->n_stages; i++)
        if (r->tabs->stages[i].n_workers > big->n_workers)
            big = &r->tabs->stages[i];
    int cap = big->parallelism_cap / 2;
    big->parallelism_cap = cap < 1 ? 1 : cap;
    big->throttle_until_ms = now_ms() + (uint64_t)r->conf->overload_window_ms;
    log_warning(COMPONENT, "database overload reported by stage %s%s; stage %s limited to %d worker(s) "
                "for %s", s->name, what, big->name, big->parallelism_cap,
                LOG_DURATION(r->conf->overload_window_ms));
}

/* Status 75: database overload. Requeue, and halve the busiest stage
 * (D-95..D-98). */
void throttle_overload(struct runner *r, struct stage *s, int64_t id)
{
    const char *stages[] = {s->name};
    requeue_ids(r, stages, &id, 1);
    halve_busiest(r, s, "");
}

/* A worker could not connect at start for want of connection slots (exit
 * 75 before ready): the same back-pressure as a status 75 (D-94); its ids
 * were requeued by the pool. */
void overload_cb(void *arg, struct stage *s)
{
    struct runner *r = arg;
    s->delta.tempfailed++;
    halve_busiest(r, s, " at worker start (no connection slot)");
}
