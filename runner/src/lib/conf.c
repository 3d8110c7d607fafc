/* lib/conf.c — pepsi.conf: reading, defaults and validation.
 *
 * Every key the runner knows sits in keys[] below with its type, its
 * default (as text, applied through the same parser as the file) and where
 * it is stored. conf/pepsi.conf documents the same keys in the same order.
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
 * Values:
 *   durations  conf_parse_duration(): a number and an optional unit (ms, s,
 *              min, h, d; case-insensitive; blanks allowed between), a bare
 *              number is seconds. A fraction is accepted when it is a whole
 *              number of milliseconds ("1.5s", "0.25min"), never rounded
 *              ("0.5ms" is an error). "m" is refused: minutes or millis?
 *              Configuration keys also require a duration > 0.
 *   booleans   yes/no, true/false, on/off, 1/0, case-insensitive.
 *   integers   decimal, within the key's range.
 *   optional strings (WORKER_CONNINFO, CONFIG_FILE, BOUNCE_STAGE, NEXT,
 *              FUSION): an empty value means unset, the same as leaving
 *              the key out.
 *   connection strings (CONNINFO, WORKER_CONNINFO) must parse with libpq's
 *              PQconninfoParse; WORKER_CONNINFO must hold no password.
 * Errors: the first one wins and conf_load() returns it as
 *   "FILE:LINE: key \"KEY\" in [SECTION]: message",
 *   "FILE:LINE: section [SECTION]: message", "FILE:LINE: message" or
 *   "FILE: message".
 * Secrets (issue 11): a file whose own keys hold a secret (see
 * secret_in_file()) is refused with CONF_INSECURE when users other than its
 * owner and group may access it, as ssh and libpq refuse such files. */
#include "lib/conf.h"

#include "lib/pgpass.h"
#include "lib/proto.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <curl/curl.h>

#define STAGE_NAME_MAX 63
#define SECTION_TEXT_MAX 96         /* of a section name kept for messages */
#define TYPO_DISTANCE 2             /* see key_typo() */
#define KEY_MAX 256                 /* longer keys cannot come from inih */

enum sect_kind {
    SK_NONE,                        /* before the first section header */
    SK_PEPSI,
    SK_POSTGRES,
    SK_DISPATCH,
    SK_INGRESS,
    SK_BEANSTALK,
    SK_STAGE,
    SK_COUNT,
};

enum key_type {
    KT_STRING,                      /* char * */
    KT_BOOL,                        /* bool */
    KT_INT,                         /* int within [min, max] */
    KT_DURATION,                    /* int64_t milliseconds, > 0 */
    KT_STAGE,                       /* char *, a valid stage name */
    KT_TRISTATE,                    /* int: -1 unset, 0 no, 1 yes */
};

#define KF_OPTIONAL 1               /* an empty value means unset */
#define KF_REQUIRED 2               /* no default: the section must set it */

struct key_def {
    enum sect_kind sect;
    const char *name;
    enum key_type type;
    int flags;
    int min, max;                   /* KT_INT */
    const char *def;                /* default as text; NULL with KF_REQUIRED */
    size_t off;                     /* in struct conf, or struct stage_conf */
};

#define CONF_AT(f) offsetof(struct conf, f)
#define STAGE_AT(f) offsetof(struct stage_conf, f)

/* Every key, in the order of conf/pepsi.conf. */
static const struct key_def keys[] = {
    {SK_PEPSI, "ALLOW_FUSION", KT_BOOL, 0, 0, 0, "yes", CONF_AT(allow_fusion)},
    {SK_PEPSI, "SHARE_TELEMETRY", KT_BOOL, 0, 0, 0, "no", CONF_AT(share_telemetry)},
    {SK_PEPSI, "MAX_HOPS", KT_INT, 0, 1, CONF_MAX_HOPS_MAX, "1000", CONF_AT(max_hops)},

    {SK_POSTGRES, "CONNINFO", KT_STRING, 0, 0, 0, "", CONF_AT(conninfo)},
    {SK_POSTGRES, "WORKER_CONNINFO", KT_STRING, KF_OPTIONAL, 0, 0, "", CONF_AT(worker_conninfo)},
    {SK_POSTGRES, "WORKER_SYNCHRONOUS_COMMIT", KT_BOOL, 0, 0, 0, "no",
     CONF_AT(worker_synchronous_commit)},
    {SK_POSTGRES, "CONNECT_TIMEOUT", KT_DURATION, 0, 0, 0, "10s", CONF_AT(connect_timeout_ms)},

    {SK_DISPATCH, "CONFIG_FILE", KT_STRING, KF_OPTIONAL, 0, 0, "", CONF_AT(config_file)},
    {SK_DISPATCH, "POLL_INTERVAL", KT_DURATION, 0, 0, 0, "5s", CONF_AT(poll_interval_ms)},
    {SK_DISPATCH, "STATS_INTERVAL", KT_DURATION, 0, 0, 0, "10s", CONF_AT(stats_interval_ms)},
    {SK_DISPATCH, "OWNER_SLOT", KT_INT, 0, 0, INT_MAX, "0", CONF_AT(owner_slot)},
    {SK_DISPATCH, "PARTITION_COUNT", KT_INT, 0, 0, 65536, "0", CONF_AT(partition_count)},
    {SK_DISPATCH, "TOPOLOGY_FINGERPRINT", KT_STRING, KF_OPTIONAL, 0, 0, "", CONF_AT(topology_fingerprint)},
    {SK_DISPATCH, "LOCK_WAIT", KT_DURATION, 0, 0, 0, "10s", CONF_AT(lock_wait_ms)},
    {SK_DISPATCH, "COOLDOWN", KT_DURATION, 0, 0, 0, "5s", CONF_AT(cooldown_ms)},
    {SK_DISPATCH, "OVERLOAD_WINDOW", KT_DURATION, 0, 0, 0, "5min", CONF_AT(overload_window_ms)},
    {SK_DISPATCH, "FAIR_SCHEDULING", KT_BOOL, 0, 0, 0, "yes", CONF_AT(fair_scheduling)},
    {SK_DISPATCH, "FAIR_HALF_LIFE", KT_DURATION, 0, 0, 0, "60s", CONF_AT(fair_half_life_ms)},
    {SK_DISPATCH, "FAIR_FIFO_PERCENT", KT_INT, 0, 0, 100, "10", CONF_AT(fair_fifo_percent)},
    {SK_DISPATCH, "RECONCILE_INTERVAL", KT_DURATION, 0, 0, 0, "5min", CONF_AT(reconcile_interval_ms)},
    {SK_DISPATCH, "ANOMALY_INTERVAL", KT_DURATION, 0, 0, 0, "1min", CONF_AT(anomaly_interval_ms)},
    {SK_DISPATCH, "MAINTENANCE", KT_BOOL, 0, 0, 0, "yes", CONF_AT(maintenance)},

    {SK_STAGE, "PROGRAM", KT_STRING, KF_REQUIRED, 0, 0, NULL, STAGE_AT(program)},
    {SK_STAGE, "PARALLELISM", KT_INT, 0, 1, 1024, "4", STAGE_AT(parallelism)},
    {SK_STAGE, "QUEUE_LIMIT", KT_INT, 0, 1, 1024, "4", STAGE_AT(queue_limit)},
    {SK_STAGE, "MAX_MESSAGES", KT_INT, 0, 1, INT_MAX, "1000", STAGE_AT(max_messages)},
    {SK_STAGE, "WORKER_IDLE_TIMEOUT", KT_DURATION, 0, 0, 0, "5s",
     STAGE_AT(worker_idle_timeout_ms)},
    {SK_STAGE, "MAX_RUNTIME", KT_DURATION, 0, 0, 0, "10min", STAGE_AT(max_runtime_ms)},
    {SK_STAGE, "MAX_LIFETIME", KT_DURATION, 0, 0, 0, "120h", STAGE_AT(max_lifetime_ms)},
    {SK_STAGE, "BOUNCE_STAGE", KT_STAGE, KF_OPTIONAL, 0, 0, "", STAGE_AT(bounce_stage)},
    {SK_STAGE, "FUSION", KT_TRISTATE, KF_OPTIONAL, 0, 0, "", STAGE_AT(fusion)},
    {SK_STAGE, "NEXT", KT_STAGE, KF_OPTIONAL, 0, 0, "", STAGE_AT(next)},
    {SK_STAGE, "USER_OPTIONS", KT_STRING, KF_OPTIONAL, 0, 0, "", STAGE_AT(user_options)},
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

struct section_def {
    enum sect_kind kind;
    const char *name;
};

static const struct section_def fixed_sections[] = {
    {SK_PEPSI, "pepsi"},
    {SK_POSTGRES, "pepsi-postgres"},
    {SK_DISPATCH, "pepsi-dispatch"},
    {SK_INGRESS, "pepsi-ingress"},
    {SK_BEANSTALK, "pepsi-beanstalk"},
};

#define N_FIXED_SECTIONS (sizeof(fixed_sections) / sizeof(fixed_sections[0]))

static const char expect_duration[] = "expected a duration such as 500ms, 30s, 5min, 120h";
static const char expect_bool[] = "expected yes or no (or true/false, on/off, 1/0)";
static const char expect_stage[] =
    "expected a stage name (1 to 63 characters of A-Z, a-z, 0-9, '_', '.', '-', "
    "starting with a letter or digit)";

/* Where overlay rows come from, in messages; their "line" is -1. */
#define OVERLAY_NAME "pepsi.config_override"

/* The state of one parse. Lines seen per key (0: not yet) find repeated
 * keys and name the line of NEXT and BOUNCE_STAGE in late checks. */
struct parser {
    struct conf *c;
    const char *name;               /* FILE in messages */
    char *err;
    size_t errlen;
    bool failed;
    int err_line;
    bool oom;
    const char *pos, *end;          /* the text not yet read */
    int lineno;                     /* of the last line handed to inih */
    enum sect_kind kind;            /* of the current section */
    size_t stage;                   /* the current stage, SK_STAGE */
    char section[SECTION_TEXT_MAX]; /* its name, for messages */
    int section_line[SK_COUNT];     /* header lines of the fixed sections */
    int key_line[N_KEYS];           /* keys of the fixed sections */
    int (*stage_key_line)[N_KEYS];  /* keys of each stage, like c->stages */
    size_t stages_cap;
    const struct stat *st;          /* the file's status, NULL for a string */
    bool insecure;                  /* refused for its permissions: CONF_INSECURE */
};

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
static void fail(struct parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct parser *p, int line, const char *fmt, ...)
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

static void fail_oom(struct parser *p)
{
    p->oom = true;
    fail(p, 0, "out of memory");
}

/* ---- value parsers ---- */

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool is_upper(char ch)
{
    return ch >= 'A' && ch <= 'Z';
}

static bool stage_name_ok(const char *s)
{
    return proto_stage_name_valid(s, strlen(s));
}

/* Keys are upper case: [A-Z][A-Z0-9_]*. */
static bool key_name_ok(const char *s)
{
    if (!is_upper(s[0]))
        return false;
    for (size_t i = 1; s[i]; i++)
        if (!is_upper(s[i]) && !is_digit(s[i]) && s[i] != '_')
            return false;
    return true;
}

/* Reads decimal digits into *v (at least one); returns the count, or -1 on
 * overflow past INT64_MAX. */
static int read_digits(const char **s, uint64_t *v)
{
    int n = 0;
    *v = 0;
    for (; is_digit(**s); (*s)++, n++) {
        if (*v > ((uint64_t)INT64_MAX - (uint64_t)(**s - '0')) / 10)
            return -1;
        *v = *v * 10 + (uint64_t)(**s - '0');
    }
    return n;
}

struct dur_unit {
    const char *name;
    int64_t ms;
};

static const struct dur_unit dur_units[] = {
    {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000},
};

/* The unit that s is exactly (case-insensitive); "" is seconds. */
static int64_t dur_unit_ms(const char *s)
{
    if (*s == '\0')
        return 1000;
    for (size_t i = 0; i < sizeof(dur_units) / sizeof(dur_units[0]); i++)
        if (strcasecmp(s, dur_units[i].name) == 0)
            return dur_units[i].ms;
    return -1;
}

/* The fraction digits after '.' as frac / 10^digits, trailing zeros
 * dropped. At most 10 significant digits: no unit makes more exact. */
static int read_fraction(const char **s, uint64_t *frac, int *digits)
{
    *frac = 0;
    *digits = 0;
    const char *start = *s, *last = *s;
    while (is_digit(**s)) {
        if (**s != '0')
            last = *s + 1;
        (*s)++;
    }
    if (*s == start)
        return -1;
    for (const char *d = start; d < last; d++) {
        if (++*digits > 10)
            return -1;
        *frac = *frac * 10 + (uint64_t)(*d - '0');
    }
    return 0;
}

int conf_parse_duration(const char *s, int64_t *ms)
{
    uint64_t whole, frac = 0;
    int digits = 0;
    if (!s || !ms || read_digits(&s, &whole) <= 0)
        return -1;
    if (*s == '.') {
        s++;
        if (read_fraction(&s, &frac, &digits) < 0)
            return -1;
    }
    const char *blank = s;
    while (*s == ' ' || *s == '\t')
        s++;
    if (s > blank && *s == '\0')
        return -1;                  /* trailing blanks, no unit */
    int64_t unit = dur_unit_ms(s);
    if (unit < 0)
        return -1;
    uint64_t pow10 = 1, w, f;
    for (int i = 0; i < digits; i++)
        pow10 *= 10;
    if (__builtin_mul_overflow(whole, (uint64_t)unit, &w)
        || __builtin_mul_overflow(frac, (uint64_t)unit, &f) || f % pow10 != 0
        || __builtin_add_overflow(w, f / pow10, &w) || w > (uint64_t)INT64_MAX)
        return -1;
    *ms = (int64_t)w;
    return 0;
}

int conf_parse_bool(const char *s, bool *b)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    if (!s || !b)
        return -1;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *b = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *b = false;
            return 0;
        }
    }
    return -1;
}

int conf_parse_int(const char *s, int min, int max, int *out)
{
    if (!s || !out || !(is_digit(s[0]) || (s[0] == '-' && is_digit(s[1]))))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

const char *conf_default_path(void)
{
    const char *env = getenv("PEPSI_CONFIG");
    return env && *env ? env : "/etc/pepsi/pepsi.conf";
}

/* ---- storing a value ---- */

static int store_string(const struct key_def *k, char **dst, const char *value,
                        char *why, size_t whylen)
{
    if (*value == '\0' && (k->flags & KF_REQUIRED)) {
        snprintf(why, whylen, "must not be empty");
        return -1;
    }
    if (k->type == KT_STAGE && *value && !stage_name_ok(value)) {
        snprintf(why, whylen, "invalid value \"%s\": %s", value, expect_stage);
        return -1;
    }
    char *copy = NULL;
    if ((*value || !(k->flags & KF_OPTIONAL)) && !(copy = strdup(value))) {
        snprintf(why, whylen, "out of memory");
        return -2;
    }
    free(*dst);
    *dst = copy;
    return 0;
}

static int store_int(const struct key_def *k, int *dst, const char *value, char *why,
                     size_t whylen)
{
    if (conf_parse_int(value, k->min, k->max, dst) == 0)
        return 0;
    if (k->max == INT_MAX)
        snprintf(why, whylen, "invalid value \"%s\": expected an integer of at least %d",
                 value, k->min);
    else
        snprintf(why, whylen, "invalid value \"%s\": expected an integer from %d to %d",
                 value, k->min, k->max);
    return -1;
}

static int store_duration(int64_t *dst, const char *value, char *why, size_t whylen)
{
    size_t n = strlen(value);
    if (conf_parse_duration(value, dst) < 0) {
        bool m = n > 0 && (value[n - 1] == 'm' || value[n - 1] == 'M');
        bool frac = strchr(value, '.') != NULL;
        snprintf(why, whylen, "invalid value \"%s\": %s%s", value, expect_duration,
                 m ? " (\"m\" is ambiguous: write min or ms)"
                   : frac ? " (a fraction must come to whole milliseconds)" : "");
        return -1;
    }
    if (*dst <= 0) {
        snprintf(why, whylen, "invalid value \"%s\": a duration must be greater than 0", value);
        return -1;
    }
    return 0;
}

static int store_bool(bool *dst, const char *value, char *why, size_t whylen)
{
    if (conf_parse_bool(value, dst) == 0)
        return 0;
    snprintf(why, whylen, "invalid value \"%s\": %s", value, expect_bool);
    return -1;
}

static int store_tristate(int *dst, const char *value, char *why, size_t whylen)
{
    bool b;
    if (*value == '\0') {
        *dst = -1;
        return 0;
    }
    if (store_bool(&b, value, why, whylen) < 0)
        return -1;
    *dst = b ? 1 : 0;
    return 0;
}

/* Parses value for key k into base (struct conf or struct stage_conf).
 * Returns 0, -1 with the reason in why, or -2 when out of memory. */
static int key_store(const struct key_def *k, void *base, const char *value, char *why,
                     size_t whylen)
{
    char *at = (char *)base + k->off;
    switch (k->type) {
    case KT_STRING:
    case KT_STAGE:
        return store_string(k, (char **)(void *)at, value, why, whylen);
    case KT_BOOL:
        return store_bool((bool *)(void *)at, value, why, whylen);
    case KT_INT:
        return store_int(k, (int *)(void *)at, value, why, whylen);
    case KT_DURATION:
        return store_duration((int64_t *)(void *)at, value, why, whylen);
    case KT_TRISTATE:
        return store_tristate((int *)(void *)at, value, why, whylen);
    }
    snprintf(why, whylen, "unknown key type");
    return -1;
}

/* Applies the defaults of every key of kind through key_store(). */
static int apply_defaults(struct parser *p, enum sect_kind kind, void *base)
{
    char why[256];
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].sect != kind || !keys[i].def)
            continue;
        int rc = key_store(&keys[i], base, keys[i].def, why, sizeof(why));
        if (rc == -2) {
            fail_oom(p);
            return -1;
        }
        if (rc < 0) {
            fail(p, 0, "internal error: default of %s: %s", keys[i].name, why);
            return -1;
        }
    }
    return 0;
}

/* ---- key lookup and typos ---- */

static const struct key_def *key_find(enum sect_kind kind, const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].sect == kind && strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Damerau-Levenshtein distance (optimal string alignment: insertions,
 * deletions, substitutions, transpositions of neighbours). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= KEY_MAX || lb >= KEY_MAX)
        return SIZE_MAX;
    size_t rows[3][KEY_MAX + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]
                && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

/* The known key of kind closest to name within TYPO_DISTANCE, or NULL.
 * A key of 4 characters or fewer (NEXT) only matches at distance 1, so
 * that a stage's own short keys (TEST, SENT, ...) are not taken for it. */
static const char *key_typo(enum sect_kind kind, const char *name)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (keys[i].sect != kind)
            continue;
        size_t limit = strlen(keys[i].name) <= 4 ? 1 : TYPO_DISTANCE;
        size_t d = edit_distance(name, keys[i].name);
        if (d <= limit && d < best_d) {
            best = keys[i].name;
            best_d = d;
        }
    }
    return best;
}

/* ---- sections ---- */

static struct stage_conf *cur_stage(struct parser *p)
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
    int(*lines)[N_KEYS] = realloc(p->stage_key_line, cap * sizeof(*lines));
    if (!lines)
        return -1;
    p->stage_key_line = lines;
    p->stages_cap = cap;
    return 0;
}

static int begin_stage(struct parser *p, const char *name)
{
    const struct stage_conf *dup = conf_stage(p->c, name);
    if (dup) {
        fail(p, p->lineno, "section [stage-%s]: appears twice (first on line %d)", name,
             dup->line);
        return -1;
    }
    if (grow_stages(p) < 0) {
        fail_oom(p);
        return -1;
    }
    struct stage_conf *s = &p->c->stages[p->c->n_stages];
    memset(s, 0, sizeof(*s));
    memset(p->stage_key_line[p->c->n_stages], 0, sizeof(p->stage_key_line[0]));
    p->stage = p->c->n_stages++;
    s->line = p->lineno;
    if (!(s->name = strdup(name))) {
        fail_oom(p);
        return -1;
    }
    return apply_defaults(p, SK_STAGE, s);
}

static int begin_fixed(struct parser *p, enum sect_kind kind)
{
    if (p->section_line[kind]) {
        fail(p, p->lineno, "section [%s]: appears twice (first on line %d)", p->section,
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
        if (!stage_name_ok(name + 6)) {
            fail(p, p->lineno, "section [%s]: invalid stage name \"%s\": %s", name, name + 6,
                 expect_stage);
            return -1;
        }
        p->kind = SK_STAGE;
        return begin_stage(p, name + 6);
    }
    fail(p, p->lineno,
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
        fail(p, p->lineno, "section header without a closing ']'");
        return -1;
    }
    size_t rest = close + 1;
    while (rest < len && (line[rest] == ' ' || line[rest] == '\t'))
        rest++;
    if (rest < len && line[rest] != ';' && line[rest] != '#') {
        fail(p, p->lineno, "unexpected text after the section header");
        return -1;
    }
    char *name = strndup(line + 1, close - 1);
    if (!name) {
        fail_oom(p);
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
        fail(p, p->lineno, "line contains a NUL byte");
        return NULL;
    }
    if (num < 3 || len > (size_t)num - 3) {
        fail(p, p->lineno, "line is longer than %d characters", num < 3 ? 0 : num - 3);
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

static int kv_add(struct parser *p, struct conf_kv **kv, size_t *n, const char *key,
                  const char *value)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*kv)[i].key, key) == 0) {
            fail(p, p->lineno, "key \"%s\" in [%s]: appears twice (first on line %d)", key,
                 p->section, (*kv)[i].line);
            return -1;
        }
    }
    struct conf_kv *grown = realloc(*kv, (*n + 1) * sizeof(**kv));
    if (!grown) {
        fail_oom(p);
        return -1;
    }
    *kv = grown;
    struct conf_kv *e = &grown[*n];
    e->key = strdup(key);
    e->value = strdup(value);
    e->line = p->lineno;
    (*n)++;
    if (!e->key || !e->value) {
        fail_oom(p);
        return -1;
    }
    return 0;
}

static int known_key(struct parser *p, const struct key_def *k, const char *value)
{
    int *seen = k->sect == SK_STAGE ? &p->stage_key_line[p->stage][k - keys]
                                    : &p->key_line[k - keys];
    if (*seen) {
        fail(p, p->lineno, "key \"%s\" in [%s]: appears twice (first on line %d)", k->name,
             p->section, *seen);
        return -1;
    }
    *seen = p->lineno;
    void *base = k->sect == SK_STAGE ? (void *)cur_stage(p) : (void *)p->c;
    char why[320];
    int rc = key_store(k, base, value, why, sizeof(why));
    if (rc == -2)
        fail_oom(p);
    else if (rc < 0)
        fail(p, p->lineno, "key \"%s\" in [%s]: %s", k->name, p->section, why);
    return rc < 0 ? -1 : 0;
}

static int unknown_key(struct parser *p, const char *name, const char *value)
{
    const char *typo = key_typo(p->kind, name);
    if (p->kind == SK_STAGE && !typo) {
        struct stage_conf *s = cur_stage(p);
        return kv_add(p, &s->own, &s->n_own, name, value);
    }
    if (typo)
        fail(p, p->lineno, "unknown key \"%s\" in [%s] (did you mean %s?)", name, p->section,
             typo);
    else
        fail(p, p->lineno, "unknown key \"%s\" in [%s]", name, p->section);
    return -1;
}

static void bad_key_name(struct parser *p, const char *name)
{
    char upper[KEY_MAX];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(upper); i++)
        upper[i] = name[i] >= 'a' && name[i] <= 'z' ? (char)(name[i] - 'a' + 'A') : name[i];
    upper[i] = '\0';
    const struct key_def *k = key_find(p->kind, upper);
    fail(p, p->lineno,
         "key \"%s\" in [%s]: keys are upper case (A-Z, 0-9, '_', starting with a letter)%s%s%s",
         name, p->section, k ? " (did you mean " : "", k ? k->name : "", k ? "?)" : "");
}

static int handler_cb(void *user, const char *section, const char *name, const char *value)
{
    struct parser *p = user;
    (void)section;                  /* truncated by inih; ours is p->section */
    if (p->failed)
        return 0;
    if (p->kind == SK_NONE) {
        fail(p, p->lineno, "key \"%s\": outside any section", name);
        return 0;
    }
    if (*name == '\0') {
        fail(p, p->lineno, "a value without a key in [%s]", p->section);
        return 0;
    }
    if (!key_name_ok(name)) {
        bad_key_name(p, name);
        return 0;
    }
    if (p->kind == SK_INGRESS)
        return kv_add(p, &p->c->ingress, &p->c->n_ingress, name, value) == 0;
    if (p->kind == SK_BEANSTALK)
        return kv_add(p, &p->c->beanstalk, &p->c->n_beanstalk, name, value) == 0;
    const struct key_def *k = key_find(p->kind, name);
    return (k ? known_key(p, k, value) : unknown_key(p, name, value)) == 0;
}

/* ---- checks after the whole file ---- */

static size_t key_index(const char *name)
{
    return (size_t)(key_find(SK_STAGE, name) - keys);
}

/* A NEXT or BOUNCE_STAGE naming a stage without a section. */
static void check_stage_ref(struct parser *p, size_t i, const char *key, const char *target)
{
    if (!target || conf_stage(p->c, target))
        return;
    fail(p, p->stage_key_line[i][key_index(key)], "key \"%s\" in [stage-%s]: no section [stage-%s]",
         key, p->c->stages[i].name, target);
}

/* USER_OPTIONS: option names an end user may set per address; none may
 * be operator-only (issue 11). */
static void check_user_options(struct parser *p, size_t i)
{
    const struct stage_conf *s = &p->c->stages[i];
    char name[KEY_MAX];
    for (const char *at = s->user_options; at && *at;) {
        size_t n = conf_list_next(&at, name, sizeof name);
        if (n == 0)
            break;
        const char *why = n >= sizeof name || !key_name_ok(name) ? "is not an option name"
                          : conf_option_operator_only(name)
                              ? "is operator-only: it runs code, names a URL, carries a credential or routes messages"
                              : NULL;
        if (why) {
            fail(p, p->stage_key_line[i][key_index("USER_OPTIONS")], "key \"USER_OPTIONS\" in [stage-%s]: \"%s\" %s",
                 s->name, name, why);
            return;
        }
    }
}

static void check_stages(struct parser *p)
{
    for (size_t i = 0; i < p->c->n_stages && !p->failed; i++) {
        const struct stage_conf *s = &p->c->stages[i];
        if (!s->program) {
            fail(p, s->line, "section [stage-%s]: PROGRAM is required", s->name);
            return;
        }
        bool next_first = p->stage_key_line[i][key_index("NEXT")]
                          < p->stage_key_line[i][key_index("BOUNCE_STAGE")];
        check_stage_ref(p, i, next_first ? "NEXT" : "BOUNCE_STAGE",
                        next_first ? s->next : s->bounce_stage);
        check_stage_ref(p, i, next_first ? "BOUNCE_STAGE" : "NEXT",
                        next_first ? s->bounce_stage : s->next);
        check_user_options(p, i);
    }
}

/* ---- connection strings and secrets (issue 11) ---- */

static int postgres_key_line(struct parser *p, const char *name)
{
    const struct key_def *k = key_find(SK_POSTGRES, name);
    return k ? p->key_line[k - keys] : 0;
}

/* CONNINFO must parse; WORKER_CONNINFO must parse and hold no password, as
 * it goes into every worker's environment. */
static void check_postgres(struct parser *p)
{
    char why[256];
    if (conninfo_has_password(p->c->conninfo, why, sizeof why) < 0)
        fail(p, postgres_key_line(p, "CONNINFO"), "key \"CONNINFO\" in [pepsi-postgres]: %s", why);
    if (p->c->worker_conninfo == NULL)
        return;
    int has = conninfo_has_password(p->c->worker_conninfo, why, sizeof why);
    int line = postgres_key_line(p, "WORKER_CONNINFO");
    if (has < 0)
        fail(p, line, "key \"WORKER_CONNINFO\" in [pepsi-postgres]: %s", why);
    else if (has > 0)
        fail(p, line, "key \"WORKER_CONNINFO\" in [pepsi-postgres]: holds a password (password= or "
             "sslpassword=), and this string goes into every worker's environment; leave the password "
             "out and let workers find it the way libpq does (a passfile: passfile= or PGPASSFILE; or "
             "a service: service=)");
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A key named like a credential: AUTHORIZATION, SIGNING_SECRET, any name
 * with SECRET, PASSWORD or PASSWD in it, or ending in TOKEN or API_KEY. */
static bool secret_key_name(const char *name)
{
    static const char *const parts[] = {"AUTHORIZATION", "SECRET", "PASSWORD", "PASSWD"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i]))
            return true;
    return has_suffix(name, "TOKEN") || has_suffix(name, "API_KEY");
}

/* A URL with a password in it (scheme://user:password@host/...), as
 * libcurl's URL parser reads it. */
static bool url_with_password(const char *value)
{
    if (strstr(value, "://") == NULL)
        return false;
    CURLU *u = curl_url();
    if (u == NULL)
        return false;
    char *pw = NULL;
    bool has = curl_url_set(u, CURLUPART_URL, value, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
               curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK && pw && *pw;
    curl_free(pw);
    curl_url_cleanup(u);
    return has;
}

/* The first key of kv[n] that holds a secret, or NULL. */
static const struct conf_kv *secret_kv(const struct conf_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (*kv[i].value && (secret_key_name(kv[i].key) || url_with_password(kv[i].value)))
            return &kv[i];
    return NULL;
}

/* Whether the file's own keys hold a secret: a password in CONNINFO, or
 * a key of [pepsi-ingress], [pepsi-beanstalk] or a stage section named
 * like a credential or holding a URL with a password. Says which in what
 * and where in *line. */
static bool secret_in_file(struct parser *p, int *line, char *what, size_t cap)
{
    const struct conf *c = p->c;
    const struct conf_kv *kv;
    if (conninfo_has_password(c->conninfo, NULL, 0) > 0) {
        *line = postgres_key_line(p, "CONNINFO");
        snprintf(what, cap, "key \"CONNINFO\" in [pepsi-postgres] holds a password");
        return true;
    }
    const char *sect = NULL;
    if ((kv = secret_kv(c->ingress, c->n_ingress)) != NULL)
        sect = "pepsi-ingress";
    else if ((kv = secret_kv(c->beanstalk, c->n_beanstalk)) != NULL)
        sect = "pepsi-beanstalk";
    for (size_t i = 0; kv == NULL && i < c->n_stages; i++)
        if ((kv = secret_kv(c->stages[i].own, c->stages[i].n_own)) != NULL)
            snprintf(what, cap, "key \"%s\" in [stage-%s] holds a secret", kv->key, c->stages[i].name);
    if (kv == NULL)
        return false;
    if (sect)
        snprintf(what, cap, "key \"%s\" in [%s] holds a secret", kv->key, sect);
    *line = kv->line;
    return true;
}

/* A file holding a secret must not be open to other users (issue 11). */
static void check_secrets(struct parser *p)
{
    char what[256];
    int line = 0;
    if (p->failed || p->st == NULL || (p->st->st_mode & S_IRWXO) == 0)
        return;
    if (!secret_in_file(p, &line, what, sizeof what))
        return;
    fail(p, line, "%s, and users other than the file's owner and group may read it (mode %04o); "
         "refusing it, as ssh and libpq do with such files: run chmod o-rwx %s",
         what, (unsigned)(p->st->st_mode & 07777), p->name);
    p->insecure = true;
}

/* ---- the database overlay (D-117) ---- */

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
    return kv_add(p, &s->own, &s->n_own, key, value);
}

/* A common key back to its default (PROGRAM has none: the section then
 * fails the PROGRAM check). */
static int common_unset(struct parser *p, const struct key_def *k, struct stage_conf *s)
{
    char why[256];
    if (k->def == NULL) {
        char **field = (char **)(void *)((char *)s + k->off);
        free(*field);
        *field = NULL;
        return 0;
    }
    int rc = key_store(k, s, k->def, why, sizeof why);
    if (rc == -2)
        fail_oom(p);
    return rc < 0 ? -1 : 0;
}

static int common_set(struct parser *p, const struct key_def *k, struct stage_conf *s,
                      const char *value)
{
    char why[320];
    p->stage_key_line[p->stage][k - keys] = -1;
    int rc = key_store(k, s, value, why, sizeof why);
    if (rc == -2)
        fail_oom(p);
    else if (rc < 0)
        fail(p, -1, "key \"%s\" in [%s]: %s", k->name, p->section, why);
    return rc < 0 ? -1 : 0;
}

/* Finds or creates the stage of an overlay row and makes it current. */
static struct stage_conf *overlay_stage(struct parser *p, const char *name)
{
    p->kind = SK_STAGE;
    snprintf(p->section, sizeof p->section, "stage-%s", name);
    for (size_t i = 0; i < p->c->n_stages; i++) {
        if (strcmp(p->c->stages[i].name, name) == 0) {
            p->stage = i;
            return &p->c->stages[i];
        }
    }
    p->lineno = -1;
    return begin_stage(p, name) == 0 ? cur_stage(p) : NULL;
}

static int overlay_row(struct parser *p, const struct conf_override *o)
{
    if (!o->section || strncmp(o->section, "stage-", 6) != 0 || !stage_name_ok(o->section + 6)) {
        fail(p, -1, "section [%s]: only [stage-NAME] sections can be overridden",
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
    if (!o->key || !key_name_ok(o->key)) {
        fail(p, -1, "key \"%s\" in [%s]: keys are upper case (A-Z, 0-9, '_', starting with a letter)",
             o->key ? o->key : "", o->section);
        return -1;
    }
    struct stage_conf *s = overlay_stage(p, name);
    if (s == NULL)
        return -1;
    const struct key_def *k = key_find(SK_STAGE, o->key);
    if (k)
        return o->value ? common_set(p, k, s, o->value) : common_unset(p, k, s);
    const char *typo = key_typo(SK_STAGE, o->key);
    if (typo) {
        fail(p, -1, "unknown key \"%s\" in [%s] (did you mean %s?)", o->key, p->section, typo);
        return -1;
    }
    if (o->value == NULL) {
        own_unset(s, o->key);
        return 0;
    }
    return own_set(p, s, o->key, o->value);
}

static void apply_overlay(struct parser *p, const struct conf_override *rows, size_t n)
{
    for (size_t i = 0; i < n && !p->failed; i++)
        overlay_row(p, &rows[i]);
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
        fail_oom(&p);
    else if (apply_defaults(&p, SK_PEPSI, out) == 0 && apply_defaults(&p, SK_POSTGRES, out) == 0
             && apply_defaults(&p, SK_DISPATCH, out) == 0) {
        int rc = ini_parse_stream(reader_cb, &p, handler_cb, &p);
        if (rc == -2)
            fail_oom(&p);
        else if (rc > 0 && (!p.failed || rc < p.err_line))
            syntax_error(&p, rc);
        check_postgres(&p);
        check_secrets(&p);
        apply_overlay(&p, rows, n_rows);
        check_stages(&p);
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

const char *conf_stage_own(const struct stage_conf *s, const char *key)
{
    if (!s || !key)
        return NULL;
    for (size_t i = 0; i < s->n_own; i++)
        if (strcmp(s->own[i].key, key) == 0)
            return s->own[i].value;
    return NULL;
}

size_t conf_list_next(const char **at, char *out, size_t cap)
{
    const char *s = *at;
    while (*s == ' ' || *s == '\t' || *s == ',')
        s++;
    size_t n = 0;
    while (s[n] && s[n] != ' ' && s[n] != '\t' && s[n] != ',')
        n++;
    *at = s + n;
    if (cap == 0)
        return 0;
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(out, s, k);
    out[k] = '\0';
    return n;
}

bool conf_list_has(const char *list, const char *name)
{
    char item[KEY_MAX];
    for (const char *at = list; at && *at;) {
        size_t n = conf_list_next(&at, item, sizeof item);
        if (n == 0)
            break;
        if (n < sizeof item && strcmp(item, name) == 0)
            return true;
    }
    return false;
}

bool conf_option_operator_only(const char *key)
{
    /* The same rule as pepsi.settings_option_operator_only (deploy/settings.sql). */
    static const char *const exact[] = {"PROGRAM", "NEXT", "BOUNCE_STAGE", "THEN", "ELSE", "FUSION",
                                        "USER_OPTIONS", "PARALLELISM", "QUEUE_LIMIT", "MAX_MESSAGES",
                                        "WORKER_IDLE_TIMEOUT", "MAX_RUNTIME", "PASS_CONNINFO", NULL};
    static const char *const parts[] = {"COMMAND", "CONDITION", "URL", "SECRET", "PASSWORD", "PASSWD",
                                        "TOKEN", "AUTH", "CREDENTIAL", "KEY", "CONNINFO", "SCRIPT",
                                        "EXEC", "PROGRAM", "STAGE", "HOST", NULL};
    if (key == NULL)
        return true;
    for (const char *const *e = exact; *e; e++)
        if (strcmp(key, *e) == 0)
            return true;
    for (const char *const *q = parts; *q; q++)
        if (strstr(key, *q))
            return true;
    return false;
}
