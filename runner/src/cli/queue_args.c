/* cli/queue_args.c — the command line of `pepsi-runner queue` (see
 * queue_cmd.h): options after the verb, "--name VALUE" or "--name=VALUE",
 * each verb taking only its own; ids positive integers, at most
 * QUEUE_MAX_IDS; durations read by conf_parse_duration, the parser of
 * pepsi.conf's durations. */
#include "cli/queue_cmd.h"

#include "lib/conf.h"
#include "lib/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The options a verb takes, as a set of these bits. */
enum {
    O_JSON = 1 << 0,
    O_STAGE = 1 << 1,
    O_STATUS = 1 << 2,
    O_TUBE = 1 << 3,
    O_LIMIT = 1 << 4,
    O_REASON = 1 << 5,
    O_TO = 1 << 6,
    O_FOR = 1 << 7,
    O_OLDER = 1 << 8,
};

static const struct {
    const char *name;
    int bit;
    bool value;
} options[] = {
    {"json", O_JSON, false},   {"stage", O_STAGE, true}, {"status", O_STATUS, true},
    {"tube", O_TUBE, true},    {"limit", O_LIMIT, true}, {"reason", O_REASON, true},
    {"to", O_TO, true},        {"for", O_FOR, true},     {"older-than", O_OLDER, true},
};

static const struct {
    const char *name;
    enum queue_verb verb;
    int allowed;
} verbs[] = {
    {"list", QV_LIST, O_JSON | O_STAGE | O_STATUS | O_TUBE | O_LIMIT},
    {"show", QV_SHOW, O_JSON},
    {"retry", QV_RETRY, 0},
    {"delete", QV_DELETE, O_REASON},
    {"move", QV_MOVE, O_TO},
    {"pause", QV_PAUSE, O_REASON | O_TUBE | O_FOR},
    {"resume", QV_RESUME, O_TUBE},
    {"purge", QV_PURGE, O_OLDER},
};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* A message id: a positive decimal integer that fits a bigint. */
static int parse_id(const char *s, int64_t *id)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0)
        return -1;
    *id = v;
    return 0;
}

static int set_option(struct queue_args *a, int bit, const char *v, char *err, size_t cap)
{
    if (*v == '\0')
        return fail(err, cap, "an option's value must not be empty");
    switch (bit) {
    case O_STAGE:
        a->stage = v;
        break;
    case O_STATUS:
        if (strcmp(v, "pending") != 0 && strcmp(v, "running") != 0 && strcmp(v, "paused") != 0 &&
            strcmp(v, "failed") != 0 && strcmp(v, "timeout") != 0)
            return fail(err, cap, "--status must be pending, running, paused, failed or timeout, not \"%s\"", v);
        a->status = v;
        break;
    case O_TUBE:
        a->tube = v;
        break;
    case O_LIMIT:
        if (conf_parse_int(v, 1, QUEUE_LIST_MAX, &a->limit) != 0)
            return fail(err, cap, "--limit must be 1 to %d, not \"%s\"", QUEUE_LIST_MAX, v);
        break;
    case O_REASON:
        a->reason = v;
        break;
    case O_TO:
        a->to = v;
        break;
    default: /* O_FOR, O_OLDER */
        if (conf_parse_duration(v, &a->ms) != 0 || a->ms < 1000)
            return fail(err, cap, "--%s must be a duration of at least 1s (\"30s\", \"5min\", \"2h\", \"7d\"), not \"%s\"",
                        bit == O_FOR ? "for" : "older-than", v);
        break;
    }
    return 0;
}

/* One "--name[=VALUE]" at argv[*i] (VALUE may be the next argument). */
static int take_option(struct queue_args *a, int argc, char **argv, int *i, int allowed, int *seen, char *err,
                       size_t cap)
{
    const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
        if (strlen(options[k].name) != len || strncmp(options[k].name, arg, len) != 0)
            continue;
        if (!(allowed & options[k].bit))
            return fail(err, cap, "queue %s takes no option --%s", argv[0], options[k].name);
        if (*seen & options[k].bit)
            return fail(err, cap, "--%s given twice", options[k].name);
        *seen |= options[k].bit;
        if (!options[k].value) {
            if (eq)
                return fail(err, cap, "--%s takes no value", options[k].name);
            a->json = true;
            return 0;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (v == NULL && *i + 1 < argc)
            v = argv[++*i];
        if (v == NULL)
            return fail(err, cap, "--%s needs a value", options[k].name);
        return set_option(a, options[k].bit, v, err, cap);
    }
    return fail(err, cap, "unknown option \"%s\" (global options come before the subcommand)", argv[*i]);
}

/* What each verb needs beyond its options: positional arguments (ids or
 * a stage) and the options it requires. */
static int check_verb(struct queue_args *a, char **pos, int npos, int seen, char *err, size_t cap)
{
    bool ids = a->verb == QV_SHOW || a->verb == QV_RETRY || a->verb == QV_DELETE || a->verb == QV_MOVE;
    if (ids) {
        if (npos == 0)
            return fail(err, cap, "give the message id(s)");
        if (a->verb == QV_SHOW && npos > 1)
            return fail(err, cap, "queue show takes one id");
        if (npos > QUEUE_MAX_IDS)
            return fail(err, cap, "at most %d ids per call, not %d", QUEUE_MAX_IDS, npos);
        a->ids = xmalloc((size_t)npos * sizeof *a->ids);
        for (int k = 0; k < npos; k++)
            if (parse_id(pos[k], &a->ids[a->n_ids++]) != 0)
                return fail(err, cap, "\"%s\" is not a message id (a positive integer)", pos[k]);
        if (a->verb == QV_DELETE && !(seen & O_REASON))
            return fail(err, cap, "queue delete needs --reason TEXT (kept in the tombstone)");
        if (a->verb == QV_MOVE && !(seen & O_TO))
            return fail(err, cap, "queue move needs --to STAGE");
        return 0;
    }
    if (a->verb == QV_PAUSE || a->verb == QV_RESUME) {
        if (seen & O_TUBE) {
            if (npos > 0 || (seen & O_REASON))
                return fail(err, cap, "queue %s --tube T takes no stage and no --reason",
                            a->verb == QV_PAUSE ? "pause" : "resume");
            if (a->verb == QV_PAUSE && !(seen & O_FOR))
                return fail(err, cap, "queue pause --tube T needs --for DURATION");
            if (a->ms / 1000 > INT_MAX)
                return fail(err, cap, "--for is too long");
            return 0;
        }
        if (seen & O_FOR)
            return fail(err, cap, "--for pauses a tube: give --tube T");
        if (npos != 1)
            return fail(err, cap, "give one stage, or --tube T");
        a->stage = pos[0];
        return 0;
    }
    if (npos > 0)
        return fail(err, cap, "queue %s takes no argument \"%s\"", a->verb == QV_LIST ? "list" : "purge", pos[0]);
    if (a->verb == QV_PURGE && !(seen & O_OLDER))
        return fail(err, cap, "queue purge needs --older-than DURATION");
    return 0;
}

int queue_parse(int argc, char **argv, struct queue_args *a, char *err, size_t cap)
{
    memset(a, 0, sizeof *a);
    a->limit = QUEUE_LIST_DEFAULT;
    if (argc < 1)
        return fail(err, cap, "give a verb: list, show, retry, delete, move, pause, resume or purge");
    int allowed = -1;
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++)
        if (strcmp(argv[0], verbs[k].name) == 0) {
            a->verb = verbs[k].verb;
            allowed = verbs[k].allowed;
        }
    if (allowed < 0)
        return fail(err, cap, "unknown verb \"%s\"", argv[0]);
    char **pos = xmalloc((size_t)argc * sizeof *pos);
    int npos = 0, seen = 0, rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        if (strncmp(argv[i], "--", 2) == 0 && argv[i][2] != '\0')
            rc = take_option(a, argc, argv, &i, allowed, &seen, err, cap);
        else if (argv[i][0] == '-' && argv[i][1] != '\0' && (argv[i][1] < '0' || argv[i][1] > '9'))
            rc = fail(err, cap, "unknown option \"%s\" (global options come before the subcommand)", argv[i]);
        else
            pos[npos++] = argv[i];
    }
    if (rc == 0)
        rc = check_verb(a, pos, npos, seen, err, cap);
    free(pos);
    return rc;
}

void queue_args_free(struct queue_args *a)
{
    free(a->ids);
    a->ids = NULL;
    a->n_ids = 0;
}

const char *queue_age(long long secs, char *out, size_t cap)
{
    if (secs < 0)
        secs = 0;
    if (secs < 120)
        snprintf(out, cap, "%llds", secs);
    else if (secs < 2 * 3600)
        snprintf(out, cap, "%lldm", secs / 60);
    else if (secs < 2 * 86400)
        snprintf(out, cap, "%lldh", secs / 3600);
    else
        snprintf(out, cap, "%lldd", secs / 86400);
    return out;
}
