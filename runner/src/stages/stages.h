/* stages/stages.h — the stages built into the pepsi-runner binary, run as
 * `pepsi-stage-NAME worker` (a link to pepsi-runner) or
 * `pepsi-runner stage NAME worker`.
 * Owns: the table of built-in stages. Uses: sdk/sdk.h, lib/ (log,
 * util); every stage is a program of the SDK, nothing from ingress/. */
#ifndef PEPSI_STAGES_STAGES_H
#define PEPSI_STAGES_STAGES_H

#include "sdk/sdk.h"

extern const struct pepsi_stage_def stage_pass;     /* advance to NEXT, or finish */
extern const struct pepsi_stage_def stage_discard;  /* finish (drop) the message */
extern const struct pepsi_stage_def stage_exec;     /* run COMMAND on the body */
extern const struct pepsi_stage_def stage_http;     /* POST the body to URL (libcurl) */
extern const struct pepsi_stage_def stage_if;       /* route on a condition (stages/cond.h) */
extern const struct pepsi_stage_def stage_edit_settings; /* apply a settings control message */

/* The built-in stage called name, or NULL. */
const struct pepsi_stage_def *stages_find(const char *name);

/* The built-in behind a PROGRAM "pepsi-stage-NAME" (in any directory), or NULL. */
const struct pepsi_stage_def *stages_builtin_of(const char *program);

/* Start-up checks of c's stages (issue 15): every PROGRAM exists and is
 * executable where the dispatcher looks for it (self_dir for pepsi-stage-*,
 * then PATH), and a built-in's section holds only its own keys. 0, or -1
 * with "FILE:LINE: key ..." in err. */
int stages_check_programs(const struct conf *c, const char *self_dir, char *err, size_t errlen);

/* "pass, exec, discard": for usage messages. */
const char *stages_builtin_names(void);

/* Runs built-in stage name as a worker; returns the exit status (64 when
 * there is no such stage). */
int stages_run_worker(const char *name, const char *config_path);

#endif
