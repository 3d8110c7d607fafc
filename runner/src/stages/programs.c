/* stages/programs.c — start-up checks of every stage's PROGRAM (issue 15):
 * that it exists and is executable where the dispatcher will look for it,
 * and that a built-in stage's section holds only keys it knows. Both were
 * found only when the first message reached the stage (a worker that
 * cannot start, or that refuses its section); now `serve` refuses to start
 * (78) naming the file and line. */
#include "stages/stages.h"

#include "lib/conf_key.h"
#include "lib/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path is a regular file we may execute, else an errno value. */
static int executable(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    if (!S_ISREG(st.st_mode))
        return EISDIR;
    return access(path, X_OK) == 0 ? 0 : errno;
}

/* Where the dispatcher finds PROGRAM (pool.c resolve_program, D-22): a
 * path as given; a pepsi-stage-* next to the runner when it exists there;
 * else the first executable of PATH, as execvp does. 0, or the errno of
 * the last candidate tried. */
static int program_found(const char *program, const char *self_dir)
{
    if (strchr(program, '/'))
        return executable(program);
    if (strncmp(program, "pepsi-stage-", 12) == 0 && self_dir) {
        char *full = xasprintf("%s/%s", self_dir, program);
        int e = executable(full);
        free(full);
        if (e == 0)
            return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    int e = ENOENT;
    for (const char *at = path; at;) {
        const char *colon = strchr(at, ':');
        size_t n = colon ? (size_t)(colon - at) : strlen(at);
        char *full = xasprintf("%.*s%s%s", (int)n, at, n ? "/" : "", program);
        int this_e = executable(full);
        free(full);
        if (this_e == 0)
            return 0;
        if (this_e != ENOENT || e == ENOENT)
            e = this_e;
        at = colon ? colon + 1 : NULL;
    }
    return e;
}

static void where(const struct conf *c, int line, char *out, size_t cap)
{
    if (line > 0)
        snprintf(out, cap, "%s:%d", c->path, line);
    else
        snprintf(out, cap, "%s", line < 0 ? "pepsi.config_override" : c->path);
}

static bool def_has_key(const struct pepsi_stage_def *def, const char *key)
{
    for (const char *const *k = def->own_keys; k && *k; k++)
        if (strcmp(*k, key) == 0)
            return true;
    return false;
}

/* A key of a built-in's section that the built-in does not know. */
static int check_own_keys(const struct conf *c, const struct stage_conf *s,
                          const struct pepsi_stage_def *def, char *err, size_t errlen)
{
    char at[512];
    for (size_t i = 0; i < s->n_own; i++) {
        const struct conf_kv *kv = &s->own[i];
        if (def_has_key(def, kv->key))
            continue;
        const char *near = NULL;
        for (const char *const *k = def->own_keys; k && *k && !near; k++)
            if (conf_key_distance(kv->key, *k) <= (strlen(*k) <= 4 ? 1 : 2))
                near = *k;
        where(c, kv->line, at, sizeof at);
        snprintf(err, errlen, "%s: key \"%s\" in [stage-%s]: not a key of pepsi-stage-%s%s%s%s", at,
                 kv->key, s->name, def->program, near ? " (did you mean " : "", near ? near : "",
                 near ? "?)" : "");
        return -1;
    }
    return 0;
}

int stages_check_programs(const struct conf *c, const char *self_dir, char *err, size_t errlen)
{
    char at[512];
    for (size_t i = 0; i < c->n_stages; i++) {
        const struct stage_conf *s = &c->stages[i];
        int e = program_found(s->program, self_dir);
        if (e != 0) {
            where(c, s->program_line, at, sizeof at);
            snprintf(err, errlen, "%s: key \"PROGRAM\" in [stage-%s]: \"%s\" %s (%s)", at, s->name,
                     s->program,
                     e == ENOENT ? (strchr(s->program, '/') ? "does not exist" : "is not found in PATH")
                                 : "cannot be executed",
                     strerror(e));
            return -1;
        }
        const struct pepsi_stage_def *def = stages_builtin_of(s->program);
        if (def && check_own_keys(c, s, def, err, errlen) != 0)
            return -1;
    }
    return 0;
}
