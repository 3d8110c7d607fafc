/* sdk/chain.h — a pass (chain.c): a worker's stage run on a message, then
 * every successor that may be fused into the same pass (D-126, D-134).
 * Owns: the fused stages' contexts (in struct sdk_core). Uses:
 * sdk/options.h, sdk/sdk_internal.h (the core). */
#ifndef PEPSI_SDK_CHAIN_H
#define PEPSI_SDK_CHAIN_H

#include "sdk/sdk_internal.h"

#include "lib/proto.h"

#include <jansson.h>
#include <stddef.h>

/* What a stage needs loaded: nothing, the metadata, or the body too. */
int sdk_load_level(const struct pepsi_stage_def *d);

#define SDK_FUSION_DEPTH 8                  /* a longer chain is ended by a committed hop (D-134) */
#define SDK_REPORT_MAX (SDK_FUSION_DEPTH + 1)

/* The stages a pass fused behind the worker's own, in order: each is one
 * more hop of the message (a chain of k stages is k hops, issue 12). */
struct sdk_via {
    const char *stage[SDK_FUSION_DEPTH];
    size_t n;
};

struct sdk_pass {
    struct pepsi_outcome out;               /* what the last stage run decided */
    struct pepsi_worker *at;                /* that stage */
    struct sdk_via via;                     /* the fused stages run after the worker's own */
    json_t *patch;                          /* state patches of the stages before it */
    struct proto_report_entry report[SDK_REPORT_MAX];
    size_t n_report;
};

/* Runs w's stage on m, then every successor that may be fused (D-126);
 * level is what was loaded (SDK_LOAD_*). */
void sdk_pass(struct pepsi_worker *w, struct pepsi_message *m, int level, struct sdk_pass *p);

/* Tears down the fused stages' contexts. */
void sdk_fusion_free(struct sdk_core *core);

#endif
