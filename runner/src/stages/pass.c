/* stages/pass.c — pepsi-stage-pass: advances a message to NEXT, or
 * finishes it when the section has none. The no-op stage of benchmarks.
 *
 * PEPSI_TEST_PASS_GROW_KB (tests only): each message keeps that many KiB
 * more, written, until the worker exits, so that the e2e test of recycling
 * on memory growth (issue 19, MAX_RSS_GROWTH) has a built-in that grows. */
#include "stages/stages.h"

#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

struct grown {
    struct grown *next;
};

static size_t grow_bytes;
static struct grown *grown;

static int pass_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    (void)w;
    (void)err;
    (void)errlen;
    const char *kb = getenv("PEPSI_TEST_PASS_GROW_KB");
    grow_bytes = kb ? (size_t)strtoul(kb, NULL, 10) * 1024 : 0;
    return 0;
}

static void pass_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    (void)w;
    (void)m;
    if (grow_bytes >= sizeof(struct grown)) {
        struct grown *g = xmalloc(grow_bytes);
        memset(g, 1, grow_bytes); /* resident, not just reserved */
        g->next = grown;
        grown = g;
    }
    out->kind = PEPSI_ADVANCE; /* to the section's NEXT; finish when none */
}

static void pass_teardown(struct pepsi_worker *w)
{
    (void)w;
    while (grown) {
        struct grown *g = grown;
        grown = g->next;
        free(g);
    }
}

const struct pepsi_stage_def stage_pass = {
    .program = "pass",
    .fusion_default = true,  /* D-127 */
    .loads_body = false,
    .skip_load = true,      /* the outcome does not depend on the message */
    .own_keys = NULL,
    .setup = pass_setup,
    .run = pass_run,
    .teardown = pass_teardown,
};
