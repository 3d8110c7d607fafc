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
 * their count. <, <=, >, >= compare numbers (a field that is not a number
 * makes the test false). A state field is compared as a string when it is
 * a JSON string, as a number when it is a number, and as its JSON text
 * otherwise (at most COND_MAX_JSON_TEXT bytes of it); "exists" tests
 * presence. A missing field (no Subject, the null sender) reads as "".
 * Words are case-sensitive.
 *
 * Regular expressions (~ and !~, issue 11) are PCRE2 patterns (Perl
 * syntax, not the POSIX ERE of glibc's regcomp used before), matched
 * anywhere in the field, on bytes:
 *   - compiled with PCRE2_DOTALL and PCRE2_DOLLAR_ENDONLY so that, as in
 *     POSIX ERE, "." matches any byte (a newline too) and "$" only the very
 *     end; (?i), (?m), (?s), \d, \w, \s, \b, lookarounds and possessive
 *     repeats work;
 *   - no UTF-8 mode: a byte above 127 is one character and \w, \d, \s and
 *     [[:alpha:]] are ASCII; (*UTF) and (*UCP) are refused (PCRE2_NEVER_UTF,
 *     PCRE2_NEVER_UCP) because field values need not be valid UTF-8, and
 *     so is \C (PCRE2_NEVER_BACKSLASH_C);
 *   - no JIT: the interpreter, whose limits below hold;
 *   - differences from POSIX ERE that matter: a backslash inside [...] is
 *     an escape ([\.] is a dot only); a "{" that starts no repeat is a
 *     literal; "a++" is a possessive repeat and "a+++" an error. The
 *     leftmost-longest rule does not matter: ~ only asks whether there is
 *     a match.
 * Start-of-pattern settings (*LIMIT_MATCH=n), (*LIMIT_DEPTH=n) and
 * (*LIMIT_HEAP=n) can only LOWER the limits below: PCRE2 ignores a value
 * larger than the caller's (test_cond.c checks each). Callouts (?C...) in
 * a pattern are counted as steps like the automatic ones.
 *
 * Limits, checked when a condition is compiled: the worker refuses to
 * start (78), `pepsi-runner settings set` exits 1, a per-address override
 * fails its message, each with "condition at position N: WHAT", N the byte
 * (1-based) where the offending item starts:
 *   - longer than COND_MAX_LENGTH bytes (checked before parsing);
 *   - "not" and "(" nested deeper than COND_MAX_DEPTH (the parser counts
 *     depth and stops at the first level too deep: no input can exhaust
 *     the stack; the tree keeps every operand of an "or"/"and" in one
 *     node, so walking it recurses at most about 2 x COND_MAX_DEPTH deep);
 *   - more than COND_MAX_TESTS tests or COND_MAX_REGEXES regexes, or a
 *     string longer than COND_MAX_STRING bytes (once unescaped);
 *   - a regex that does not compile, nests parentheses deeper than
 *     COND_RE_MAX_PARENS, or compiles to more than PCRE2's 64 KiB of code
 *     (link size 2: "regular expression is too large").
 *
 * Limits of an evaluation. PCRE2's own limits are set on every match:
 * COND_RE_MATCH_LIMIT, COND_RE_DEPTH_LIMIT and COND_RE_HEAP_KIB (which
 * bounds memory: a match data block per condition keeps at most that much
 * between messages). They do not bound time alone: PCRE2 restarts its
 * match counter at each start position and does not count the bytes one
 * item scans, so "\w*\d" against 100,000 bytes ran 151 s within a match
 * limit of 1,000,000. So an evaluation also has COND_MAX_STEPS steps: each
 * test costs 1 + L/COND_STEP_BYTES (L the bytes of the value it reads),
 * and each step of the regex engine costs as much again (steps are
 * counted with PCRE2_AUTO_CALLOUT: a callout before every pattern item;
 * one item scans at most L bytes, hence the L/64). Measured, the worst
 * condition found takes under half a second and a few MB (README,
 * "Condition language"). A limit hit is an error, never "false":
 * cond_eval returns -1 with "condition at position N: WHAT", N the
 * position of the test, and pepsi-stage-if fails that message
 * permanently with it.
 * Owns: compiled conditions. Uses: stages/cond_re.h, sdk/sdk.h (the
 * message), lib/util.h. */
#ifndef PEPSI_STAGES_COND_H
#define PEPSI_STAGES_COND_H

#include "sdk/sdk.h"

#include <stdbool.h>
#include <stddef.h>

#define COND_MAX_LENGTH 4096       /* bytes of condition text */
#define COND_MAX_DEPTH 64          /* nested "not" and "(" around a test */
#define COND_MAX_TESTS 128         /* tests in one condition */
#define COND_MAX_REGEXES 16        /* ~ and !~ tests in one condition */
#define COND_MAX_STRING 1024       /* bytes of one string value (a pattern too) */
#define COND_MAX_JSON_TEXT 4096    /* bytes of a state object/array compared as text */
#define COND_RE_MAX_PARENS 32      /* parentheses nested in one pattern */
#define COND_RE_MATCH_LIMIT 100000 /* PCRE2 match limit, per start position */
#define COND_RE_DEPTH_LIMIT 10000  /* PCRE2 backtracking depth */
#define COND_RE_HEAP_KIB 2048      /* PCRE2 backtracking memory, KiB */
#define COND_MAX_STEPS 4000000     /* steps of one evaluation (see above) */
#define COND_STEP_BYTES 64         /* a step costs 1 more per this many bytes read */

struct cond;

/* Compiles text; NULL with "condition at position N: WHAT" in err. */
struct cond *cond_compile(const char *text, char *err, size_t errlen);

/* Evaluates a compiled condition on a message: 1 when it holds, 0 when it
 * does not, -1 when the evaluation stopped at a limit ("condition at
 * position N: WHAT" in err). Not reentrant: c holds the regex match state. */
int cond_eval(struct cond *c, const struct pepsi_message *m, char *err, size_t errlen);

/* Frees a compiled condition (NULL is fine). */
void cond_free(struct cond *c);

#endif
