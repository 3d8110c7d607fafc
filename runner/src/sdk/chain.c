/* sdk/chain.c — one pass over a message: the worker's stage, then the
 * successors fused into it (D-126..D-136).
 *
 * A successor is fused only if all hold: [pepsi] ALLOW_FUSION; its section
 * says FUSION = yes (or leaves it to the program's default, D-127); its
 * PROGRAM is a stage built into this binary (D-128); it needs no column
 * the pass did not load (D-126), or says it can run on the metadata of
 * this message (D-131); its recipients need no split and its per-address
 * settings are usable (a hop where either applies goes through the
 * dispatcher, D-133); the chain is shorter than the depth cap (D-134).
 * Otherwise the advance is an ordinary hop: the outcome is the same
 * either way (D-130). The pass reports each stage it ran with its time on
 * the status line (D-135), and keeps the fused stages in order (via): the
 * one write that ends the chain counts each as a hop (issue 12). No
 * built-in stage rewrites the envelope, headers or body, so D-133's
 * rewrite rule never ends a chain here. */
#include "sdk/chain.h"
#include "sdk/options.h"

#include "lib/log.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct pepsi_stage_def *(*builtin_find)(const char *program);

void pepsi_sdk_builtins(const struct pepsi_stage_def *(*find)(const char *program))
{
    builtin_find = find;
}

int sdk_load_level(const struct pepsi_stage_def *d)
{
    return d->skip_load ? SDK_LOAD_NONE : d->loads_body ? SDK_LOAD_BODY : SDK_LOAD_META;
}

/* The built-in behind a PROGRAM, or NULL (a stage program of its own). */
static const struct pepsi_stage_def *builtin_of(const char *program)
{
    return builtin_find ? builtin_find(program) : NULL;
}

static bool fusion_wanted(const struct stage_conf *section, const struct pepsi_stage_def *def)
{
    return section->fusion < 0 ? def->fusion_default : section->fusion == 1;
}

/* Sets up a successor's context; false (logged once) when it cannot run here. */
static bool fused_setup(struct pepsi_worker *f)
{
    char err[512];
    if (f->def == NULL || !fusion_wanted(f->section, f->def))
        return false;
    if (sdk_check_own_keys(f) != 0) {
        log_warning(f->core->fused_by, "stage %s is not fused: its section has keys its program does not know",
                    f->stage);
        return false;
    }
    if (f->def->setup && f->def->setup(f, err, sizeof err) != 0) {
        log_warning(f->core->fused_by, "stage %s is not fused: %s", f->stage, err);
        return false;
    }
    return true;
}

/* The context of stage name when it may be fused at all; NULL otherwise.
 * Made on first use and kept for the worker's life. */
static struct pepsi_worker *fused_ctx(struct pepsi_worker *w, const char *name)
{
    struct sdk_core *core = w->core;
    for (struct pepsi_worker *f = core->fused; f; f = f->next)
        if (strcmp(f->stage, name) == 0)
            return f->usable ? f : NULL;
    const struct stage_conf *section = conf_stage(&core->conf, name);
    if (section == NULL)
        return NULL;
    struct pepsi_worker *f = xcalloc(1, sizeof *f);
    f->core = core;
    f->section = section;
    f->stage = section->name;
    f->def = builtin_of(section->program);
    f->next = core->fused;
    core->fused = f;
    f->usable = fused_setup(f);
    return f->usable ? f : NULL;
}

void sdk_fusion_free(struct sdk_core *core)
{
    while (core->fused) {
        struct pepsi_worker *f = core->fused;
        core->fused = f->next;
        if (f->usable && f->def->teardown)
            f->def->teardown(f);
        free(f);
    }
}

static void report_add(struct sdk_pass *p, const char *stage, uint64_t usec)
{
    if (p->n_report == SDK_REPORT_MAX)
        return;
    snprintf(p->report[p->n_report].stage, sizeof p->report[0].stage, "%s", stage);
    p->report[p->n_report++].usec = (int64_t)usec;
}

/* Runs one stage on the message and records its time. */
static void run_stage(struct pepsi_worker *s, struct pepsi_message *m, struct sdk_pass *p)
{
    char why[sizeof p->out.reason];
    memset(&p->out, 0, sizeof p->out);
    p->out.kind = PEPSI_ADVANCE;
    p->at = s;
    m->stage = s->stage;
    uint64_t t0 = now_us();
    if (sdk_check_overrides(s, m, why, sizeof why) != 0) {
        p->out.kind = PEPSI_FAIL; /* D-114: the correspondent's, not the host's */
        snprintf(p->out.reason, sizeof p->out.reason, "%s", why);
    } else {
        s->def->run(s, m, &p->out);
    }
    report_add(p, s->stage, now_us() - t0);
}

/* Keeps a stage's state patch for the final write and shows it to the
 * next fused stage. */
static void absorb_patch(struct sdk_pass *p, struct pepsi_message *m)
{
    if (p->out.state_patch == NULL)
        return;
    if (p->patch == NULL)
        p->patch = json_object();
    json_object_update(p->patch, p->out.state_patch);
    if (m->state)
        json_object_update(m->state, p->out.state_patch);
    json_decref(p->out.state_patch);
    p->out.state_patch = NULL;
}

/* The successor the current outcome advances to, if it may be fused here. */
static struct pepsi_worker *next_fusable(struct pepsi_worker *w, const struct sdk_pass *p,
                                         const struct pepsi_message *m, int level)
{
    const char *next = p->out.next ? p->out.next : p->at->section->next;
    if (next == NULL || !w->core->conf.allow_fusion)
        return NULL;
    struct pepsi_worker *f = fused_ctx(w, next);
    if (f == NULL)
        return NULL;
    int need = sdk_load_level(f->def);
    if (need > level) {
        bool meta_ok = level >= SDK_LOAD_META && f->def->runs_on_metadata && f->def->runs_on_metadata(f, m);
        if (!meta_ok)
            return NULL;
    }
    json_t *groups = sdk_split_groups(m, f->stage);
    if (groups) {
        json_decref(groups);
        return NULL;
    }
    char why[512];
    if (sdk_check_overrides(f, m, why, sizeof why) != 0)
        return NULL; /* its own worker fails the message, with the full story */
    return f;
}

void sdk_pass(struct pepsi_worker *w, struct pepsi_message *m, int level, struct sdk_pass *p)
{
    memset(p, 0, sizeof *p);
    run_stage(w, m, p);
    /* A result that changes settings is committed where it was decided. */
    for (int depth = 0; depth < SDK_FUSION_DEPTH && p->out.kind == PEPSI_ADVANCE && !p->out.settings_changes;
         depth++) {
        struct pepsi_worker *f = next_fusable(w, p, m, level);
        if (f == NULL)
            break;
        absorb_patch(p, m);
        p->via.stage[p->via.n++] = f->stage;
        run_stage(f, m, p);
    }
    /* The final write carries every fused stage's patch. */
    if (p->patch) {
        if (p->out.state_patch)
            json_object_update(p->patch, p->out.state_patch);
        json_decref(p->out.state_patch);
        p->out.state_patch = p->patch;
        p->patch = NULL;
    }
    m->stage = w->stage;
}
