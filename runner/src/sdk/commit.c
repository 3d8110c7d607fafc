/* sdk/commit.c — writing what a pass decided, one SQL call each
 * (D-74..D-76), and the recipient split before a stage runs (D-124).
 *
 * Every advance passes the stages fused on the way (p_via) and [pepsi]
 * MAX_HOPS: the database counts the hops and, past the limit, fails the
 * message as a loop instead of advancing it (pepsi.workqueue_hop, issue
 * 12); the worker then logs it and answers non-zero (SDK_LOOP). */
#include "sdk/commit.h"
#include "sdk/options.h"

#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sdk_trouble_status(struct pepsi_worker *w, const PGresult *res)
{
    switch (pgerr_classify(w->core->conn, res)) {
    case PGERR_CONNECTION:
        return EXIT_IOERR;
    case PGERR_OVERLOAD:
        return EXIT_TEMPFAIL;
    default:
        return 0;
    }
}

static bool moved_on(const PGresult *res)
{
    const char *code = pgerr_sqlstate(res);
    return strcmp(code, "PX004") == 0 || strcmp(code, "PX005") == 0;
}

/* The database refused a settings change as not the sender's to make
 * (issue 11): the message's fault, a permanent failure, not a host error. */
static bool refused_by_policy(const PGresult *res)
{
    const char *code = pgerr_sqlstate(res);
    return strcmp(code, "PX030") == 0 || strcmp(code, "PX031") == 0;
}

/* Fails the message permanently with the database's reason. */
static PGresult *commit_refusal(struct pepsi_worker *s, const char *id, const PGresult *refusal)
{
    char reason[512];
    snprintf(reason, sizeof reason, "stage %s: %s", s->stage, pgerr_message(s->core->conn, refusal));
    log_warning(s->stage, "message %s refused: %s", id, reason);
    const char *p[] = {id, s->stage, reason, "permanent", NULL};
    return sdk_exec_prepared(s, "fail", 5, p);
}

char *sdk_via_text(const struct sdk_via *via, size_t n)
{
    if (via == NULL || n == 0)
        return NULL;
    struct pgarray a = PGARRAY_INIT;
    for (size_t i = 0; i < n && i < via->n; i++)
        pgarray_add_text(&a, via->stage[i]);
    return pgarray_finish(&a);
}

void sdk_log_loop(struct pepsi_worker *s, const char *id, const char *row_stage, const char *next)
{
    log_warning(s->stage, "message %s failed as a loop: more than MAX_HOPS (%d) hops, on its way from stage %s "
                "to %s; its last stages are in last_error (pepsi.failed)", id, s->core->conf.max_hops,
                row_stage, next ? next : "(none)");
}

/* Whether an advance, move or settings_apply answered 'loop' (issue 12). */
static bool loop_outcome(const PGresult *res)
{
    return PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) >= 1 &&
           strcmp(PQgetvalue(res, 0, 0), "loop") == 0;
}

static char *patch_text(const struct pepsi_outcome *out)
{
    return out->state_patch ? json_dumps(out->state_patch, JSON_COMPACT) : NULL;
}

/* MAX_LIFETIME and BOUNCE_STAGE of stage s for message m: a per-address
 * override (checked before the stage ran) or the section's. */
static void lifetime_of(struct pepsi_worker *s, const struct pepsi_message *m, char *ms, size_t cap,
                        const char **bounce)
{
    int64_t lifetime = s->section->max_lifetime_ms;
    json_t *opts = sdk_message_overrides(m, s->stage);
    const char *v = json_string_value(json_object_get(opts, "MAX_LIFETIME"));
    if (v)
        conf_parse_duration(v, &lifetime);
    snprintf(ms, cap, "%lld", (long long)lifetime);
    v = json_string_value(json_object_get(opts, "BOUNCE_STAGE"));
    *bounce = v ? v : s->section->bounce_stage;
}

/* The host-error path of stage s (D-104..D-109): pause with backoff, or
 * give up after MAX_LIFETIME. */
static PGresult *commit_host_error(struct pepsi_worker *s, const struct pepsi_message *m, const char *id,
                                   const char *reason)
{
    char lifetime[32];
    const char *bounce;
    lifetime_of(s, m, lifetime, sizeof lifetime, &bounce);
    const char *params[] = {id, s->stage, reason, lifetime, bounce};
    /* D-106: every host-error retry is a warning under the stage's name. */
    log_warning(s->stage, "host error on message %s: %s", id, reason);
    return sdk_exec_prepared(s, "host_error", 5, params);
}

/* The status a recorded host error answers: 1 when workqueue_host_error
 * left the row failed (retries exhausted after MAX_LIFETIME and no
 * BOUNCE_STAGE, D-109), so that the dispatcher counts it failed (D-79,
 * D-80: it used to answer 0 and count a success); else 0 (paused, or
 * redirected pending to BOUNCE_STAGE, D-108). */
static int host_error_status(struct pepsi_worker *s, const char *id, const PGresult *res)
{
    if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "failed") != 0)
        return 0;
    log_warning(s->stage, "message %s failed: host errors outlived MAX_LIFETIME (retries-exhausted)", id);
    return 1;
}

/* Records a host error and gives the status to answer: 0 or 1 as
 * host_error_status, 74/75 for database trouble, 74 when the database
 * refused even that (nothing else can be written), SDK_MOVED_ON. */
static int record_host_error(struct pepsi_worker *s, const struct pepsi_message *m, const char *id,
                             const char *reason)
{
    PGresult *res = commit_host_error(s, m, id, reason);
    int status = sdk_trouble_status(s, res);
    if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
        if (moved_on(res)) {
            log_warning(s->stage, "message %s moved on before its host error was written", id);
            status = SDK_MOVED_ON;
        } else {
            log_error(s->stage, "cannot record a host error for message %s: %s", id,
                      pgerr_message(s->core->conn, res));
            status = EXIT_IOERR;
        }
    } else if (status == 0) {
        status = host_error_status(s, id, res);
    }
    PQclear(res);
    return status;
}

int sdk_db_error(struct pepsi_worker *w, const struct pepsi_message *m, const char *id, const char *what,
                 const PGresult *res)
{
    int status = sdk_trouble_status(w, res);
    if (status != 0)
        return status;
    char reason[512];
    snprintf(reason, sizeof reason, "stage %s: %s: %s (sqlstate %s)", w->stage, what,
             pgerr_message(w->core->conn, res), pgerr_sqlstate(res));
    if (m != NULL)
        return record_host_error(w, m, id, reason);
    struct pepsi_message bare;
    sdk_bare_message(w, strtoll(id, NULL, 10), &bare);
    status = record_host_error(w, &bare, id, reason);
    json_decref(bare.state);
    return status;
}

/* The SQL call for the outcome decided at stage s, the row being at
 * row_stage, through the fused stages via; sets *failed when the row is
 * left failed (status 1), *advancing when the call is an advance (which
 * may answer 'loop'). */
static PGresult *commit_call(struct pepsi_worker *s, const char *row_stage, const char *id,
                             const struct pepsi_outcome *out, const struct sdk_via *via,
                             const struct pepsi_message *m, bool *failed, bool *advancing)
{
    char ms[32], hops[16];
    char *patch = patch_text(out);
    const char *next = out->next ? out->next : s->section->next;
    char *via_text = sdk_via_text(via, via ? via->n : 0);
    PGresult *res;

    *failed = *advancing = false;
    snprintf(hops, sizeof hops, "%d", s->core->conf.max_hops);
    if (out->settings_changes && (out->kind == PEPSI_ADVANCE || out->kind == PEPSI_FINISH)) {
        /* A settings control message: the changes and the advance in one call. */
        char *changes = json_dumps(out->settings_changes, JSON_COMPACT);
        const char *p[] = {id, row_stage, out->kind == PEPSI_ADVANCE ? next : NULL, out->settings_address,
                           changes, via_text, hops};
        res = sdk_exec_prepared(s, "settings_apply", 7, p);
        *advancing = out->kind == PEPSI_ADVANCE && next != NULL;
        free(changes);
        free(patch);
        free(via_text);
        return res;
    }
    switch (out->kind) {
    case PEPSI_ADVANCE:
        if (next) {
            const char *p[] = {id, row_stage, next, patch, via_text, hops};
            res = sdk_exec_prepared(s, "advance", 6, p);
            *advancing = true;
            break;
        }
        /* no next stage: the message is done */
        __attribute__((fallthrough));
    case PEPSI_FINISH: {
        const char *p[] = {id, row_stage};
        res = sdk_exec_prepared(s, "finish", 2, p);
        break;
    }
    case PEPSI_PAUSE: {
        snprintf(ms, sizeof ms, "%lld", (long long)(out->pause_ms > 0 ? out->pause_ms : 1000));
        const char *p[] = {id, s->stage, ms, out->reason[0] ? out->reason : NULL, patch};
        res = sdk_exec_prepared(s, "pause", 5, p);
        break;
    }
    case PEPSI_FAIL: {
        const char *p[] = {id, s->stage, out->reason[0] ? out->reason : "failed",
                           out->failure_class ? out->failure_class : "permanent", patch};
        res = sdk_exec_prepared(s, "fail", 5, p);
        *failed = true;
        break;
    }
    default:
        res = commit_host_error(s, m, id, out->reason[0] ? out->reason : "host error");
        break;
    }
    free(patch);
    free(via_text);
    return res;
}

/* The JSON of a fused stage's result for workqueue_commit's "at" (new
 * reference, or NULL): the row, claimed at row_stage, is moved to stage s
 * through the fused stages before it (via, s the last of them) and
 * paused, failed or charged a host error there, in one statement. */
static json_t *fused_json(struct pepsi_worker *s, const char *id, const struct pepsi_outcome *out,
                          const struct sdk_via *via, const char *kind, const char *reason, const char **bounce)
{
    json_t *r = json_pack("{sIssss}", "id", (json_int_t)strtoll(id, NULL, 10), "do", kind, "at", s->stage);
    if (r == NULL)
        return NULL;
    int rc = 0;
    if (via && via->n > 1) {
        json_t *stages = json_array();
        for (size_t k = 0; stages && k + 1 < via->n; k++)
            rc |= json_array_append_new(stages, json_string(via->stage[k]));
        rc |= stages ? json_object_set_new(r, "via", stages) : -1;
    }
    if (reason && reason[0])
        rc |= json_object_set_new(r, "reason", json_string(reason));
    if (out && out->kind == PEPSI_FAIL)
        rc |= json_object_set_new(r, "class", json_string(out->failure_class ? out->failure_class : "permanent"));
    if (bounce && *bounce)
        rc |= json_object_set_new(r, "bounce", json_string(*bounce));
    if (out && out->state_patch && out->kind != PEPSI_HOST_ERROR)
        rc |= json_object_set(r, "state", out->state_patch);
    if (rc != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Sends a fused result (workqueue_commit with "at"); pause_ms and
 * lifetime are in ms, either one or both empty strings when unused. */
static PGresult *fused_call(struct pepsi_worker *s, const char *row_stage, json_t *r, const char *pause_ms,
                            const char *lifetime)
{
    char hops[16];
    snprintf(hops, sizeof hops, "%d", s->core->conf.max_hops);
    char *text = r ? json_dumps(r, JSON_COMPACT) : NULL;
    if (text == NULL) {
        log_error(s->stage, "cannot encode a fused result");
        return NULL;
    }
    const char *p[] = {row_stage, text, hops, pause_ms[0] ? pause_ms : NULL, lifetime[0] ? lifetime : NULL};
    PGresult *res = sdk_exec_prepared(s, "commit_fused", 5, p);
    free(text);
    return res;
}

/* A fused stage's host error: moved to s and charged there, in one call. */
static PGresult *fused_host_error(struct pepsi_worker *s, const char *row_stage, const struct pepsi_message *m,
                                  const char *id, const struct sdk_via *via, const char *reason)
{
    char lifetime[32];
    const char *bounce;
    lifetime_of(s, m, lifetime, sizeof lifetime, &bounce);
    log_warning(s->stage, "host error on message %s: %s", id, reason);
    json_t *r = fused_json(s, id, NULL, via, "host_error", reason, &bounce);
    PGresult *res = fused_call(s, row_stage, r, "", lifetime);
    json_decref(r);
    return res;
}

/* The status the single outcome of a fused call answers (SDK_LOOP, 1 for
 * a row left failed, 0), or -2 when the call failed (res kept). */
static int fused_outcome(struct pepsi_worker *s, const char *row_stage, const char *id, const PGresult *res,
                         bool fail)
{
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQnfields(res) != 2)
        return -2;
    const char *outcome = PQgetvalue(res, 0, 1);
    if (strcmp(outcome, "loop") == 0) {
        sdk_log_loop(s, id, row_stage, s->stage);
        return SDK_LOOP;
    }
    if (strcmp(outcome, "refused") == 0) {
        log_warning(s->stage, "message %s moved on before its result was written", id);
        return 0;
    }
    if (strcmp(outcome, "failed") == 0) {
        log_warning(s->stage, "message %s failed: host errors outlived MAX_LIFETIME (retries-exhausted)", id);
        return 1;
    }
    return fail ? 1 : 0;
}

/* A fused stage that pauses, fails or hits a host error (D-115): the
 * chain up to it is committed with the result, in ONE statement (issue
 * 13): the row is moved from the stage it was claimed at to stage s,
 * counting the chain's hops (via: the fused stages, s the last of them),
 * and paused, failed or charged there, so that the error is handled
 * there and a retry resumes there; a worker death cannot come between.
 * SDK_LOOP when the move failed the message as a loop instead. A result
 * the database refuses for another reason is recorded as a host error
 * of s, the same way (D-103). */
static int commit_fused(struct pepsi_worker *s, const char *row_stage, const char *id,
                        const struct pepsi_outcome *out, const struct sdk_via *via, const struct pepsi_message *m)
{
    PGresult *res;
    char ms[32] = "";
    if (out->kind == PEPSI_HOST_ERROR) {
        res = fused_host_error(s, row_stage, m, id, via, out->reason[0] ? out->reason : "host error");
    } else {
        if (out->kind == PEPSI_PAUSE)
            snprintf(ms, sizeof ms, "%lld", (long long)(out->pause_ms > 0 ? out->pause_ms : 1000));
        const char *reason = out->reason[0] ? out->reason : (out->kind == PEPSI_FAIL ? "failed" : NULL);
        json_t *r = fused_json(s, id, out, via, out->kind == PEPSI_PAUSE ? "pause" : "fail", reason, NULL);
        res = fused_call(s, row_stage, r, ms, "");
        json_decref(r);
    }
    if (res == NULL)
        return EXIT_IOERR;
    int status = sdk_trouble_status(s, res);
    if (status == 0)
        status = fused_outcome(s, row_stage, id, res, out->kind == PEPSI_FAIL);
    if (status == -2 && out->kind != PEPSI_HOST_ERROR) {
        char reason[512];
        snprintf(reason, sizeof reason, "stage %s: the database refused the result: %s (sqlstate %s)", s->stage,
                 pgerr_message(s->core->conn, res), pgerr_sqlstate(res));
        PQclear(res);
        res = fused_host_error(s, row_stage, m, id, via, reason);
        status = res == NULL ? EXIT_IOERR : sdk_trouble_status(s, res);
        if (status == 0)
            status = fused_outcome(s, row_stage, id, res, false);
    }
    if (status == -2) {
        log_error(s->stage, "cannot record the result of message %s at stage %s: %s", id, s->stage,
                  pgerr_message(s->core->conn, res));
        status = EXIT_IOERR;
    }
    PQclear(res);
    return status;
}

static bool ends_elsewhere(const struct pepsi_outcome *out)
{
    return out->kind == PEPSI_PAUSE || out->kind == PEPSI_FAIL || out->kind == PEPSI_HOST_ERROR;
}

int sdk_commit(struct pepsi_worker *s, const char *row_stage, const char *id,
               const struct pepsi_outcome *out, const struct sdk_via *via, const struct pepsi_message *m)
{
    bool failed, advancing;
    if (ends_elsewhere(out) && strcmp(row_stage, s->stage) != 0)
        return commit_fused(s, row_stage, id, out, via, m);
    PGresult *res = commit_call(s, row_stage, id, out, via, m, &failed, &advancing);
    int status = sdk_trouble_status(s, res);
    if (status == 0 && advancing && loop_outcome(res)) {
        sdk_log_loop(s, id, row_stage, out->next ? out->next : s->section->next);
        status = SDK_LOOP;
    } else if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
        if (moved_on(res)) {
            log_warning(s->stage, "message %s moved on before its result was written: %s", id,
                        pgerr_message(s->core->conn, res));
        } else if (refused_by_policy(res)) {
            PGresult *refusal = res;
            res = commit_refusal(s, id, refusal);
            PQclear(refusal);
            status = sdk_trouble_status(s, res);
            if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
                log_error(s->stage, "cannot fail message %s: %s", id, pgerr_message(s->core->conn, res));
                status = EXIT_IOERR;
            } else if (status == 0) {
                status = 1;
            }
        } else {
            /* The database refused the result for another reason: a host
             * error, never the message's fault (D-103). */
            status = sdk_db_error(s, m, id, "the database refused the result", res);
            if (status == SDK_MOVED_ON)
                status = 0;
        }
    } else if (status == 0 && failed) {
        status = 1;
    } else if (status == 0 && out->kind == PEPSI_HOST_ERROR) {
        status = host_error_status(s, id, res);
    }
    PQclear(res);
    return status;
}

/* Keeps the first group's recipients on the message in memory. */
static void keep_first_group(struct pepsi_message *m, json_t *groups)
{
    json_t *first = json_array_get(groups, 0);
    for (size_t i = 0; i < m->n_recipients; i++)
        free(m->recipients[i]);
    m->n_recipients = 0;
    size_t i;
    json_t *v;
    json_array_foreach(first, i, v) {
        m->recipients[m->n_recipients++] = xstrdup(json_string_value(v));
    }
}

int sdk_split(struct pepsi_worker *w, struct pepsi_message *m, const char *id)
{
    json_t *groups = sdk_split_groups(m, w->stage);
    if (groups == NULL)
        return 0; /* D-125: recipients that agree are never split */
    char *text = json_dumps(groups, JSON_COMPACT);
    const char *p[] = {id, w->stage, text};
    PGresult *res = text ? sdk_exec_prepared(w, "split", 3, p) : NULL;
    free(text);
    int status = res ? sdk_trouble_status(w, res) : EXIT_IOERR;
    if (status == 0 && PQresultStatus(res) != PGRES_TUPLES_OK) {
        log_error(w->stage, "cannot split message %s: %s", id, pgerr_message(w->core->conn, res));
        /* An SQL error is a host error (D-103), answered as such; the
         * message does not run this time. */
        if (moved_on(res)) {
            status = SDK_MOVED_ON;
        } else {
            status = sdk_db_error(w, m, id, "cannot split the message by per-address settings", res);
            status = status == 0 ? SDK_MOVED_ON : status;
        }
    } else if (status == 0) {
        log_debug(w->stage, "split message %s into %zu by per-address settings: new %s", id,
                  json_array_size(groups), PQgetvalue(res, 0, 0));
        keep_first_group(m, groups);
    }
    PQclear(res);
    json_decref(groups);
    return status;
}
