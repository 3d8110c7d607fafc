/* sdk/options.h — per-address settings as a worker reads them (options.c):
 * a message's overrides of its stage's options, their checks, and the
 * groups of recipients whose overrides differ (D-114, D-123..D-125).
 * Owns: nothing kept. Uses: sdk/sdk_internal.h (the core), jansson. */
#ifndef PEPSI_SDK_OPTIONS_H
#define PEPSI_SDK_OPTIONS_H

#include "sdk/sdk_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether the message is of local origin (state.local_origin). */
bool sdk_local_origin(const struct pepsi_message *m);

/* The overrides of stage for the message's correspondent, or NULL. */
json_t *sdk_message_overrides(const struct pepsi_message *m, const char *stage);

/* 0 when the message's overrides for w's stage are usable, else -1 with
 * why: a permanent error of that message (D-114). */
int sdk_check_overrides(const struct pepsi_worker *w, const struct pepsi_message *m, char *why, size_t cap);

/* The recipients grouped by their overrides for stage when they differ
 * (a JSON array of arrays, new reference), else NULL (D-124, D-125). */
json_t *sdk_split_groups(const struct pepsi_message *m, const char *stage);

#endif
