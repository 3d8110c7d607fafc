/* stages/cond.h — the condition language of pepsi-stage-if.
 *
 *   expr       := term ("or" term)*
 *   term       := factor ("and" factor)*
 *   factor     := "not" factor | "(" expr ")" | test
 *   test       := field OP value | field "exists"
 *   field      := sender_key | tube | subject | header_from | envelope_sender
 *               | recipient | recipients | state.KEY[.KEY...]
 *   OP         := == | != | ~ | !~ | < | <= | > | >=
 *   value      := "a string" (backslash escapes \" and \\) | a number
 *
 * recipient is true when ANY recipient satisfies the test; recipients is
 * their count. ~ and !~ match a POSIX extended regular expression
 * (case-sensitive; write (?i) nowhere: use [Aa]). <, <=, >, >= compare
 * numbers (a field that is not a number makes the test false). A state
 * field is compared as a string when it is a JSON string, as a number when
 * it is a number, and as its JSON text otherwise; "exists" tests presence.
 * A missing field (no Subject, the null sender) reads as "". Words are
 * case-sensitive. */
#ifndef PEPSI_STAGES_COND_H
#define PEPSI_STAGES_COND_H

#include "worker/sdk.h"

#include <stdbool.h>
#include <stddef.h>

struct cond;

/* Compiles text; NULL with a message (naming the position) in err. */
struct cond *cond_compile(const char *text, char *err, size_t errlen);

/* Evaluates a compiled condition on a message. */
bool cond_eval(const struct cond *c, const struct pepsi_message *m);

/* Frees a compiled condition (NULL is fine). */
void cond_free(struct cond *c);

#endif
