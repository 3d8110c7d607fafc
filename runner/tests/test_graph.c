/* test_graph.c — the stage graph's cycles that no message can leave
 * (issue 12): edges NEXT, BOUNCE_STAGE and an if's THEN/ELSE; a cycle
 * with a way out (a stage that can finish, an edge out of it) is no trap. */
#include "lib/conf.h"
#include "dispatch/graph.h"
#include "unit.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASS(name, next) "[stage-" name "]\nPROGRAM = pepsi-stage-pass\n" next
#define TO(stage) "NEXT = " stage "\n"

/* The traps of a configuration as text: "a,b; c" (stage names, traps in
 * file order), "" for none, "ERROR" when it does not load. */
static char *traps_of(const char *text)
{
    struct conf c;
    char err[512];
    if (conf_load_string(text, "graph.conf", &c, err, sizeof err) != 0) {
        printf("#   config error: %s\n", err);
        return xstrdup("ERROR");
    }
    struct graph_trap *t;
    size_t n = graph_traps(&c, &t);
    char buf[4096] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < t[i].n; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", k ? "," : i ? "; " : "",
                                    c.stages[t[i].stages[k]].name);
    graph_traps_free(t, n);
    conf_free(&c);
    return xstrdup(buf);
}

static void expect(const char *text, const char *want, const char *name)
{
    char *got = traps_of(text);
    CHECK_STR(got, want, "%s", name);
    free(got);
}

static void test_traps(void)
{
    expect(PASS("in", TO("mid")) PASS("mid", TO("out")) PASS("out", ""), "",
           "issue 12: a straight 3-stage pipeline has no cycle");
    expect(PASS("loop", TO("loop")), "loop", "issue 12: a stage whose NEXT is itself is a trap");
    expect(PASS("in", TO("loop")) PASS("loop", TO("loop")), "loop",
           "issue 12: a self-loop behind another stage is a trap, the stage before it is not");
    expect(PASS("a", TO("b")) PASS("b", TO("c")) PASS("c", TO("a")), "a,b,c", "issue 12: a three-stage cycle is a trap");
    expect(PASS("a", TO("b")) PASS("b", TO("a")) PASS("x", TO("x")), "a,b; x", "two traps, in file order");
    expect("[stage-d]\nPROGRAM = pepsi-stage-discard\nNEXT = a\n" PASS("a", TO("d")), "",
           "a cycle through a discard stage has a way out (it finishes every message)");
}

static void test_if(void)
{
    /* poll -> wait -> poll until the condition holds: the classic legit loop */
    expect("[stage-poll]\nPROGRAM = pepsi-stage-if\nCONDITION = state.done exists\nTHEN = done\nELSE = wait\n"
           PASS("wait", TO("poll")) PASS("done", ""),
           "", "issue 12: an if that loops until its condition holds (THEN leads out) is no trap");
    expect("[stage-x]\nPROGRAM = pepsi-stage-if\nCONDITION = state.n > 1\nTHEN = x\n", "",
           "an if without ELSE and NEXT finishes a message whose condition is false: no trap");
    expect("[stage-a]\nPROGRAM = /usr/lib/pepsi/pepsi-stage-if\nCONDITION = state.n > 1\nTHEN = b\nELSE = a\n"
           PASS("b", TO("a")),
           "a,b", "issue 12: an if whose THEN and ELSE both stay in the cycle is a trap (PROGRAM by path too)");
    expect("[stage-a]\nPROGRAM = pepsi-stage-if\nCONDITION = state.n > 1\nTHEN = a\nNEXT = a\n", "a",
           "issue 12: without ELSE an if goes to NEXT: THEN and NEXT both itself is a trap");
    expect("[stage-a]\nPROGRAM = pepsi-stage-if\nCONDITION = state.n > 1\nTHEN = gone\nELSE = a\n", "",
           "a THEN naming no stage is a way out (the worker refuses to start; nothing loops)");
    expect("[stage-a]\nPROGRAM = pepsi-stage-pass\nNEXT = a\nTHEN = b\n" PASS("b", ""), "a",
           "THEN of a stage that is not an if is no edge");
}

static void test_bounce(void)
{
    expect("[stage-a]\nPROGRAM = pepsi-stage-exec\nCOMMAND = true\nNEXT = a\nBOUNCE_STAGE = z\n" PASS("z", ""), "",
           "issue 12: a BOUNCE_STAGE out of the cycle is a way out");
    expect(PASS("a", TO("b")) "[stage-b]\nPROGRAM = pepsi-stage-exec\nCOMMAND = true\nNEXT = a\nBOUNCE_STAGE = a\n",
           "a,b", "issue 12: a BOUNCE_STAGE back into the cycle is no way out");
    expect(PASS("a", "BOUNCE_STAGE = b\n") PASS("b", TO("a")), "",
           "a cycle made only with a bounce, but a stage that can finish: no trap");
}

static void test_own_programs(void)
{
    expect("[stage-mine]\nPROGRAM = /opt/bin/my-stage\nNEXT = mine\n", "mine",
           "issue 12: a program of its own is taken to follow its NEXT");
    struct conf c;
    char err[256];
    int rc = conf_load_string("[stage-mine]\nPROGRAM = /opt/bin/my-stage\nNEXT = mine\n" PASS("a", TO("a")),
                              "graph.conf", &c, err, sizeof err);
    CHECK_INT(rc, 0, "loads");
    if (rc == 0) {
        CHECK_INT((int64_t)graph_warn_traps(&c, "config"), 2, "issue 12: graph_warn_traps warns once per trap");
        conf_free(&c);
    }
}

/* Thousands of stages in one cycle: no recursion to run out of stack. */
static void test_big(void)
{
    enum { N = 5000 };
    size_t cap = (size_t)N * 64, len = 0;
    char *text = xmalloc(cap);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len, "[stage-s%d]\nPROGRAM = pepsi-stage-pass\nNEXT = s%d\n", i,
                                (i + 1) % N);
    struct conf c;
    char err[256];
    int rc = conf_load_string(text, "big.conf", &c, err, sizeof err);
    free(text);
    CHECK_INT(rc, 0, "a file of 5,000 stages loads");
    if (rc != 0)
        return;
    struct graph_trap *t;
    size_t n = graph_traps(&c, &t);
    CHECK(n == 1 && t[0].n == N, "issue 12: a cycle through 5,000 stages is one trap of 5,000");
    if (n == 1) {
        char names[256];
        graph_trap_names(&c, &t[0], names, sizeof names);
        CHECK_CONTAINS(names, "\"s0\", \"s1\"", "the names start with the first stages");
        char full[2048];
        graph_trap_names(&c, &t[0], full, sizeof full);
        CHECK_CONTAINS(full, "\"s15\" and 4984 more", "and name 16 of them, then how many more");
        CHECK(strlen(names) < sizeof names, "a short buffer is cut, still terminated");
    }
    graph_traps_free(t, n);
    conf_free(&c);
}

int main(void)
{
    test_traps();
    test_if();
    test_bounce();
    test_own_programs();
    test_big();
    return unit_done();
}
