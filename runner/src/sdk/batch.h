/* sdk/batch.h — ids taken in batches (batch.c): a stage that loads no
 * body gets up to QUEUE_LIMIT ids at once, loaded with one query and
 * committed with one call (D-69..D-73); and what each id is answered.
 * Owns: nothing kept. Uses: sdk/commit.h, sdk/chain.h, sdk/sdk_internal.h,
 * lib/ (pgerr, proto, log, util), libpq, jansson. */
#ifndef PEPSI_SDK_BATCH_H
#define PEPSI_SDK_BATCH_H

#include "sdk/chain.h"
#include "sdk/sdk_internal.h"

#include "lib/proto.h"

#include <stddef.h>
#include <stdint.h>

/* What a message gets on its status line. */
struct sdk_result {
    int status;
    struct proto_report_entry report[SDK_REPORT_MAX];
    size_t n_report;
};

/* Takes more ids already waiting on stdin, without blocking, up to max
 * (D-69). Returns how many, or -1 on an unreadable id. */
int sdk_gather_ids(struct pepsi_worker *w, int64_t *ids, size_t max);

/* A batch of ids of a stage that loads no body: one load with = ANY, the
 * pass on each, one commit call (D-70, D-71); res[i] for ids[i]. */
void sdk_run_batch(struct pepsi_worker *w, const int64_t *ids, size_t n, struct sdk_result *res);

#endif
