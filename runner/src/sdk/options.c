/* sdk/options.c — per-address settings laid over a stage's options
 * (D-122..D-125, D-114).
 *
 * The load query brings, with each message, the overrides that apply to
 * it: {"stage": {"address": {"OPTION": "value"}}} (pepsi.settings_for).
 * The correspondent is the envelope sender of a state.local_origin
 * message, its recipients otherwise. Recipients whose overrides differ for
 * the stage about to run are split apart first (sdk_split_groups), so
 * that every message runs under one set of options. Options that can be
 * set per address: the stage's own keys, MAX_LIFETIME and BOUNCE_STAGE;
 * routing and pool keys (NEXT, PARALLELISM, ...) cannot. */
#include "sdk/options.h"

#include "lib/proto.h"
#include "lib/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const per_address_common[] = {"MAX_LIFETIME", "BOUNCE_STAGE", NULL};

bool sdk_local_origin(const struct pepsi_message *m)
{
    json_t *v = m->state ? json_object_get(m->state, "local_origin") : NULL;
    return json_is_true(v);
}

/* The settings key of an address: lower case (pepsi.address_key). */
static void address_key(const char *address, char *out, size_t cap)
{
    size_t i = 0;
    for (; address && address[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)address[i]);
    out[i] = '\0';
}

/* The overrides of stage for one address, or NULL. */
static json_t *overrides_of(const struct pepsi_message *m, const char *stage, const char *address)
{
    char key[330];
    if (m == NULL || m->overrides == NULL || address == NULL)
        return NULL;
    json_t *by_address = json_object_get(m->overrides, stage);
    if (by_address == NULL)
        return NULL;
    address_key(address, key, sizeof key);
    return json_object_get(by_address, key);
}

json_t *sdk_message_overrides(const struct pepsi_message *m, const char *stage)
{
    if (m == NULL)
        return NULL;
    if (sdk_local_origin(m))
        return overrides_of(m, stage, m->envelope_sender);
    /* After a split every recipient has the same overrides: the first
     * speaks for all (sdk_split_groups). */
    return m->n_recipients ? overrides_of(m, stage, m->recipients[0]) : NULL;
}

const char *pepsi_option(const struct pepsi_worker *w, const struct pepsi_message *m, const char *key)
{
    json_t *v = json_object_get(sdk_message_overrides(m, w->stage), key);
    if (json_is_string(v))
        return json_string_value(v);
    return conf_stage_own(w->section, key);
}

static bool in_list(const char *const *list, const char *key)
{
    for (; list && *list; list++)
        if (strcmp(*list, key) == 0)
            return true;
    return false;
}

/* One override of stage w for message m; 0, or -1 with why. */
static int check_one(const struct pepsi_worker *w, const char *key, const char *value, char *why,
                     size_t cap)
{
    int64_t ms;
    if (in_list(w->def->own_keys, key))
        return w->def->check_option ? w->def->check_option((struct pepsi_worker *)w, key, value, why, cap)
                                    : 0;
    if (!in_list(per_address_common, key)) {
        snprintf(why, cap, "option \"%s\" cannot be set per address for pepsi-stage-%s", key, w->def->program);
        return -1;
    }
    if (strcmp(key, "MAX_LIFETIME") == 0 && (conf_parse_duration(value, &ms) != 0 || ms <= 0)) {
        snprintf(why, cap, "MAX_LIFETIME \"%s\" is not a duration", value);
        return -1;
    }
    if (strcmp(key, "BOUNCE_STAGE") == 0 && conf_stage(&w->core->conf, value) == NULL) {
        snprintf(why, cap, "BOUNCE_STAGE \"%s\" names no stage", value);
        return -1;
    }
    return 0;
}

int sdk_check_overrides(const struct pepsi_worker *w, const struct pepsi_message *m, char *why, size_t cap)
{
    json_t *opts = sdk_message_overrides(m, w->stage);
    const char *key;
    json_t *v;
    json_object_foreach(opts, key, v) {
        char inner[400];
        if (!json_is_string(v) || check_one(w, key, json_string_value(v), inner, sizeof inner) == 0)
            continue;
        snprintf(why, cap, "stage %s: a per-address setting makes its section unusable: %s", w->stage,
                 inner);
        return -1;
    }
    return 0;
}

int pepsi_check_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                        const struct pepsi_stage_def *builtin, char *why, size_t cap)
{
    static const char *const never[] = {"PROGRAM", "PARALLELISM", "QUEUE_LIMIT", "MAX_MESSAGES", "MAX_RSS_GROWTH",
                                        "WORKER_IDLE_TIMEOUT", "MAX_RUNTIME", "FUSION", "NEXT", NULL};
    struct sdk_core core;
    struct pepsi_worker w;
    const struct stage_conf *section = conf_stage(c, stage);
    if (section == NULL) {
        snprintf(why, cap, "there is no stage \"%s\" (file and overlay)", stage);
        return -1;
    }
    if (builtin == NULL) {
        /* A program of its own: its keys are its business, routing and
         * pool keys are the dispatcher's. */
        if (in_list(never, key)) {
            snprintf(why, cap, "option \"%s\" cannot be set per address", key);
            return -1;
        }
        return 0;
    }
    memset(&core, 0, sizeof core);
    core.conf = *c; /* read only: never freed through core */
    memset(&w, 0, sizeof w);
    w.core = &core;
    w.def = builtin;
    w.stage = section->name;
    w.section = section;
    return check_one(&w, key, value, why, cap);
}

/* Whether key is on the end-user allow-list of section (issue 11). */
static bool user_may_set(const struct stage_conf *section, const struct pepsi_stage_def *builtin,
                         const char *key)
{
    if (conf_option_operator_only(key))
        return false;
    bool declared = builtin && in_list(builtin->user_keys, key);
    if (section->user_options)
        return conf_list_has(section->user_options, key) && (builtin == NULL || declared);
    return declared;
}

int pepsi_check_user_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                             const struct pepsi_stage_def *builtin, char *why, size_t cap)
{
    const struct stage_conf *section = conf_stage(c, stage);
    if (section == NULL) {
        snprintf(why, cap, "there is no stage \"%s\"", stage);
        return -1;
    }
    if (!user_may_set(section, builtin, key)) {
        snprintf(why, cap, "option \"%s\" of stage \"%s\" cannot be set by a settings control message "
                           "(USER_OPTIONS; an operator sets it with pepsi-runner settings set)", key, stage);
        return -1;
    }
    return value ? pepsi_check_setting(c, stage, key, value, builtin, why, cap) : 0;
}

/* ---- the split (D-124, D-125) ---- */

/* Whether two override objects (NULL for none) are the same settings. */
static bool same_overrides(json_t *a, json_t *b)
{
    if (a == NULL || b == NULL)
        return (a == NULL || json_object_size(a) == 0) && (b == NULL || json_object_size(b) == 0);
    return json_equal(a, b);
}

json_t *sdk_split_groups(const struct pepsi_message *m, const char *stage)
{
    if (m == NULL || m->overrides == NULL || m->n_recipients < 2 || sdk_local_origin(m) ||
        json_object_get(m->overrides, stage) == NULL)
        return NULL;
    size_t n = m->n_recipients;
    int *group = xcalloc(n, sizeof *group);
    int groups = 0;
    for (size_t i = 0; i < n; i++) {
        group[i] = -1;
        json_t *mine = overrides_of(m, stage, m->recipients[i]);
        for (size_t j = 0; j < i && group[i] < 0; j++)
            if (same_overrides(mine, overrides_of(m, stage, m->recipients[j])))
                group[i] = group[j];
        if (group[i] < 0)
            group[i] = groups++;
    }
    json_t *out = NULL;
    if (groups > 1) {
        out = json_array();
        for (int g = 0; out && g < groups; g++) {
            json_t *members = json_array();
            for (size_t i = 0; i < n; i++)
                if (group[i] == g)
                    json_array_append_new(members, json_string(m->recipients[i]));
            json_array_append_new(out, members);
        }
    }
    free(group);
    return out;
}
