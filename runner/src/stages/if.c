/* stages/if.c — pepsi-stage-if: routes a message on a condition over its
 * metadata and state (stages/cond.h has the language).
 *
 *   CONDITION  the condition (required)
 *   THEN       the stage when it holds (required)
 *   ELSE       the stage when it does not; without it, NEXT, or finish
 *
 * A condition that cannot be parsed or passes a limit of cond.h, or
 * THEN/ELSE naming no stage, makes the worker refuse to start (78, D-113)
 * with "condition at position N: WHAT"; the same in a per-address override
 * fails that message (D-114), and `pepsi-runner settings set` refuses it.
 * An evaluation that stops at a limit (issue 11: steps, PCRE2's match,
 * depth or heap limit) fails the message permanently with the reason, never
 * routes it as if the condition were false. Metadata only, FUSION = yes by
 * default (D-127): it is usually fused into the stage before it. */
#include "stages/stages.h"

#include "stages/cond.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const if_keys[] = {"CONDITION", "THEN", "ELSE", NULL};

struct if_conf {
    struct cond *cond;         /* the section's condition */
};

static int check_stage_key(struct pepsi_worker *w, const char *key, const char *value, char *err,
                           size_t errlen)
{
    if (value && conf_stage(pepsi_worker_conf(w), value) == NULL) {
        snprintf(err, errlen, "%s names no stage: \"%s\"", key, value);
        return -1;
    }
    return 0;
}

static int if_check_option(struct pepsi_worker *w, const char *key, const char *value, char *err,
                           size_t errlen)
{
    if (strcmp(key, "CONDITION") == 0) {
        struct cond *c = cond_compile(value, err, errlen);
        cond_free(c);
        return c ? 0 : -1;
    }
    return check_stage_key(w, key, value, err, errlen);
}

static int if_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    const struct stage_conf *s = pepsi_worker_section(w);
    const char *cond = conf_stage_own(s, "CONDITION"), *then = conf_stage_own(s, "THEN");
    if (cond == NULL || then == NULL) {
        snprintf(err, errlen, "pepsi-stage-if needs CONDITION and THEN");
        return -1;
    }
    if (check_stage_key(w, "THEN", then, err, errlen) != 0 ||
        check_stage_key(w, "ELSE", conf_stage_own(s, "ELSE"), err, errlen) != 0)
        return -1;
    struct if_conf *ic = xcalloc(1, sizeof *ic);
    if ((ic->cond = cond_compile(cond, err, errlen)) == NULL) {
        free(ic);
        return -1;
    }
    pepsi_worker_set_data(w, ic);
    return 0;
}

static void if_teardown(struct pepsi_worker *w)
{
    struct if_conf *ic = pepsi_worker_data(w);
    if (ic)
        cond_free(ic->cond);
    free(ic);
}

static void if_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    struct if_conf *ic = pepsi_worker_data(w);
    const char *text = pepsi_option(w, m, "CONDITION");
    struct cond *c = ic->cond, *own = NULL;
    char err[512];
    /* A per-address CONDITION (checked before the stage ran) is compiled
     * for this message. */
    if (text && strcmp(text, conf_stage_own(pepsi_worker_section(w), "CONDITION")) != 0) {
        if ((own = cond_compile(text, err, sizeof err)) == NULL) {
            out->kind = PEPSI_FAIL;
            pepsi_outcome_reason(out, "stage %s: %s", pepsi_worker_stage(w), err);
            return;
        }
        c = own;
    }
    int holds = cond_eval(c, m, err, sizeof err);
    cond_free(own);
    if (holds < 0) {
        out->kind = PEPSI_FAIL; /* permanent: the same message would stop there again */
        pepsi_outcome_reason(out, "stage %s: %s", pepsi_worker_stage(w), err);
        return;
    }
    out->kind = PEPSI_ADVANCE;
    out->next = holds ? pepsi_option(w, m, "THEN") : pepsi_option(w, m, "ELSE");
}

const struct pepsi_stage_def stage_if = {
    .program = "if",
    .fusion_default = true, /* D-127 */
    .loads_body = false,
    .own_keys = if_keys,
    .setup = if_setup,
    .run = if_run,
    .teardown = if_teardown,
    .check_option = if_check_option,
};
