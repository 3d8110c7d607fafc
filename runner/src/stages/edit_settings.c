/* stages/edit_settings.c — pepsi-stage-edit-settings: a settings control
 * message changes its sender's per-address settings (pepsi.settings);
 * every other message passes on untouched.
 *
 * The marker: Subject starts with "[pepsi-settings]", or state
 * settings_control is true. The sender must be an authenticated user
 * (sender_key "user:..."): anyone else's control message fails
 * permanently. Its body holds one change per line:
 *     STAGE OPTION = VALUE      set
 *     STAGE OPTION =            delete
 * with blank lines and "#" comments ignored.
 *
 * What an end user may change (issue 11): only options on the target
 * stage's allow-list (USER_OPTIONS, or what a built-in declares: never an
 * option that runs code, names a URL, carries a credential or routes
 * messages), each value checked as `pepsi-runner settings set` checks it;
 * one refused line fails the message permanently, naming the line
 * (D-114), and nothing of it is applied. Whose settings: the envelope
 * sender's, and pepsi.settings_apply refuses in SQL unless the message's
 * authenticated origin user owns that address (pepsi.user_address); the
 * message then fails permanently too. The changes and the advance are
 * one call (D-76).
 *
 * Needs the body for control messages only: fused behind a stage that
 * loaded none, it runs on the metadata of every other message and refuses
 * fusion for a control message, which then goes through the dispatcher so
 * that its own worker loads the body (D-131). */
#include "stages/stages.h"

#include "lib/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARKER "[pepsi-settings]"

static bool is_control(const struct pepsi_message *m)
{
    if (json_is_true(json_object_get(m->state, "settings_control")))
        return true;
    return m->subject && strncmp(m->subject, MARKER, strlen(MARKER)) == 0;
}

static bool es_runs_on_metadata(struct pepsi_worker *w, const struct pepsi_message *m)
{
    (void)w;
    return !is_control(m);
}

/* The built-in behind a section's PROGRAM, for checking its options. */
static const struct pepsi_stage_def *program_of(const struct conf *c, const char *stage)
{
    const struct stage_conf *s = conf_stage(c, stage);
    return s ? stages_builtin_of(s->program) : NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* One line "STAGE OPTION = VALUE" into a change; -1 with why. Only what
 * the stage's allow-list lets an end user set (USER_OPTIONS), for a set
 * and a deletion alike (issue 11). */
static int parse_line(struct pepsi_worker *w, char *line, json_t *changes, char *why, size_t cap)
{
    char *eq = strchr(line, '=');
    char stage[80], option[80], rest[2];
    if (eq == NULL) {
        snprintf(why, cap, "expected STAGE OPTION = VALUE");
        return -1;
    }
    *eq = '\0';
    char *value = trim(eq + 1);
    if (sscanf(line, "%79s %79s %1s", stage, option, rest) != 2) {
        snprintf(why, cap, "expected STAGE OPTION before \"=\"");
        return -1;
    }
    const struct conf *c = pepsi_worker_conf(w);
    if (pepsi_check_user_setting(c, stage, option, *value ? value : NULL, program_of(c, stage), why, cap) != 0)
        return -1;
    json_t *one = json_pack("{ssss}", "stage", stage, "option", option);
    if (one == NULL || json_object_set_new(one, "value", *value ? json_string(value) : json_null()) != 0 ||
        json_array_append_new(changes, one) != 0) {
        json_decref(one);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    return 0;
}

/* The body's changes; NULL with the reason in out when it cannot be used. */
static json_t *parse_changes(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    json_t *changes = json_array();
    char *text = xmalloc(m->body_len + 1), *save = NULL;
    memcpy(text, m->body ? (const char *)m->body : "", m->body_len);
    text[m->body_len] = '\0';
    int n = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char why[400];
        n++;
        char *l = trim(line);
        if (*l == '\0' || *l == '#')
            continue;
        if (parse_line(w, l, changes, why, sizeof why) != 0) {
            out->kind = PEPSI_FAIL;
            pepsi_outcome_reason(out, "stage %s: settings line %d: %s", pepsi_worker_stage(w), n, why);
            json_decref(changes);
            changes = NULL;
            break;
        }
    }
    free(text);
    return changes;
}

static void es_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    out->kind = PEPSI_ADVANCE;
    if (!is_control(m))
        return;
    if (m->sender_key == NULL || strncmp(m->sender_key, "user:", 5) != 0 || m->envelope_sender == NULL ||
        *m->envelope_sender == '\0') {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "stage %s: a settings control message must come from an authenticated "
                                  "user with an envelope sender", pepsi_worker_stage(w));
        return;
    }
    if (!m->has_body) {
        /* Cannot happen: fusion refuses control messages without a body. */
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: a control message without its body", pepsi_worker_stage(w));
        return;
    }
    out->settings_changes = parse_changes(w, m, out);
    out->settings_address = m->envelope_sender;
}

const struct pepsi_stage_def stage_edit_settings = {
    .program = "edit-settings",
    .fusion_default = true, /* D-127 */
    .loads_body = true,
    .own_keys = NULL,
    .run = es_run,
    .runs_on_metadata = es_runs_on_metadata,
};
