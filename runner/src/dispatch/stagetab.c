/* dispatch/stagetab.c — see stagetab.h. */
#include "dispatch/stagetab.h"

#include <stdio.h>

#include "dispatch/graph.h"
#include "lib/overlay.h"
#include "lib/util.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>

struct stagetab *stagetab_load(const char *path, const PGresult *res, struct pool_env *env,
                               char *err, size_t errlen)
{
    struct stagetab *t = xcalloc(1, sizeof *t);
    if (overlay_apply(path, res, &t->conf, err, errlen) != 0) {
        free(t);
        return NULL;
    }
    /* Issue 17: the beanstalkd frontend's pull stage, which no runner
     * claims; refused from the overlay too (the file's is refused earlier,
     * main.c). */
    if (conf_stage(&t->conf, "beanstalk") != NULL) {
        snprintf(err, errlen, "stage \"beanstalk\" (from %s): the stage name \"beanstalk\" is reserved for the "
                 "beanstalkd frontend (pepsi-runner beanstalk)",
                 conf_stage(&t->conf, "beanstalk")->program_line < 0 ? "pepsi.config_override" : path);
        conf_free(&t->conf);
        free(t);
        return NULL;
    }
    /* A cycle no message can leave is legal, but each message that enters
     * it runs until MAX_HOPS fails it: say so at start and on reload. */
    graph_warn_traps(&t->conf, "config");
    t->n_stages = t->conf.n_stages;
    t->stages = xcalloc(t->n_stages ? t->n_stages : 1, sizeof *t->stages);
    for (size_t i = 0; i < t->n_stages; i++)
        stage_init(&t->stages[i], &t->conf.stages[i], env);
    return t;
}

struct stage *stagetab_find(struct stagetab *t, const char *name)
{
    for (size_t i = 0; t && i < t->n_stages; i++)
        if (strcmp(t->stages[i].name, name) == 0)
            return &t->stages[i];
    return NULL;
}

void stagetab_retire(struct stagetab *t)
{
    for (size_t i = 0; i < t->n_stages; i++) {
        t->stages[i].retired = true;
        stage_retire_workers(&t->stages[i]);
    }
}

bool stagetab_quiet(const struct stagetab *t)
{
    for (size_t i = 0; i < t->n_stages; i++)
        if (!stage_quiet(&t->stages[i]))
            return false;
    return true;
}

void stagetab_free(struct stagetab *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_stages; i++)
        stage_free(&t->stages[i]);
    free(t->stages);
    conf_free(&t->conf);
    free(t);
}

static struct named_delta *delta_slot(struct named_delta *d, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(d[i].name, name) == 0)
            return &d[i];
    d[*n].name = xstrdup(name);
    memset(&d[*n].d, 0, sizeof d[*n].d);
    return &d[(*n)++];
}

static size_t take_deltas(struct stagetab *list, bool all, struct named_delta **out)
{
    size_t total = 0, n = 0;
    for (struct stagetab *t = list; t; t = all ? t->next : NULL)
        total += t->n_stages;
    struct named_delta *d = xcalloc(total ? total : 1, sizeof *d);
    for (struct stagetab *t = list; t; t = all ? t->next : NULL) {
        for (size_t i = 0; i < t->n_stages; i++) {
            struct stage *s = &t->stages[i];
            if (!stage_delta_any(&s->delta))
                continue;
            stage_delta_add(&delta_slot(d, &n, s->name)->d, &s->delta);
            memset(&s->delta, 0, sizeof s->delta);
        }
    }
    *out = d;
    return n;
}

size_t stagetab_take_deltas(struct stagetab *list, struct named_delta **out)
{
    return take_deltas(list, true, out);
}

size_t stagetab_take_deltas_one(struct stagetab *t, struct named_delta **out)
{
    return take_deltas(t, false, out);
}

void stagetab_return_deltas(struct stagetab *t, const struct named_delta *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct stage *s = stagetab_find(t, d[i].name);
        if (s)
            stage_delta_add(&s->delta, &d[i].d);
    }
}

void named_deltas_free(struct named_delta *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(d[i].name);
    free(d);
}

/* One stage as pepsi.stage_served_publish takes it: in_file with the
 * file's PROGRAM and references (f), served when in the running graph;
 * NULL when out of memory. */
static json_t *stage_json(const char *name, const struct stage_conf *f, bool served)
{
    json_t *refs = json_object();
    if (refs == NULL)
        return NULL;
    const char *keys[] = {"NEXT", "BOUNCE_STAGE", "THEN", "ELSE"};
    const char *vals[] = {f ? f->next : NULL, f ? f->bounce_stage : NULL, conf_stage_own(f, "THEN"),
                          conf_stage_own(f, "ELSE")};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (vals[i] && *vals[i] && json_object_set_new(refs, keys[i], json_string(vals[i])) != 0) {
            json_decref(refs);
            return NULL;
        }
    }
    return json_pack("{s:s, s:b, s:b, s:s?, s:o}", "stage", name, "served", served, "in_file", f != NULL,
                     "program", f ? f->program : NULL, "refs", refs);
}

static int graph_add(json_t *arr, const char *name, const struct stage_conf *f, bool served)
{
    json_t *one = stage_json(name, f, served);
    return one && json_array_append_new(arr, one) == 0 ? 0 : -1;
}

char *stagetab_graph_json(const struct stagetab *t, const struct conf *file)
{
    /* Without the file, the running graph stands for it. */
    const struct conf *fc = file ? file : &t->conf;
    json_t *arr = json_array();
    int rc = arr ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < fc->n_stages; i++) {
        const struct stage_conf *f = &fc->stages[i];
        rc = graph_add(arr, f->name, f, conf_stage(&t->conf, f->name) != NULL);
    }
    for (size_t i = 0; rc == 0 && i < t->conf.n_stages; i++) {
        const char *name = t->conf.stages[i].name;
        if (conf_stage(fc, name) == NULL)
            rc = graph_add(arr, name, NULL, true);
    }
    char *out = rc == 0 ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    return out;
}

char *stagetab_publish_json(const struct stagetab *t, const char *path)
{
    struct conf file;
    char err[256];
    bool have = path && conf_load(path, &file, err, sizeof err) == 0;
    char *out = stagetab_graph_json(t, have ? &file : NULL);
    if (have)
        conf_free(&file);
    return out;
}
