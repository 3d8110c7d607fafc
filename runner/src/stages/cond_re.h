/* stages/cond_re.h — the regular expressions of the condition language
 * (stages/cond.h has the dialect and the limits): PCRE2, compiled and
 * matched under fixed limits, with a step budget shared by one evaluation.
 * Owns: compiled patterns and their match data. Uses: lib/util.h, PCRE2. */
#ifndef PEPSI_STAGES_COND_RE_H
#define PEPSI_STAGES_COND_RE_H

#include <stddef.h>
#include <stdint.h>

/* What one condition's regexes share: the compile and match contexts and
 * one match data block (PCRE2 keeps its backtracking frames there, at
 * most COND_RE_HEAP_KIB, so one block per condition bounds what stays
 * allocated between messages). */
struct cond_re_set;

/* One compiled pattern. */
struct cond_re;

/* The steps an evaluation has used and may use (cond.h, COND_MAX_STEPS). */
struct cond_budget {
    uint64_t used;
    uint64_t max;
};

/* A new set; NULL with why when PCRE2 cannot allocate its contexts. */
struct cond_re_set *cond_re_set_new(char *why, size_t cap);
void cond_re_set_free(struct cond_re_set *s);

/* Compiles pattern (len bytes) in s; NULL with PCRE2's message in why and
 * the byte offset of the error in the pattern in *offset. */
struct cond_re *cond_re_compile(struct cond_re_set *s, const char *pattern, size_t len, size_t *offset,
                                char *why, size_t cap);
void cond_re_free(struct cond_re *r);

/* Whether r matches subject (len bytes): 1 or 0; -1 with why when a limit
 * stopped it (PCRE2's, or the budget: each engine step costs
 * 1 + len / COND_STEP_BYTES, and so does the call itself). */
int cond_re_match(struct cond_re_set *s, const struct cond_re *r, const char *subject, size_t len,
                  struct cond_budget *b, char *why, size_t cap);

#endif
