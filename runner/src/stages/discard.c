/* stages/discard.c — pepsi-stage-discard: drops the message (finishes it
 * without passing it on), logging what was dropped at debug level. */
#include "stages/stages.h"

#include "lib/log.h"

static void discard_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    log_debug(pepsi_worker_stage(w), "discarding message %lld", (long long)m->id);
    out->kind = PEPSI_FINISH;
}

const struct pepsi_stage_def stage_discard = {
    .program = "discard",
    .fusion_default = true,  /* D-127 */
    .loads_body = false,
    .skip_load = true,      /* the outcome does not depend on the message */
    .own_keys = NULL,
    .setup = NULL,
    .run = discard_run,
    .teardown = NULL,
};
