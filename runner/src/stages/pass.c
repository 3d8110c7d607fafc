/* stages/pass.c — pepsi-stage-pass: advances a message to NEXT, or
 * finishes it when the section has none. The no-op stage of benchmarks. */
#include "stages/stages.h"

static void pass_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    (void)w;
    (void)m;
    out->kind = PEPSI_ADVANCE; /* to the section's NEXT; finish when none */
}

const struct pepsi_stage_def stage_pass = {
    .program = "pass",
    .fusion_default = true,  /* D-127 */
    .loads_body = false,
    .skip_load = true,      /* the outcome does not depend on the message */
    .own_keys = NULL,
    .setup = NULL,
    .run = pass_run,
    .teardown = NULL,
};
