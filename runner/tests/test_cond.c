/* test_cond.c — the condition language of pepsi-stage-if (stages/cond.h):
 * the language (D-113), the PCRE2 dialect, and the limits of issue 11
 * (each at its bound accepted and one past refused, with its position),
 * the inputs that crashed or exhausted the glibc-regex version, the worst
 * regexes found, and a measurement of the worst accepted conditions. */
#include "stages/cond.h"
#include "unit.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static struct pepsi_message msg;
static char *rcpts[] = {"alice@example.org", "bob@example.net"};
static char last_err[1024];

static void setup_message(void)
{
    json_error_t err;
    memset(&msg, 0, sizeof msg);
    msg.id = 7;
    msg.sender_key = "ip:192.0.2.7";
    msg.tube = "orders";
    msg.subject = "Invoice 42";
    msg.header_from = "Shop <shop@example.com>";
    msg.envelope_sender = "";
    msg.recipients = rcpts;
    msg.n_recipients = 2;
    msg.state = json_loads("{\"amount\": 120, \"kind\": \"refund\", \"deep\": {\"flag\": true}}", 0, &err);
}

/* Timing and RSS figures mean nothing under valgrind or ASan. */
static bool measuring(void)
{
#ifdef __SANITIZE_ADDRESS__
    return false;
#else
    const char *v = getenv("PEPSI_VALGRIND");
    return !(v && strcmp(v, "1") == 0);
#endif
}

/* unit repeated n times, then tail; the caller frees. */
static char *repeat(const char *unit, size_t n, const char *tail)
{
    size_t ul = strlen(unit), tl = strlen(tail);
    char *s = xmalloc(ul * n + tl + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * ul, unit, ul);
    memcpy(s + ul * n, tail, tl + 1);
    return s;
}

/* Compiles and evaluates text on msg: 1, 0 or -1 (last_err says why);
 * -2 when it does not compile (a failed check). */
static int eval_rc(const char *text)
{
    char err[512] = "";
    struct cond *c = cond_compile(text, err, sizeof err);
    if (c == NULL) {
        CHECK(0, "compiles: %.200s (%s)", text, err);
        return -2;
    }
    last_err[0] = '\0';
    int r = cond_eval(c, &msg, last_err, sizeof last_err);
    cond_free(c);
    return r;
}

static bool eval(const char *text)
{
    int r = eval_rc(text);
    CHECK(r >= 0, "evaluates: %.200s (%s)", text, r == -1 ? last_err : "");
    return r == 1;
}

static void refuses(const char *text, const char *why)
{
    char err[512] = "";
    struct cond *c = cond_compile(text, err, sizeof err);
    CHECK(c == NULL, "D-113: refuses %.100s", text);
    CHECK_CONTAINS(err, why, "D-113: and says why for %.100s", text);
    cond_free(c);
}

/* Refused with why at position pos (1-based), quickly and without a crash. */
static void refuses_at(const char *text, const char *why, size_t pos, const char *name)
{
    char err[512] = "", at[64];
    uint64_t t0 = now_ms();
    struct cond *c = cond_compile(text, err, sizeof err);
    uint64_t ms = now_ms() - t0;
    CHECK(c == NULL, "issue 11: %s: refused", name);
    CHECK_CONTAINS(err, why, "issue 11: %s: the error says %s", name, why);
    snprintf(at, sizeof at, "condition at position %zu: ", pos);
    CHECK_CONTAINS(err, at, "issue 11: %s: and gives the position %zu", name, pos);
    CHECK(!measuring() || ms < 2000, "issue 11: %s: within 2 s (%llu ms)", name, (unsigned long long)ms);
    cond_free(c);
}

static void language(void)
{
    CHECK(eval("tube == \"orders\""), "string equality");
    CHECK(!eval("tube != \"orders\""), "string inequality");
    CHECK(eval("subject ~ \"^Invoice [0-9]+$\""), "regular expression match");
    CHECK(eval("sender_key !~ \"^user:\""), "regular expression non-match");
    CHECK(eval("recipient ~ \"@example\\\\.net$\""), "recipient: any recipient matches");
    CHECK(!eval("recipient == \"carol@example.org\""), "recipient: none matches");
    CHECK(eval("recipients == 2"), "recipients is the count");
    CHECK(eval("recipients >= 2 and recipients < 3"), "numeric comparisons on the count");
    CHECK(eval("state.amount > 100"), "a numeric state field");
    CHECK(!eval("state.amount < 100.5"), "fractions compare too");
    CHECK(eval("state.kind == \"refund\""), "a string state field");
    CHECK(eval("state.deep.flag == \"true\""), "a nested non-string field compares as its JSON text");
    CHECK(eval("state.deep == \"{\\\"flag\\\":true}\""), "an object compares as its compact JSON text");
    CHECK(eval("state.kind exists"), "exists: present");
    CHECK(!eval("state.missing exists"), "exists: absent");
    CHECK(eval("state.missing == \"\""), "a missing field reads as the empty string");
    CHECK(eval("envelope_sender == \"\""), "the null sender reads as the empty string");
    CHECK(eval("not tube == \"x\""), "not");
    CHECK(eval("tube == \"x\" or tube == \"orders\" and subject ~ \"Invoice\""), "and binds tighter than or");
    CHECK(!eval("(tube == \"x\" or tube == \"orders\") and subject ~ \"nope\""), "parentheses");
    CHECK(eval("tube == \"a\" or tube == \"b\" or tube == \"orders\" or tube == \"c\""), "a list of or");
    CHECK(!eval("tube == \"orders\" and subject ~ \"Invoice\" and recipients == 3"), "a list of and");
    CHECK(eval("subject == \"Invoice 42\" and header_from ~ \"shop@\""), "header_from");
    CHECK(!eval("state.kind > 3"), "a number comparison on text is false");
    CHECK(!eval("subject == \"Invoice \\\"42\\\"\""), "escaped quotes inside a string");
    refuses("", "expected a field");
    refuses("colour == \"red\"", "unknown field \"colour\"");
    refuses("tube = \"x\"", "expected ==");
    refuses("tube == ", "expected a \"string\" or a number");
    refuses("tube == \"open", "unterminated string");
    refuses("subject ~ \"([a-z\"", "bad regular expression");
    refuses("(tube == \"x\"", "expected \")\"");
    refuses("tube == \"x\" tube == \"y\"", "unexpected text");
    refuses("tube exists", "state fields only");
    refuses("subject < \"b\"", "compare numbers");
    refuses_at("tube == \"x\" and colour == \"red\"", "unknown field", 17, "an error names where it is");
}

/* PCRE2, with "." and "$" as the POSIX ERE had them (cond.h). */
static void dialect(void)
{
    CHECK(eval("subject ~ \"(?i)^invoice\""), "issue 11: PCRE2 syntax: (?i) is case-insensitive");
    CHECK(eval("subject ~ \"^\\\\w+\\\\s\\\\d+$\""), "issue 11: PCRE2 syntax: \\w \\s \\d");
    CHECK(eval("subject ~ \"Invoice(?= 42)\""), "issue 11: PCRE2 syntax: a lookahead");
    CHECK(eval("tube ~ \"r++\""), "issue 11: PCRE2 syntax: a++ is a possessive repeat");
    CHECK(eval("subject ~ \"[[:digit:]]{2}\""), "issue 11: POSIX classes still work");
    msg.subject = "line one\nline two\n";
    CHECK(eval("subject ~ \"one.line\""), "issue 11: \".\" matches a newline (PCRE2_DOTALL, as POSIX ERE)");
    CHECK(!eval("subject ~ \"two$\""), "issue 11: \"$\" is the very end only (PCRE2_DOLLAR_ENDONLY, as POSIX ERE)");
    CHECK(eval("subject ~ \"(?m)one$\""), "issue 11: (?m) makes $ an end of line");
    msg.subject = "caf\xc3\xa9 \xff";
    CHECK(eval("subject ~ \"^caf..\\\\s.$\""), "issue 11: no UTF mode: bytes, invalid UTF-8 included");
    msg.subject = "Invoice 42";
    refuses_at("subject ~ \"(*UTF)x\"", "using UTF is disabled", 11, "(*UTF) is refused");
    refuses_at("subject ~ \"(*UCP)\\\\w\"", "using UCP is disabled", 11, "(*UCP) is refused");
    refuses_at("subject ~ \"\\\\C\"", "using \\C is disabled", 11, "\\C is refused");
    CHECK(eval("subject ~ \"(?C1)Inv(?C\\\"s\\\")oice\""), "issue 11: a callout in a pattern is only a counted step");
}

/* The inputs of the issue: glibc took 3 GB for 23 characters, 12.5 GB for
 * 24, and the recursive parser overflowed the stack. */
static void issue_inputs(void)
{
    /* PCRE2 reads "a++" as a possessive repeat, and a "+" after it is a
     * compile error: refused at once, nothing to bound. */
    char *re23 = repeat("+", 22, "\"");
    char *t23 = xasprintf("tube ~ \"a%s", re23);
    refuses_at(t23, "quantifier does not follow a repeatable item", 8, "a regex of 23 characters, a and 22 +");
    char *re24 = repeat("+", 24, "\"");
    char *t24 = xasprintf("tube ~ \"a%s", re24);
    refuses_at(t24, "quantifier does not follow a repeatable item", 8, "a regex of a and 24 +");
    CHECK(eval("tube ~ \"r+\"") && eval("tube ~ \"r++\""), "issue 11: a+ and a++ still compile");
    free(re23), free(t23), free(re24), free(t24);

    char *nots = repeat("not ", 30000, "tube == \"x\"");
    refuses_at(nots, "longer than 4096 bytes", 4097, "30,000 nested not (120 kB)");
    free(nots);
    char *parens = repeat("(", 25000, "tube == \"x\"");
    refuses_at(parens, "longer than 4096 bytes", 4097, "25,000 (");
    free(parens);
    char *big = repeat("tube == \"x\" or ", 16000, "tube == \"x\"");
    CHECK(strlen(big) > 240000, "a 240 kB condition (%zu bytes)", strlen(big));
    refuses_at(big, "longer than 4096 bytes", 4097, "a 240 kB condition");
    free(big);
    /* Within the length limit the parser still stops at the depth limit. */
    char *n1000 = repeat("not ", 1000, "tube == \"x\"");
    refuses_at(n1000, "nesting deeper than 64", 257, "1,000 nested not");
    free(n1000);
    char *p4000 = repeat("(", 4000, "tube == \"x\"");
    refuses_at(p4000, "nesting deeper than 64", 65, "4,000 (");
    free(p4000);
}

/* Each limit: at its bound accepted, one past refused with its position. */
static void compile_limits(void)
{
    char *s = repeat(" ", COND_MAX_LENGTH - strlen("tube == \"orders\""), "tube == \"orders\"");
    CHECK(strlen(s) == COND_MAX_LENGTH && eval(s), "issue 11: a condition of 4096 bytes is accepted");
    free(s);
    s = repeat(" ", COND_MAX_LENGTH + 1 - strlen("tube == \"orders\""), "tube == \"orders\"");
    refuses_at(s, "longer than 4096 bytes", 4097, "a condition of 4097 bytes");
    free(s);

    s = repeat("not ", 64, "tube == \"orders\"");
    CHECK(eval(s), "issue 11: 64 nested not are accepted (and an even count holds)");
    free(s);
    s = repeat("not ", 65, "tube == \"orders\"");
    refuses_at(s, "nesting deeper than 64", 257, "65 nested not");
    free(s);
    char *open = repeat("(", 64, "tube == \"orders\""), *close = repeat(")", 64, "");
    s = xasprintf("%s%s", open, close);
    CHECK(eval(s), "issue 11: 64 nested ( are accepted");
    free(s), free(open), free(close);
    open = repeat("(", 65, "tube == \"orders\""), close = repeat(")", 65, "");
    s = xasprintf("%s%s", open, close);
    refuses_at(s, "nesting deeper than 64", 65, "65 nested (");
    free(s), free(open), free(close);
    open = repeat("not (", 32, "tube == \"orders\""), close = repeat(")", 32, "");
    s = xasprintf("%s%s", open, close);
    CHECK(eval(s), "issue 11: not and ( count together: 32 of each accepted");
    free(s);
    s = xasprintf("not %s%s", open, close);
    refuses_at(s, "nesting deeper than 64", 1 + 4 + 32 * 5 - 1, "33 not and 32 (");
    free(s), free(open), free(close);

    const char *t = "tube == \"x\" or ";
    s = repeat(t, COND_MAX_TESTS - 1, "tube == \"orders\"");
    CHECK(eval(s), "issue 11: 128 tests are accepted");
    free(s);
    s = repeat(t, COND_MAX_TESTS, "tube == \"orders\"");
    refuses_at(s, "more than 128 tests", COND_MAX_TESTS * strlen(t) + 1, "129 tests");
    free(s);

    t = "tube ~ \"x\" or ";
    s = repeat(t, COND_MAX_REGEXES - 1, "tube ~ \"ord\"");
    CHECK(eval(s), "issue 11: 16 regexes are accepted");
    free(s);
    s = repeat(t, COND_MAX_REGEXES, "tube ~ \"ord\"");
    refuses_at(s, "more than 16 regular expressions", COND_MAX_REGEXES * strlen(t) + 8, "17 regexes");
    free(s);

    char *lit = repeat("r", COND_MAX_STRING, "");
    s = xasprintf("tube != \"%s\"", lit);
    CHECK(eval(s), "issue 11: a string of 1024 bytes is accepted");
    free(s);
    s = xasprintf("tube ~ \"%s\" or tube == \"orders\"", lit);
    CHECK(eval(s), "issue 11: a pattern of 1024 bytes is accepted");
    free(s), free(lit);
    lit = repeat("\\\"", COND_MAX_STRING, "");
    s = xasprintf("tube != \"%s\"", lit);
    CHECK(eval(s), "issue 11: the string limit counts unescaped bytes (1024 from 2048)");
    free(s), free(lit);
    lit = repeat("r", COND_MAX_STRING + 1, "");
    s = xasprintf("tube != \"%s\"", lit);
    refuses_at(s, "string longer than 1024 bytes", 9, "a string of 1025 bytes");
    free(s), free(lit);

    open = repeat("(", COND_RE_MAX_PARENS, "r"), close = repeat(")", COND_RE_MAX_PARENS, "\"");
    s = xasprintf("tube ~ \"%s%s", open, close);
    CHECK(eval(s), "issue 11: 32 parentheses nested in a pattern are accepted");
    free(s), free(open), free(close);
    open = repeat("(", COND_RE_MAX_PARENS + 1, "r"), close = repeat(")", COND_RE_MAX_PARENS + 1, "\"");
    s = xasprintf("tube ~ \"%s%s", open, close);
    refuses_at(s, "parentheses are too deeply nested", 8, "33 parentheses nested in a pattern");
    free(s), free(open), free(close);
    refuses_at("tube == \"x\" or subject ~ \"(?:(?:(?:a{100}){100}){100})\"", "regular expression is too large", 26,
               "a pattern that compiles to more than 64 KiB");
}

/* An evaluation that stops at a limit: -1 with the test's position. */
static void stops(const char *text, const char *why, size_t pos, const char *name)
{
    char at[64];
    uint64_t t0 = now_ms();
    int r = eval_rc(text);
    uint64_t ms = now_ms() - t0;
    CHECK_INT(r, -1, "issue 11: %s: an evaluation error, not true or false", name);
    CHECK_CONTAINS(last_err, why, "issue 11: %s: the error says %s", name, why);
    snprintf(at, sizeof at, "condition at position %zu: ", pos);
    CHECK_CONTAINS(last_err, at, "issue 11: %s: at the test's position %zu", name, pos);
    CHECK(!measuring() || ms < 5000, "issue 11: %s: within 5 s (%llu ms)", name, (unsigned long long)ms);
}

static void eval_limits(void)
{
    /* Catastrophic backtracking at the first start position: PCRE2's match
     * limit; a pattern may lower it but not raise it. */
    msg.subject = repeat("a", 40, "b");
    stops("subject ~ \"(a+)+$\"", "regex match limit exceeded", 1, "(a+)+$ against 40 a and b");
    stops("not subject ~ \"(a+)+$\"", "match limit", 5, "not of an error is an error");
    stops("subject !~ \"(a+)+$\"", "match limit", 1, "!~ on an error is an error");
    stops("tube == \"x\" or subject ~ \"(a+)+$\"", "match limit", 16, "or reaches the error");
    CHECK(eval("tube == \"orders\" or subject ~ \"(a+)+$\""), "issue 11: or stops at its first true test");
    stops("subject ~ \"(*LIMIT_MATCH=1000000000)(a+)+$\"", "match limit exceeded", 1,
          "(*LIMIT_MATCH=1000000000) does not raise the match limit (else: the step budget)");
    stops("subject ~ \"(*LIMIT_MATCH=10)(a+)+$\"", "match limit exceeded", 1, "(*LIMIT_MATCH=10) lowers it");
    free((char *)msg.subject);

    /* Depth: a recursion 4096 deep; raising the depth limit would reach
     * the heap limit instead. */
    msg.subject = repeat("a", 4096, "");
    stops("subject ~ \"(?(DEFINE)(?<x>a))(?&x)+\"", "matching depth limit exceeded", 1, "a recursion 4096 deep");
    stops("subject ~ \"(*LIMIT_DEPTH=1000000000)(?(DEFINE)(?<x>a))(?&x)+\"", "matching depth limit exceeded", 1,
          "(*LIMIT_DEPTH=1000000000) does not raise the depth limit");
    free((char *)msg.subject);

    /* Heap: 200 captures make each backtracking frame about 3 kB; 1,000
     * of them pass 2 MiB long before the depth limit. */
    msg.subject = repeat("a", 3000, "x");
    char *caps = repeat("()", 200, "(?:a|b)*$");
    char *t = xasprintf("subject ~ \"%s\"", caps);
    stops(t, "regex heap limit exceeded", 1, "200 captures 3,000 deep");
    free(t);
    t = xasprintf("subject ~ \"(*LIMIT_HEAP=1000000000)%s\"", caps);
    stops(t, "regex heap limit exceeded", 1, "(*LIMIT_HEAP=1000000000) does not raise the heap limit");
    free(t), free(caps);
    free((char *)msg.subject);

    /* Work spread over start positions, under PCRE2's per-start match
     * limit: PCRE2 alone took 151 s on 100,000 bytes; the step budget
     * stops it. */
    msg.subject = repeat("a", 100000, "");
    stops("subject ~ \"\\\\w*\\\\d\"", "evaluation exceeds 4000000 steps", 1, "\\w*\\d against 100,000 bytes");
    free((char *)msg.subject);
    msg.subject = repeat("aaaaaaaaaaaaaab", 4096 / 15, "");
    stops("subject ~ \"(a+)+$\"", "evaluation exceeds 4000000 steps", 1,
          "(a+)+$ against runs of 14 a: under the match limit at each start");
    free((char *)msg.subject);
    msg.subject = repeat("a", 4096, "");
    stops("tube == \"x\" or subject ~ \"(a)(?:(?=\\\\1*+$)a)*+x|y\"", "evaluation exceeds 4000000 steps", 16,
          "a lookahead that rescans the subject at each step (the slowest found)");
    free((char *)msg.subject);
    msg.subject = "Invoice 42";

    /* Each test costs 1 + L/64: 128 tests on a field of 1,999,936 bytes
     * cost 128 x 31,250 = 4,000,000 steps exactly; 64 more bytes do not fit. */
    size_t len = (size_t)(COND_MAX_STEPS / COND_MAX_TESTS - 1) * COND_STEP_BYTES;
    char *tube = repeat("o", len, ""), *tests = repeat("tube == \"x\" or ", COND_MAX_TESTS - 1, "tube == \"x\"");
    msg.tube = tube;
    CHECK_INT(eval_rc(tests), 0, "issue 11: 128 tests on %zu bytes: exactly 4,000,000 steps, accepted (%s)", len,
              last_err);
    free(tube);
    msg.tube = tube = repeat("o", len + COND_STEP_BYTES, "");
    stops(tests, "evaluation exceeds 4000000 steps", (COND_MAX_TESTS - 1) * strlen("tube == \"x\" or ") + 1,
          "128 tests on 64 bytes more: the 128th is past the budget");
    free(tube), free(tests);
    msg.tube = "orders";

    /* The recipients loop is charged per recipient: 1 + 1024/64 = 17 steps
     * each, 3,400,000 for the first test, the second runs out. */
    char **many = xcalloc(200000, sizeof *many), *long_rcpt = repeat("r", 1024, "");
    for (size_t i = 0; i < 200000; i++)
        many[i] = long_rcpt;
    msg.recipients = many;
    msg.n_recipients = 200000;
    stops("tube == \"x\" or recipient == \"nobody\" or recipient == \"x\"", "evaluation exceeds", 16 + 25,
          "two tests over 200,000 recipients of 1 kB");
    msg.recipients = rcpts;
    msg.n_recipients = 2;
    free(many), free(long_rcpt);

    /* A state object or array is compared as JSON text of at most 4096
     * bytes: {"k":"..."} is 8 bytes plus the string. */
    json_t *saved = msg.state;
    char *v = repeat("v", COND_MAX_JSON_TEXT - 8, "");
    msg.state = json_pack("{s{ss}}", "o", "k", v);
    CHECK(eval("state.o != \"x\""), "issue 11: a state object of 4096 bytes of JSON text compares");
    json_decref(msg.state);
    free(v);
    v = repeat("v", COND_MAX_JSON_TEXT - 7, "");
    msg.state = json_pack("{s{ss}}", "o", "k", v);
    stops("tube == \"x\" or state.o != \"x\"", "longer than 4096 bytes as JSON text", 16,
          "a state object of 4097 bytes of JSON text");
    CHECK(eval("state.o exists"), "issue 11: exists does not need the text");
    json_decref(msg.state);
    free(v);
    msg.state = saved;
}

/* The worst accepted conditions found, each of the maximal shape (4096
 * bytes, 64 levels deep, 128 tests, 16 regexes), on a maximal message
 * (1 MiB subject, header and state string, 1,000 recipients of 254
 * bytes): each ends in bounded time, within 64 MB. */
static char *worst_condition(const char *regex_test, const char *regex_field_test)
{
    char *open = repeat("(", COND_MAX_DEPTH, ""), *close = repeat(")", COND_MAX_DEPTH, "");
    /* 16 regex tests: the worst one first, the others on the big fields. */
    char *regexes = repeat(regex_field_test, COND_MAX_REGEXES - 1, "");
    char *cheap = repeat("subject==\"x\" or ", COND_MAX_TESTS - COND_MAX_REGEXES - 1, "");
    char *body = xasprintf("%s%s or %s%sheader_from==\"x\"%s", open, regex_test, regexes, cheap, close);
    size_t n = strlen(body);
    char *pad = repeat(" ", n < COND_MAX_LENGTH ? COND_MAX_LENGTH - n : 0, "");
    char *text = xasprintf("%s%s", body, pad);
    free(open), free(close), free(regexes), free(cheap), free(body), free(pad);
    return text;
}

struct outcome {
    bool compiled;
    int rc;
    long ms, kib;
    char why[400];
};

/* Compiles and evaluates text on msg in a child process, so that each
 * case's peak RSS is its own: the child's growth of ru_maxrss. */
static struct outcome run_isolated(const char *text)
{
    struct outcome o = {false, -9, 0, 0, "the child died"};
    int fd[2];
    if (pipe(fd) != 0)
        return o;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct outcome c = {false, -2, 0, 0, ""};
        struct rusage before, after;
        close(fd[0]);
        getrusage(RUSAGE_SELF, &before);
        uint64_t t0 = now_ms();
        struct cond *cd = cond_compile(text, c.why, sizeof c.why);
        if (cd) {
            c.compiled = true;
            c.rc = cond_eval(cd, &msg, c.why, sizeof c.why);
        }
        c.ms = (long)(now_ms() - t0);
        getrusage(RUSAGE_SELF, &after);
        c.kib = after.ru_maxrss - before.ru_maxrss;
        cond_free(cd);
        _exit(write(fd[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    if (pid > 0 && read(fd[0], &o, sizeof o) != (ssize_t)sizeof o)
        snprintf(o.why, sizeof o.why, "no answer from the child");
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return o;
}

static void worst_case(void)
{
    static const struct {
        const char *name, *test, *field_test, *subject;
    } cases[] = {
        {"heap: 480 captures, depth up to the limit", NULL, "recipient~\"^x\" or ", "4000"},
        {"time: a lookahead rescanning the subject", "subject~\"(a)(?:(?=\\\\1*+$)a)*+x|y\"",
         "recipient~\"^x\" or ", "4096"},
        {"time: catastrophic backtracking under the match limit", "subject~\"(a+)+$\"", "recipient~\"^x\" or ",
         "runs"},
        {"time: big fields everywhere", "subject~\"\\\\w*\\\\d\"", "header_from~\"[^x]*+x|y\" or ", "1M"},
    };
    size_t big = 1 << 20;
    char *subject_1m = repeat("a", big, ""), *header = repeat("b", big, ""), *s4000 = repeat("a", 3999, "x"),
         *s4096 = repeat("a", 4096, ""), *runs = repeat("aaaaaaaaaaaaaab", 4096 / 15, ""), *r254 = repeat("r", 254, "");
    char **many = xcalloc(1000, sizeof *many);
    for (size_t i = 0; i < 1000; i++)
        many[i] = r254;
    json_t *saved = msg.state;
    msg.state = json_pack("{ss}", "s", subject_1m);
    msg.header_from = header;
    msg.recipients = many;
    msg.n_recipients = 1000;
    char *caps = repeat("()", 480, "(?:a|b)*$\"");
    char *heap_test = xasprintf("subject~\"%s", caps);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *subject = cases[i].subject;
        msg.subject = strcmp(subject, "4000") == 0 ? s4000 : strcmp(subject, "4096") == 0 ? s4096
                      : strcmp(subject, "runs") == 0 ? runs : subject_1m;
        char *text = worst_condition(cases[i].test ? cases[i].test : heap_test, cases[i].field_test);
        CHECK(strlen(text) == COND_MAX_LENGTH, "issue 11: worst case \"%s\" is 4096 bytes (%zu)", cases[i].name,
              strlen(text));
        struct outcome o = run_isolated(text);
        printf("# worst case \"%s\": rc %d (%s), %ld ms, max RSS +%ld KiB\n", cases[i].name, o.rc, o.why, o.ms,
               o.kib);
        CHECK(o.compiled, "issue 11: worst case \"%s\" is accepted (%s)", cases[i].name, o.why);
        CHECK(o.rc == 0 || o.rc == 1 || o.rc == -1, "issue 11: worst case \"%s\" ends", cases[i].name);
        if (measuring()) {
            CHECK(o.ms < 5000, "issue 11: worst case \"%s\": within 5 s (%ld ms)", cases[i].name, o.ms);
            CHECK(o.kib < 64 * 1024, "issue 11: worst case \"%s\": max RSS grows less than 64 MB (%ld KiB)",
                  cases[i].name, o.kib);
        }
        free(text);
    }
    free(heap_test), free(caps);
    json_decref(msg.state);
    msg.state = saved;
    msg.subject = "Invoice 42";
    msg.header_from = "Shop <shop@example.com>";
    msg.recipients = rcpts;
    msg.n_recipients = 2;
    free(many), free(subject_1m), free(header), free(s4000), free(s4096), free(runs), free(r254);
}

int main(void)
{
    setup_message();
    language();
    dialect();
    issue_inputs();
    compile_limits();
    eval_limits();
    worst_case();
    json_decref(msg.state);
    return unit_done();
}
