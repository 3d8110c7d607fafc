/* lib/conf_overlay.c — the database overlay of [stage-*] sections (D-117)
 * laid over the file's (see conf_parse.h): a row sets or takes back a key
 * of a stage, or removes the stage; a stage the file lacks is added. */
#include "lib/conf_parse.h"

#include "lib/conf_value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void remove_stage(struct parser *p, size_t i)
{
    struct conf *c = p->c;
    struct stage_conf *s = &c->stages[i];
    free(s->name);
    free(s->program);
    free(s->bounce_stage);
    free(s->next);
    free(s->user_options);
    for (size_t k = 0; k < s->n_own; k++) {
        free(s->own[k].key);
        free(s->own[k].value);
    }
    free(s->own);
    memmove(&c->stages[i], &c->stages[i + 1], (c->n_stages - i - 1) * sizeof c->stages[0]);
    memmove(&p->stage_key_line[i], &p->stage_key_line[i + 1],
            (c->n_stages - i - 1) * sizeof p->stage_key_line[0]);
    c->n_stages--;
}

/* Removes an own key of the current stage, if it has it. */
static void own_unset(struct stage_conf *s, const char *key)
{
    for (size_t k = 0; k < s->n_own; k++) {
        if (strcmp(s->own[k].key, key) != 0)
            continue;
        free(s->own[k].key);
        free(s->own[k].value);
        memmove(&s->own[k], &s->own[k + 1], (s->n_own - k - 1) * sizeof s->own[0]);
        s->n_own--;
        return;
    }
}

/* Sets (or replaces) an own key of the current stage. */
static int own_set(struct parser *p, struct stage_conf *s, const char *key, const char *value)
{
    own_unset(s, key);
    p->lineno = -1;
    return parser_kv_add(p, &s->own, &s->n_own, key, value);
}

/* A common key back to its default (PROGRAM has none: the section then
 * fails the PROGRAM check). */
static int common_unset(struct parser *p, const struct conf_key *k, struct stage_conf *s)
{
    char why[256];
    p->stage_key_line[p->stage][conf_key_index(k)] = 0; /* as if never set: QUEUE_LIMIT adapts again */
    if (k->def == NULL) {
        char **field = (char **)(void *)((char *)s + k->off);
        free(*field);
        *field = NULL;
        return 0;
    }
    int rc = conf_value_store(k, s, k->def, why, sizeof why);
    if (rc == -2)
        parser_fail_oom(p);
    return rc < 0 ? -1 : 0;
}

static int common_set(struct parser *p, const struct conf_key *k, struct stage_conf *s,
                      const char *value)
{
    char why[320];
    p->stage_key_line[p->stage][conf_key_index(k)] = -1;
    int rc = conf_value_store(k, s, value, why, sizeof why);
    if (rc == -2)
        parser_fail_oom(p);
    else if (rc < 0)
        parser_fail(p, -1, "key \"%s\" in [%s]: %s", k->name, p->section, why);
    return rc < 0 ? -1 : 0;
}

/* Finds or creates the stage of an overlay row and makes it current. */
static struct stage_conf *overlay_stage(struct parser *p, const char *name)
{
    p->kind = CS_STAGE;
    snprintf(p->section, sizeof p->section, "stage-%s", name);
    for (size_t i = 0; i < p->c->n_stages; i++) {
        if (strcmp(p->c->stages[i].name, name) == 0) {
            p->stage = i;
            return &p->c->stages[i];
        }
    }
    p->lineno = -1;
    return parser_begin_stage(p, name) == 0 ? parser_stage(p) : NULL;
}

static int overlay_row(struct parser *p, const struct conf_override *o)
{
    if (!o->section || strncmp(o->section, "stage-", 6) != 0 || !conf_stage_name_ok(o->section + 6)) {
        parser_fail(p, -1, "section [%s]: only [stage-NAME] sections can be overridden",
             o->section ? o->section : "");
        return -1;
    }
    const char *name = o->section + 6;
    if (o->key && strcmp(o->key, "*") == 0 && o->value == NULL) {
        for (size_t i = 0; i < p->c->n_stages; i++)
            if (strcmp(p->c->stages[i].name, name) == 0) {
                remove_stage(p, i);
                break;
            }
        return 0;
    }
    if (!o->key || !conf_key_name_ok(o->key)) {
        parser_fail(p, -1, "key \"%s\" in [%s]: keys are upper case (A-Z, 0-9, '_', starting with a letter)",
             o->key ? o->key : "", o->section);
        return -1;
    }
    struct stage_conf *s = overlay_stage(p, name);
    if (s == NULL)
        return -1;
    const struct conf_key *k = conf_key_find(CS_STAGE, o->key);
    if (k)
        return o->value ? common_set(p, k, s, o->value) : common_unset(p, k, s);
    const char *typo = conf_key_typo(CS_STAGE, o->key);
    if (typo) {
        parser_fail(p, -1, "unknown key \"%s\" in [%s] (did you mean %s?)", o->key, p->section, typo);
        return -1;
    }
    if (o->value == NULL) {
        own_unset(s, o->key);
        return 0;
    }
    return own_set(p, s, o->key, o->value);
}

void conf_apply_overlay(struct parser *p, const struct conf_override *rows, size_t n)
{
    for (size_t i = 0; i < n && !p->failed; i++)
        overlay_row(p, &rows[i]);
}
