/* stages/cond_re.c — see cond_re.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "stages/cond_re.h"

#include "stages/cond.h"
#include "lib/util.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* DOTALL and DOLLAR_ENDONLY keep "." and "$" as the POSIX ERE had them;
 * AUTO_CALLOUT puts a callout before every item: the step counter. */
#define COMPILE_OPTIONS                                                                                  \
    (PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C | \
     PCRE2_AUTO_CALLOUT)

struct cond_re_set {
    pcre2_compile_context *cc;
    pcre2_match_context *mc;
    pcre2_match_data *md;
};

struct cond_re {
    pcre2_code *code;
};

/* What the callout sees during one match. */
struct step_counter {
    struct cond_budget *b;
    uint64_t cost; /* of one step: 1 + len / COND_STEP_BYTES */
};

static void error_text(int rc, char *why, size_t cap)
{
    PCRE2_UCHAR buf[160];
    if (pcre2_get_error_message(rc, buf, sizeof buf) < 0)
        snprintf(why, cap, "PCRE2 error %d", rc);
    else
        snprintf(why, cap, "%s", (const char *)buf);
}

struct cond_re_set *cond_re_set_new(char *why, size_t cap)
{
    struct cond_re_set *s = xcalloc(1, sizeof *s);
    s->cc = pcre2_compile_context_create(NULL);
    s->mc = pcre2_match_context_create(NULL);
    /* Only whether there is a match counts: one ovector pair. */
    s->md = pcre2_match_data_create(1, NULL);
    if (s->cc == NULL || s->mc == NULL || s->md == NULL ||
        pcre2_set_max_pattern_length(s->cc, COND_MAX_STRING) != 0 ||
        pcre2_set_parens_nest_limit(s->cc, COND_RE_MAX_PARENS) != 0 ||
        pcre2_set_match_limit(s->mc, COND_RE_MATCH_LIMIT) != 0 ||
        pcre2_set_depth_limit(s->mc, COND_RE_DEPTH_LIMIT) != 0 ||
        pcre2_set_heap_limit(s->mc, COND_RE_HEAP_KIB) != 0) {
        snprintf(why, cap, "cannot set up PCRE2 (out of memory)");
        cond_re_set_free(s);
        return NULL;
    }
    return s;
}

void cond_re_set_free(struct cond_re_set *s)
{
    if (s == NULL)
        return;
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mc);
    pcre2_compile_context_free(s->cc);
    free(s);
}

struct cond_re *cond_re_compile(struct cond_re_set *s, const char *pattern, size_t len, size_t *offset,
                                char *why, size_t cap)
{
    int rc;
    PCRE2_SIZE off = 0;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, len, COMPILE_OPTIONS, &rc, &off, s->cc);
    if (code == NULL) {
        error_text(rc, why, cap);
        *offset = off;
        return NULL;
    }
    struct cond_re *r = xcalloc(1, sizeof *r);
    r->code = code;
    return r;
}

void cond_re_free(struct cond_re *r)
{
    if (r == NULL)
        return;
    pcre2_code_free(r->code);
    free(r);
}

/* Charges cost to b; whether it is still within its maximum. */
static bool charge(struct cond_budget *b, uint64_t cost)
{
    b->used += cost;
    return b->used <= b->max;
}

static int step_cb(pcre2_callout_block *block, void *data)
{
    (void)block;
    struct step_counter *sc = data;
    return charge(sc->b, sc->cost) ? 0 : PCRE2_ERROR_CALLOUT;
}

int cond_re_match(struct cond_re_set *s, const struct cond_re *r, const char *subject, size_t len,
                  struct cond_budget *b, char *why, size_t cap)
{
    struct step_counter sc = {b, 1 + len / COND_STEP_BYTES};
    /* The call scans the subject once before any callout: one step. */
    if (!charge(b, sc.cost)) {
        snprintf(why, cap, "evaluation exceeds %llu steps", (unsigned long long)b->max);
        return -1;
    }
    if (pcre2_set_callout(s->mc, step_cb, &sc) != 0) {
        snprintf(why, cap, "cannot set the PCRE2 callout");
        return -1;
    }
    int rc = pcre2_match(r->code, (PCRE2_SPTR)subject, len, 0, 0, s->md, s->mc);
    /* The context must not keep a pointer to this frame (always 0). */
    (void)pcre2_set_callout(s->mc, NULL, NULL);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_CALLOUT) {
        snprintf(why, cap, "evaluation exceeds %llu steps", (unsigned long long)b->max);
        return -1;
    }
    char text[160];
    error_text(rc, text, sizeof text);
    if (rc == PCRE2_ERROR_MATCHLIMIT)
        snprintf(why, cap, "regex %s (at most %d steps at one start position)", text, COND_RE_MATCH_LIMIT);
    else if (rc == PCRE2_ERROR_DEPTHLIMIT)
        snprintf(why, cap, "regex %s (at most %d)", text, COND_RE_DEPTH_LIMIT);
    else if (rc == PCRE2_ERROR_HEAPLIMIT)
        snprintf(why, cap, "regex %s (at most %d KiB)", text, COND_RE_HEAP_KIB);
    else
        snprintf(why, cap, "regex: %s", text);
    return -1;
}
