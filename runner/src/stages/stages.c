/* stages/stages.c — the table of built-in stages. */
#include "stages/stages.h"

#include "lib/log.h"
#include "lib/util.h"

#include <stdio.h>
#include <string.h>

static const struct pepsi_stage_def *const builtins[] = {&stage_pass, &stage_exec, &stage_discard, &stage_http,
                                                           &stage_if, &stage_edit_settings};

const struct pepsi_stage_def *stages_find(const char *name)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i]->program, name) == 0)
            return builtins[i];
    return NULL;
}

const struct pepsi_stage_def *stages_builtin_of(const char *program)
{
    const char *base = strrchr(program, '/');
    base = base ? base + 1 : program;
    return strncmp(base, "pepsi-stage-", 12) == 0 ? stages_find(base + 12) : NULL;
}

const char *stages_builtin_names(void)
{
    return "pass, exec, discard, http, if, edit-settings";
}

int stages_run_worker(const char *name, const char *config_path)
{
    const struct pepsi_stage_def *def = stages_find(name);
    if (def == NULL) {
        fprintf(stderr, "pepsi-runner: no built-in stage \"%s\" (there are: %s)\n", name,
                stages_builtin_names());
        return EXIT_USAGE;
    }
    pepsi_sdk_builtins(stages_builtin_of); /* the stages this binary may fuse (D-126, D-128) */
    return pepsi_worker_main(def, config_path);
}
