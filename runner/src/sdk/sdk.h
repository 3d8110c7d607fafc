/* sdk/sdk.h — the worker SDK as the stages built into pepsi-runner use it:
 * the public API (sdk/pepsi-worker.h, installed for stage programs of their
 * own: see there what the SDK owns and what a stage owns) and what only
 * the runner's own stages and commands need, which takes the parsed
 * configuration (lib/conf.h) and so is not part of libpepsi-worker's
 * exports: a stage's section, the whole file, the per-address settings
 * checks of `pepsi-runner settings` and edit-settings, and the table of
 * built-ins a worker may fuse (D-126, D-128).
 * Owns: nothing kept. Uses: sdk/pepsi-worker.h, lib/conf.h. */
#ifndef PEPSI_SDK_SDK_H
#define PEPSI_SDK_SDK_H

#include "sdk/pepsi-worker.h"

#include "lib/conf.h"

/* The worker's section and the whole file (file + database overlay). */
const struct stage_conf *pepsi_worker_section(const struct pepsi_worker *w);
const struct conf *pepsi_worker_conf(const struct pepsi_worker *w);

/* Whether OPTION = VALUE may be set per address for stage (of c, whose
 * PROGRAM is builtin, or NULL for a program of its own): 0, or -1 with
 * why. `pepsi-runner settings set` asks before writing (D-114). */
int pepsi_check_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                        const struct pepsi_stage_def *builtin, char *why, size_t cap);

/* Whether an end user may set OPTION per address for stage (of c, whose
 * PROGRAM is builtin, or NULL) with a settings control message: the
 * option must be on the stage's allow-list (the section's USER_OPTIONS;
 * without it, builtin's user_keys, or nothing for a program of its own)
 * and not operator-only; a value (NULL: a deletion) must then pass
 * pepsi_check_setting. 0, or -1 with why (issue 11). */
int pepsi_check_user_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                             const struct pepsi_stage_def *builtin, char *why, size_t cap);

/* The built-in stages a worker may fuse (D-126, D-128): the multi-call
 * binary registers, before pepsi_worker_main, how to find the built-in
 * behind a PROGRAM; a stage program of its own registers nothing and never
 * fuses. */
void pepsi_sdk_builtins(const struct pepsi_stage_def *(*find)(const char *program));

#endif
