/* lib/conf.c — pepsi.conf: reading, defaults and validation.
 *
 * This file is keys[], the one table of every key the runner knows with
 * its type, range, default (as text, applied through the same converter as
 * the file), flags, field and one line of documentation, and the inih
 * callbacks (a line reader and a key handler) that load a file with it.
 * conf/pepsi.conf documents the same keys in the same order;
 * deploy/config_keys.sql and README's table are generated from it. The
 * rest of the parser, one concern each (issue 13):
 *   lib/conf_value.c    typed converters: a value into the field its row says
 *   lib/conf_names.c    what the table says about a name: typos,
 *                       operator-only, credentials
 *   lib/conf_check.c    checks after the whole file: stage references,
 *                       USER_OPTIONS, connection strings, secrets
 *   lib/conf_overlay.c  the database overlay (D-117) over [stage-*]
 *   lib/conf_parse.h    the parse state they share
 *
 * The file is INI, parsed with inih through our own line reader, which
 *   - counts lines, so every error names the line of the key or section;
 *   - rejects lines inih would silently truncate (longer than its buffer
 *     allows: INI_MAX_LINE - 3 = 197 characters here) and NUL bytes;
 *   - strips leading blanks, so an indented "KEY = value" is an ordinary
 *     key and never inih's multi-line continuation of the previous value;
 *   - parses section headers itself (inih truncates section names to 49
 *     characters and reports empty sections to nobody), so empty, unknown
 *     and repeated sections are found too.
 * Comments start a line with ';' or '#', or follow blank space with ';'
 * (inih's inline comments), so a value cannot contain " ;".
 *
 * Values: the typed converters of lib/conf_value.c, driven by the
 * key's row; connection strings (CONNINFO, WORKER_CONNINFO) must also
 * parse with libpq's PQconninfoParse, and WORKER_CONNINFO must hold no
 * password. What a name means (typos, operator-only, credentials) is
 * asked of the same table in lib/conf_names.c.
 * Errors: the first one wins and conf_load() returns it as
 *   "FILE:LINE: key \"KEY\" in [SECTION]: message",
 *   "FILE:LINE: section [SECTION]: message", "FILE:LINE: message" or
 *   "FILE: message".
 * Secrets (issue 11): a file whose own keys hold a secret (see
 * lib/conf_check.c) is refused with CONF_INSECURE when users other than its
 * owner and group may access it, as ssh and libpq refuse such files. */
#include "lib/conf.h"

#include "lib/conf_key.h"
#include "lib/conf_parse.h"
#include "lib/conf_value.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KEY_MAX 256                 /* longer keys cannot come from inih */

#define CONF_AT(f) offsetof(struct conf, f)
#define STAGE_AT(f) offsetof(struct stage_conf, f)
#define OP CK_OPERATOR
#define RL CK_RELOAD
#define STAGE_KEY (CK_RELOAD)       /* every [stage-*] key is hot (D-117) */

/* Every key, in the order of conf/pepsi.conf: the one list of what keys
 * exist (issue 13). pepsi.config_key in SQL is generated from it
 * (`pepsi-runner conf-keys --sql` > deploy/config_keys.sql; `make lint`
 * fails when they differ); so is the operator-only rule of both sides. */
static const struct conf_key keys[] = {
    /* sect, name, type, flags, min, max, default, field, doc */
    {CS_PEPSI, "ALLOW_FUSION", CT_BOOL, 0, 0, 0, "yes", CONF_AT(allow_fusion),
     "run a successor stage in the same worker pass when it allows it"},
    {CS_PEPSI, "SHARE_TELEMETRY", CT_BOOL, RL, 0, 0, "no", CONF_AT(share_telemetry),
     "report feature telemetry; NOTIFY telemetry_changed after changing it"},
    {CS_PEPSI, "MAX_HOPS", CT_INT, 0, 1, CONF_MAX_HOPS_MAX, "1000", CONF_AT(max_hops),
     "the most hops a message may make before it fails as a loop"},

    {CS_POSTGRES, "CONNINFO", CT_STRING, CK_SECRET, 0, 0, "", CONF_AT(conninfo),
     "libpq connection string or URI; empty: libpq's defaults and PG* variables"},
    {CS_POSTGRES, "WORKER_CONNINFO", CT_STRING, CK_OPTIONAL, 0, 0, "", CONF_AT(worker_conninfo),
     "what workers get instead of CONNINFO, never with a password; unset: CONNINFO without it"},
    {CS_POSTGRES, "WORKER_SYNCHRONOUS_COMMIT", CT_BOOL, 0, 0, 0, "no",
     CONF_AT(worker_synchronous_commit), "no: worker connections run with synchronous_commit off"},
    {CS_POSTGRES, "CONNECT_TIMEOUT", CT_DURATION, 0, 0, 0, "10s", CONF_AT(connect_timeout_ms),
     "how long connecting to PostgreSQL may take before it counts as failed"},

    {CS_DISPATCH, "CONFIG_FILE", CT_STRING, CK_OPTIONAL, 0, 0, "", CONF_AT(config_file),
     "passed to workers as -c FILE; unset: workers start without -c"},
    {CS_DISPATCH, "POLL_INTERVAL", CT_DURATION, 0, 0, 0, "5s", CONF_AT(poll_interval_ms),
     "safety-net claim when no notification arrives"},
    {CS_DISPATCH, "STATS_INTERVAL", CT_DURATION, 0, 0, 0, "10s", CONF_AT(stats_interval_ms),
     "how often statistics are written (and orphaned bodies collected)"},
    {CS_DISPATCH, "OWNER_SLOT", CT_INT, 0, 0, INT_MAX, "0", CONF_AT(owner_slot),
     "the owner slot this runner serves (one runner per slot)"},
    {CS_DISPATCH, "PARTITION_COUNT", CT_INT, 0, 0, 65536, "0", CONF_AT(partition_count),
     "the topology's partition count this runner expects; 0: not checked (issue 14)"},
    {CS_DISPATCH, "TOPOLOGY_FINGERPRINT", CT_STRING, CK_OPTIONAL, 0, 0, "", CONF_AT(topology_fingerprint),
     "the topology fingerprint this runner expects; empty: not checked (issue 14)"},
    {CS_DISPATCH, "LOCK_WAIT", CT_DURATION, 0, 0, 0, "10s", CONF_AT(lock_wait_ms),
     "how long to wait for another runner's lock on the slot before refusing"},
    {CS_DISPATCH, "COOLDOWN", CT_DURATION, 0, 0, 0, "5s", CONF_AT(cooldown_ms),
     "pause before restarting a stage whose worker failed to start or broke the protocol"},
    {CS_DISPATCH, "OVERLOAD_WINDOW", CT_DURATION, 0, 0, 0, "5min", CONF_AT(overload_window_ms),
     "how long a stage's parallelism stays halved after a database overload"},
    {CS_DISPATCH, "FAIR_SCHEDULING", CT_BOOL, 0, 0, 0, "yes", CONF_AT(fair_scheduling),
     "share each stage between senders by worker time (no: oldest first)"},
    {CS_DISPATCH, "FAIR_HALF_LIFE", CT_DURATION, 0, 0, 0, "60s", CONF_AT(fair_half_life_ms),
     "a sender's lead halves every FAIR_HALF_LIFE"},
    {CS_DISPATCH, "FAIR_FIFO_PERCENT", CT_INT, 0, 0, 100, "10", CONF_AT(fair_fifo_percent),
     "percentage of each stage's claimed slots that go to its oldest records"},
    {CS_DISPATCH, "RECONCILE_INTERVAL", CT_DURATION, 0, 0, 0, "5min", CONF_AT(reconcile_interval_ms),
     "how often a reconciliation pass runs (pepsi.reconcile)"},
    {CS_DISPATCH, "ANOMALY_INTERVAL", CT_DURATION, 0, 0, 0, "1min", CONF_AT(anomaly_interval_ms),
     "how often the anomaly checks run (pepsi.anomaly_run)"},
    {CS_DISPATCH, "MAINTENANCE", CT_BOOL, 0, 0, 0, "yes", CONF_AT(maintenance),
     "whether serve also runs reconciliation and anomaly checks, on a connection of their own"},
    {CS_DISPATCH, "VACUUM_DEAD_TUPLES", CT_INT, 0, 0, INT_MAX, "50000", CONF_AT(vacuum_dead_tuples),
     "serve runs VACUUM pepsi.workqueue once its dead tuples pass this; 0: autovacuum alone (issue 19)"},

    {CS_STAGE, "PROGRAM", CT_STRING, CK_REQUIRED | OP | STAGE_KEY, 0, 0, NULL, STAGE_AT(program),
     "the stage program (required): \"PROGRAM worker\" is run"},
    {CS_STAGE, "PARALLELISM", CT_INT, OP | STAGE_KEY, 1, 1024, "4", STAGE_AT(parallelism),
     "at most this many workers; the pool grows on demand"},
    {CS_STAGE, "QUEUE_LIMIT", CT_INT, OP | STAGE_KEY, 1, 1024, "4", STAGE_AT(queue_limit),
     "message ids handed to one worker at once"},
    {CS_STAGE, "MAX_MESSAGES", CT_INT, OP | STAGE_KEY, 0, INT_MAX, "0", STAGE_AT(max_messages),
     "a worker's child is replaced after this many messages; 0 or unset: 1000, built-ins on MAX_RSS_GROWTH"},
    {CS_STAGE, "MAX_RSS_GROWTH", CT_INT, OP | STAGE_KEY, 1, 1048576, "64", STAGE_AT(max_rss_growth_mb),
     "MiB: a built-in's worker without MAX_MESSAGES is replaced once its memory grew this much since ready"},
    {CS_STAGE, "WORKER_IDLE_TIMEOUT", CT_DURATION, OP | STAGE_KEY, 0, 0, "5s",
     STAGE_AT(worker_idle_timeout_ms), "surplus idle workers stop after this long"},
    {CS_STAGE, "MAX_RUNTIME", CT_DURATION, OP | STAGE_KEY, 0, 0, "10min", STAGE_AT(max_runtime_ms),
     "a worker that does not answer a message within this is killed"},
    {CS_STAGE, "MAX_LIFETIME", CT_DURATION, STAGE_KEY, 0, 0, "120h", STAGE_AT(max_lifetime_ms),
     "retries of a host error give up after this long since arrival"},
    {CS_STAGE, "BOUNCE_STAGE", CT_STAGE, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, "", STAGE_AT(bounce_stage),
     "the stage a message goes to when MAX_LIFETIME runs out; unset: it fails"},
    {CS_STAGE, "FUSION", CT_TRISTATE, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, "", STAGE_AT(fusion),
     "whether this stage may be fused into its predecessor's pass; unset: the program's default"},
    {CS_STAGE, "NEXT", CT_STAGE, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, "", STAGE_AT(next),
     "the next stage; unset: the message is finished after this stage"},
    {CS_STAGE, "USER_OPTIONS", CT_OPTION_LIST, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, "",
     STAGE_AT(user_options), "the options an end user may set per address; unset: the program's default"},

    /* Built-in programs' own keys that the operator-only rule names. */
    {CS_STAGE_OWN, "THEN", CT_STAGE, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, NULL, 0,
     "pepsi-stage-if: the stage a message goes to when CONDITION holds"},
    {CS_STAGE_OWN, "ELSE", CT_STAGE, CK_OPTIONAL | OP | STAGE_KEY, 0, 0, NULL, 0,
     "pepsi-stage-if: the stage a message goes to otherwise"},
    {CS_STAGE_OWN, "PASS_CONNINFO", CT_BOOL, OP | STAGE_KEY, 0, 0, "no", 0,
     "pepsi-stage-exec: give the command the worker's connection"},

    /* Rules on names (issue 11): an option whose name contains one of these
     * runs code, names a URL, carries a credential or routes messages. */
    {CS_NAME_PART, "COMMAND", CT_ANY, OP, 0, 0, NULL, 0, "runs code"},
    {CS_NAME_PART, "CONDITION", CT_ANY, OP, 0, 0, NULL, 0, "decides a route"},
    {CS_NAME_PART, "URL", CT_ANY, OP, 0, 0, NULL, 0, "names a URL"},
    {CS_NAME_PART, "SECRET", CT_ANY, OP | CK_SECRET, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "PASSWORD", CT_ANY, OP | CK_SECRET, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "PASSWD", CT_ANY, OP | CK_SECRET, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "TOKEN", CT_ANY, OP, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "AUTH", CT_ANY, OP, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "AUTHORIZATION", CT_ANY, CK_SECRET, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "CREDENTIAL", CT_ANY, OP, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "KEY", CT_ANY, OP, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_PART, "CONNINFO", CT_ANY, OP, 0, 0, NULL, 0, "a connection"},
    {CS_NAME_PART, "SCRIPT", CT_ANY, OP, 0, 0, NULL, 0, "runs code"},
    {CS_NAME_PART, "EXEC", CT_ANY, OP, 0, 0, NULL, 0, "runs code"},
    {CS_NAME_PART, "PROGRAM", CT_ANY, OP, 0, 0, NULL, 0, "runs code"},
    {CS_NAME_PART, "STAGE", CT_ANY, OP, 0, 0, NULL, 0, "routes messages"},
    {CS_NAME_PART, "HOST", CT_ANY, OP, 0, 0, NULL, 0, "names a server"},
    {CS_NAME_SUFFIX, "TOKEN", CT_ANY, CK_SECRET, 0, 0, NULL, 0, "a credential"},
    {CS_NAME_SUFFIX, "API_KEY", CT_ANY, CK_SECRET, 0, 0, NULL, 0, "a credential"},
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

_Static_assert(N_KEYS <= CONF_KEY_ROWS, "CONF_KEY_ROWS (lib/conf_parse.h) holds every row");

const struct conf_key *conf_keys(size_t *n)
{
    *n = N_KEYS;
    return keys;
}

size_t conf_key_index(const struct conf_key *k)
{
    return (size_t)(k - keys);
}

struct section_def {
    enum conf_sect kind;
    const char *name;
};

static const struct section_def fixed_sections[] = {
    {CS_PEPSI, "pepsi"},
    {CS_POSTGRES, "pepsi-postgres"},
    {CS_DISPATCH, "pepsi-dispatch"},
    {CS_INGRESS, "pepsi-ingress"},
    {CS_BEANSTALK, "pepsi-beanstalk"},
};

#define N_FIXED_SECTIONS (sizeof(fixed_sections) / sizeof(fixed_sections[0]))

const char *conf_sect_name(enum conf_sect s)
{
    static const char *const names[CS_COUNT] = {
        [CS_NONE] = "", [CS_PEPSI] = "pepsi", [CS_POSTGRES] = "pepsi-postgres",
        [CS_DISPATCH] = "pepsi-dispatch", [CS_INGRESS] = "pepsi-ingress",
        [CS_BEANSTALK] = "pepsi-beanstalk", [CS_STAGE] = "stage", [CS_STAGE_OWN] = "stage-own",
        [CS_NAME_PART] = "name-part", [CS_NAME_SUFFIX] = "name-suffix",
    };
    return s >= 0 && s < CS_COUNT ? names[s] : "";
}

const char *conf_type_name(enum conf_type t)
{
    static const char *const names[] = {
        [CT_STRING] = "string", [CT_BOOL] = "bool", [CT_INT] = "int", [CT_DURATION] = "duration",
        [CT_STAGE] = "stage", [CT_TRISTATE] = "tristate", [CT_OPTION_LIST] = "option-list",
        [CT_ANY] = "any",
    };
    return (size_t)t < sizeof names / sizeof names[0] ? names[t] : "";
}


/* ---- errors ---- */

static void set_error_v(struct parser *p, int line, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void set_error_v(struct parser *p, int line, const char *fmt, va_list ap)
{
    p->failed = true;
    p->err_line = line;
    if (!p->err || p->errlen == 0)
        return;
    int n = line > 0   ? snprintf(p->err, p->errlen, "%s:%d: ", p->name, line)
            : line < 0 ? snprintf(p->err, p->errlen, "%s: ", OVERLAY_NAME)
                       : snprintf(p->err, p->errlen, "%s: ", p->name);
    if (n >= 0 && (size_t)n < p->errlen)
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
}

/* Records an error unless an earlier one was recorded: the first one wins. */
void parser_fail(struct parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void parser_fail(struct parser *p, int line, const char *fmt, ...)
{
    if (p->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    set_error_v(p, line, fmt, ap);
    va_end(ap);
}

/* Records an error even after another one (an earlier line wins). */
static void fail_over(struct parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_over(struct parser *p, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(p, line, fmt, ap);
    va_end(ap);
}

void parser_fail_oom(struct parser *p)
{
    p->oom = true;
    parser_fail(p, 0, "out of memory");
}

const char *conf_default_path(void)
{
    const char *env = getenv("PEPSI_CONFIG");
    return env && *env ? env : "/etc/pepsi/pepsi.conf";
}


/* Applies the defaults of every key of kind through conf_value_store(). */
static int apply_defaults(struct parser *p, enum conf_sect kind, void *base)
{
    char why[256];
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].sect != kind || !keys[i].def)
            continue;
        int rc = conf_value_store(&keys[i], base, keys[i].def, why, sizeof(why));
        if (rc == -2) {
            parser_fail_oom(p);
            return -1;
        }
        if (rc < 0) {
            parser_fail(p, 0, "internal error: default of %s: %s", keys[i].name, why);
            return -1;
        }
    }
    return 0;
}

/* ---- sections ---- */

struct stage_conf *parser_stage(struct parser *p)
{
    return &p->c->stages[p->stage];
}

static int grow_stages(struct parser *p)
{
    struct conf *c = p->c;
    if (c->n_stages < p->stages_cap)
        return 0;
    size_t cap = p->stages_cap ? p->stages_cap * 2 : 8;
    struct stage_conf *s = realloc(c->stages, cap * sizeof(*s));
    if (!s)
        return -1;
    c->stages = s;
    int(*lines)[CONF_KEY_ROWS] = realloc(p->stage_key_line, cap * sizeof(*lines));
    if (!lines)
        return -1;
    p->stage_key_line = lines;
    p->stages_cap = cap;
    return 0;
}

int parser_begin_stage(struct parser *p, const char *name)
{
    const struct stage_conf *dup = conf_stage(p->c, name);
    if (dup) {
        parser_fail(p, p->lineno, "section [stage-%s]: appears twice (first on line %d)", name,
             dup->line);
        return -1;
    }
    if (grow_stages(p) < 0) {
        parser_fail_oom(p);
        return -1;
    }
    struct stage_conf *s = &p->c->stages[p->c->n_stages];
    memset(s, 0, sizeof(*s));
    memset(p->stage_key_line[p->c->n_stages], 0, sizeof(p->stage_key_line[0]));
    p->stage = p->c->n_stages++;
    s->line = p->lineno;
    if (!(s->name = strdup(name))) {
        parser_fail_oom(p);
        return -1;
    }
    return apply_defaults(p, CS_STAGE, s);
}

static int begin_fixed(struct parser *p, enum conf_sect kind)
{
    if (p->section_line[kind]) {
        parser_fail(p, p->lineno, "section [%s]: appears twice (first on line %d)", p->section,
             p->section_line[kind]);
        return -1;
    }
    p->section_line[kind] = p->lineno;
    return 0;
}

/* Starts the section called name (without brackets). */
static int begin_section(struct parser *p, const char *name)
{
    snprintf(p->section, sizeof(p->section), "%s", name);
    for (size_t i = 0; i < N_FIXED_SECTIONS; i++) {
        if (strcmp(name, fixed_sections[i].name) == 0) {
            p->kind = fixed_sections[i].kind;
            return begin_fixed(p, p->kind);
        }
    }
    if (strncmp(name, "stage-", 6) == 0) {
        if (!conf_stage_name_ok(name + 6)) {
            parser_fail(p, p->lineno, "section [%s]: invalid stage name \"%s\": %s", name, name + 6,
                 conf_expect_stage);
            return -1;
        }
        p->kind = CS_STAGE;
        return parser_begin_stage(p, name + 6);
    }
    parser_fail(p, p->lineno,
         "section [%s]: unknown section (expected [pepsi], [pepsi-postgres], "
         "[pepsi-dispatch], [pepsi-ingress], [pepsi-beanstalk] or [stage-NAME])",
         name);
    return -1;
}

/* Where inih finds the ']' closing a section header: the first ']', unless
 * an inline comment (';' after a blank) comes first. Returns len if none. */
static size_t section_close(const char *line, size_t len)
{
    for (size_t i = 1; i < len; i++) {
        if (line[i] == ']')
            return i;
        if (line[i] == ';' && (line[i - 1] == ' ' || line[i - 1] == '\t'))
            return len;
    }
    return len;
}

/* A header line "[name]", optionally followed by blanks and a comment. */
static int section_line(struct parser *p, const char *line, size_t len)
{
    size_t close = section_close(line, len);
    if (close >= len) {
        parser_fail(p, p->lineno, "section header without a closing ']'");
        return -1;
    }
    size_t rest = close + 1;
    while (rest < len && (line[rest] == ' ' || line[rest] == '\t'))
        rest++;
    if (rest < len && line[rest] != ';' && line[rest] != '#') {
        parser_fail(p, p->lineno, "unexpected text after the section header");
        return -1;
    }
    char *name = strndup(line + 1, close - 1);
    if (!name) {
        parser_fail_oom(p);
        return -1;
    }
    int rc = begin_section(p, name);
    free(name);
    return rc;
}

/* ---- the line reader ---- */

/* The next raw line of the text, without '\n' and one '\r'; NULL at the end. */
static const char *next_line(struct parser *p, size_t *len)
{
    if (p->pos >= p->end)
        return NULL;
    const char *line = p->pos;
    const char *nl = memchr(line, '\n', (size_t)(p->end - line));
    size_t n = nl ? (size_t)(nl - line) : (size_t)(p->end - line);
    p->pos = nl ? nl + 1 : p->end;
    if (n > 0 && line[n - 1] == '\r')
        n--;
    p->lineno++;
    if (p->lineno == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        line += 3;                  /* a UTF-8 byte order mark */
        n -= 3;
    }
    while (n > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        n--;
    }
    *len = n;
    return line;
}

/* inih's fgets-style reader: one line per call, so inih's line number is
 * ours. Returns NULL (the end, for inih) after an error. */
static char *reader_cb(char *str, int num, void *stream)
{
    struct parser *p = stream;
    size_t len;
    if (p->failed)
        return NULL;
    const char *line = next_line(p, &len);
    if (!line)
        return NULL;
    if (memchr(line, '\0', len)) {
        parser_fail(p, p->lineno, "line contains a NUL byte");
        return NULL;
    }
    if (num < 3 || len > (size_t)num - 3) {
        parser_fail(p, p->lineno, "line is longer than %d characters", num < 3 ? 0 : num - 3);
        return NULL;
    }
    if (len > 0 && line[0] == '[' && section_line(p, line, len) < 0)
        return NULL;
    memcpy(str, line, len);
    str[len] = '\n';
    str[len + 1] = '\0';
    return str;
}

/* ---- keys ---- */

int parser_kv_add(struct parser *p, struct conf_kv **kv, size_t *n, const char *key,
                  const char *value)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*kv)[i].key, key) == 0) {
            parser_fail(p, p->lineno, "key \"%s\" in [%s]: appears twice (first on line %d)", key,
                 p->section, (*kv)[i].line);
            return -1;
        }
    }
    struct conf_kv *grown = realloc(*kv, (*n + 1) * sizeof(**kv));
    if (!grown) {
        parser_fail_oom(p);
        return -1;
    }
    *kv = grown;
    struct conf_kv *e = &grown[*n];
    e->key = strdup(key);
    e->value = strdup(value);
    e->line = p->lineno;
    (*n)++;
    if (!e->key || !e->value) {
        parser_fail_oom(p);
        return -1;
    }
    return 0;
}

static int known_key(struct parser *p, const struct conf_key *k, const char *value)
{
    int *seen = k->sect == CS_STAGE ? &p->stage_key_line[p->stage][k - keys]
                                    : &p->key_line[k - keys];
    if (*seen) {
        parser_fail(p, p->lineno, "key \"%s\" in [%s]: appears twice (first on line %d)", k->name,
             p->section, *seen);
        return -1;
    }
    *seen = p->lineno;
    void *base = k->sect == CS_STAGE ? (void *)parser_stage(p) : (void *)p->c;
    char why[320];
    int rc = conf_value_store(k, base, value, why, sizeof(why));
    if (rc == -2)
        parser_fail_oom(p);
    else if (rc < 0)
        parser_fail(p, p->lineno, "key \"%s\" in [%s]: %s", k->name, p->section, why);
    return rc < 0 ? -1 : 0;
}

static int unknown_key(struct parser *p, const char *name, const char *value)
{
    const char *typo = conf_key_typo(p->kind, name);
    if (p->kind == CS_STAGE && !typo) {
        struct stage_conf *s = parser_stage(p);
        return parser_kv_add(p, &s->own, &s->n_own, name, value);
    }
    if (typo)
        parser_fail(p, p->lineno, "unknown key \"%s\" in [%s] (did you mean %s?)", name, p->section,
             typo);
    else
        parser_fail(p, p->lineno, "unknown key \"%s\" in [%s]", name, p->section);
    return -1;
}

static void bad_key_name(struct parser *p, const char *name)
{
    char upper[KEY_MAX];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(upper); i++)
        upper[i] = name[i] >= 'a' && name[i] <= 'z' ? (char)(name[i] - 'a' + 'A') : name[i];
    upper[i] = '\0';
    const struct conf_key *k = conf_key_find(p->kind, upper);
    parser_fail(p, p->lineno,
         "key \"%s\" in [%s]: keys are upper case (A-Z, 0-9, '_', starting with a letter)%s%s%s",
         name, p->section, k ? " (did you mean " : "", k ? k->name : "", k ? "?)" : "");
}

static int handler_cb(void *user, const char *section, const char *name, const char *value)
{
    struct parser *p = user;
    (void)section;                  /* truncated by inih; ours is p->section */
    if (p->failed)
        return 0;
    if (p->kind == CS_NONE) {
        parser_fail(p, p->lineno, "key \"%s\": outside any section", name);
        return 0;
    }
    if (*name == '\0') {
        parser_fail(p, p->lineno, "a value without a key in [%s]", p->section);
        return 0;
    }
    if (!conf_key_name_ok(name)) {
        bad_key_name(p, name);
        return 0;
    }
    if (p->kind == CS_INGRESS)
        return parser_kv_add(p, &p->c->ingress, &p->c->n_ingress, name, value) == 0;
    if (p->kind == CS_BEANSTALK)
        return parser_kv_add(p, &p->c->beanstalk, &p->c->n_beanstalk, name, value) == 0;
    const struct conf_key *k = conf_key_find(p->kind, name);
    return (k ? known_key(p, k, value) : unknown_key(p, name, value)) == 0;
}

/* inih's own error at line: a line that is neither a section, a comment
 * nor KEY = value. */
static void syntax_error(struct parser *p, int line)
{
    fail_over(p, line, "syntax error: expected [section], KEY = value or a comment");
}

/* ---- loading ---- */

static void conf_kv_free(struct conf_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

void conf_free(struct conf *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->conninfo);
    free(c->worker_conninfo);
    free(c->config_file);
    free(c->topology_fingerprint);
    conf_kv_free(c->ingress, c->n_ingress);
    conf_kv_free(c->beanstalk, c->n_beanstalk);
    for (size_t i = 0; i < c->n_stages; i++) {
        struct stage_conf *s = &c->stages[i];
        free(s->name);
        free(s->program);
        free(s->bounce_stage);
        free(s->next);
        free(s->user_options);
        conf_kv_free(s->own, s->n_own);
    }
    free(c->stages);
    memset(c, 0, sizeof(*c));
}

static int parse_text(const char *text, size_t len, const char *name, const struct stat *st,
                      const struct conf_override *rows, size_t n_rows, struct conf *out,
                      char *err, size_t errlen)
{
    struct parser p = {
        .c = out, .name = name, .err = err, .errlen = errlen, .pos = text, .end = text + len,
        .st = st,
    };
    if (!(out->path = strdup(name)))
        parser_fail_oom(&p);
    else if (apply_defaults(&p, CS_PEPSI, out) == 0 && apply_defaults(&p, CS_POSTGRES, out) == 0
             && apply_defaults(&p, CS_DISPATCH, out) == 0) {
        int rc = ini_parse_stream(reader_cb, &p, handler_cb, &p);
        if (rc == -2)
            parser_fail_oom(&p);
        else if (rc > 0 && (!p.failed || rc < p.err_line))
            syntax_error(&p, rc);
        conf_check_postgres(&p);
        conf_check_secrets(&p);
        conf_apply_overlay(&p, rows, n_rows);
        conf_check_stages(&p);
    }
    free(p.stage_key_line);
    if (!p.failed)
        return 0;
    conf_free(out);
    return p.insecure ? CONF_INSECURE : -1;
}

static void say(char *err, size_t errlen, const char *name, const char *what, int e)
{
    if (err && errlen > 0)
        snprintf(err, errlen, "%s: %s: %s", name, what, strerror(e));
}

/* Reads the whole file into a malloc'd, NUL-terminated buffer; *st gets
 * the status of the file opened (its mode, for check_secrets). */
static char *read_file(const char *path, size_t *len, struct stat *st, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        say(err, errlen, path, "cannot open", errno);
        return NULL;
    }
    if (fstat(fileno(f), st) != 0) {
        say(err, errlen, path, "cannot read its status", errno);
        fclose(f);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f) || feof(f) || n + 1 < cap)
            break;
        char *grown = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int e = buf ? (ferror(f) ? errno : 0) : ENOMEM;
    fclose(f);
    if (!buf || e != 0) {
        say(err, errlen, path, "cannot read", e ? e : EIO);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int conf_load(const char *path, struct conf *out, char *err, size_t errlen)
{
    return conf_load_overlay(path, NULL, 0, out, err, errlen);
}

int conf_load_overlay(const char *path, const struct conf_override *rows, size_t n_rows,
                      struct conf *out, char *err, size_t errlen)
{
    size_t len;
    if (!out)
        return -1;
    memset(out, 0, sizeof(*out));
    if (!path) {
        if (err && errlen > 0)
            snprintf(err, errlen, "no configuration file given");
        return -1;
    }
    struct stat st;
    char *text = read_file(path, &len, &st, err, errlen);
    if (!text)
        return -1;
    int rc = parse_text(text, len, path, &st, rows, n_rows, out, err, errlen);
    free(text);
    return rc;
}

int conf_load_string(const char *text, const char *name, struct conf *out, char *err,
                     size_t errlen)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof(*out));
    if (!name)
        name = "<string>";
    if (!text) {
        if (err && errlen > 0)
            snprintf(err, errlen, "%s: no configuration text", name);
        return -1;
    }
    return parse_text(text, strlen(text), name, NULL, NULL, 0, out, err, errlen);
}

const struct stage_conf *conf_stage(const struct conf *c, const char *name)
{
    if (!c || !name)
        return NULL;
    for (size_t i = 0; i < c->n_stages; i++)
        if (strcmp(c->stages[i].name, name) == 0)
            return &c->stages[i];
    return NULL;
}

int conf_stage_hand_max(const struct stage_conf *s)
{
    return s->queue_limit_set ? s->queue_limit : CONF_HAND_LIMIT_MAX;
}

int conf_stage_batch_max(const struct stage_conf *s)
{
    return s->queue_limit_set ? s->queue_limit : CONF_BATCH_LIMIT_MAX;
}

const char *conf_stage_own(const struct stage_conf *s, const char *key)
{
    if (!s || !key)
        return NULL;
    for (size_t i = 0; i < s->n_own; i++)
        if (strcmp(s->own[i].key, key) == 0)
            return s->own[i].value;
    return NULL;
}


