/* count-recipients — a pepsi stage program written in C against
 * libpepsi-worker (pepsi-worker.h), built with examples/c-stage/Makefile.
 *
 * For each message it writes, under the state key STATE_KEY (default
 * "recipients"), how many recipients the message has and its subject in
 * upper case, then advances it to the section's NEXT (or finishes it):
 *
 *     {"recipients": {"count": 2, "subject": "HELLO"}}
 *
 * With MAX_RECIPIENTS = N, a message with more than N recipients fails
 * (failure class "permanent") instead. MAX_RECIPIENTS may be set per
 * address by an operator (`pepsi-runner settings set ADDRESS STAGE
 * MAX_RECIPIENTS 10`): this program checks such a value before it is used.
 *
 *     [stage-count]
 *     PROGRAM = /usr/local/libexec/pepsi/count-recipients
 *     STATE_KEY = recipients
 *     MAX_RECIPIENTS = 100
 *     NEXT = deliver
 *
 * Everything else — the configuration, the connection, loading the
 * message, committing the outcome, the protocol with pepsi-runner — is the
 * library's. */
#include <pepsi-worker.h>

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const own_keys[] = {"STATE_KEY", "MAX_RECIPIENTS", NULL};

/* A positive count in *out: 0, or -1 with why. */
static int parse_max(const char *value, long *out, char *why, size_t cap)
{
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || n < 1) {
        snprintf(why, cap, "MAX_RECIPIENTS \"%s\" is not a positive whole number", value);
        return -1;
    }
    *out = n;
    return 0;
}

/* Once, before "ready": a bad section refuses the start (exit 78). */
static int count_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    long max;
    const char *key = pepsi_option(w, NULL, "STATE_KEY");
    const char *value = pepsi_option(w, NULL, "MAX_RECIPIENTS");
    if (key != NULL && *key == '\0') {
        snprintf(err, errlen, "STATE_KEY is empty");
        return -1;
    }
    return value ? parse_max(value, &max, err, errlen) : 0;
}

/* A per-address value of one of our keys, before a message uses it. */
static int count_check_option(struct pepsi_worker *w, const char *key, const char *value, char *err,
                              size_t errlen)
{
    long max;
    (void)w;
    if (strcmp(key, "MAX_RECIPIENTS") == 0)
        return parse_max(value, &max, err, errlen);
    if (*value == '\0') {
        snprintf(err, errlen, "%s is empty", key);
        return -1;
    }
    return 0;
}

static json_t *upper_case(const char *text)
{
    if (text == NULL)
        return json_null();
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        copy[i] = (char)toupper((unsigned char)text[i]);
    json_t *s = json_string(copy); /* NULL when the subject is not UTF-8 */
    free(copy);
    return s ? s : json_null();
}

static void count_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    const char *key = pepsi_option(w, m, "STATE_KEY");
    const char *max_text = pepsi_option(w, m, "MAX_RECIPIENTS");
    long max = 0;
    char why[200];
    if (max_text && parse_max(max_text, &max, why, sizeof why) != 0) {
        out->kind = PEPSI_FAIL; /* the library checked overrides already: only a bad section gets here */
        pepsi_outcome_reason(out, "%s", why);
        return;
    }
    if (max > 0 && m->n_recipients > (size_t)max) {
        out->kind = PEPSI_FAIL;
        pepsi_outcome_reason(out, "%zu recipients, more than MAX_RECIPIENTS (%ld)", m->n_recipients, max);
        return;
    }
    json_t *subject = upper_case(m->subject);
    json_t *patch = json_pack("{s:{s:I,s:o*}}", key ? key : "recipients", "count", (json_int_t)m->n_recipients,
                              "subject", subject);
    if (patch == NULL) {
        out->kind = PEPSI_HOST_ERROR; /* out of memory: retried later */
        pepsi_outcome_reason(out, "cannot build the state patch");
        return;
    }
    pepsi_log(w, PEPSI_LOG_DEBUG, "message %lld: %zu recipients", (long long)m->id, m->n_recipients);
    out->kind = PEPSI_ADVANCE; /* to NEXT, or finished when the section has none */
    out->state_patch = patch;  /* the library merges it into state and releases it */
}

static const struct pepsi_stage_def count_recipients = {
    .program = "count-recipients",
    .own_keys = own_keys,
    .setup = count_setup,
    .run = count_run,
    .check_option = count_check_option,
};

int main(int argc, char **argv)
{
    return pepsi_worker_run(argc, argv, &count_recipients);
}
