/* lib/conf_value.c — see conf_value.h: parsing durations, booleans,
 * integers and lists, and storing a key's value where its row says.
 *   durations  a number and an optional unit (ms, s, min, h, d;
 *              case-insensitive; blanks allowed between), a bare number is
 *              seconds. A fraction is accepted when it is a whole number of
 *              milliseconds ("1.5s", "0.25min"), never rounded ("0.5ms" is
 *              an error). "m" is refused: minutes or millis? Configuration
 *              keys also require a duration > 0.
 *   booleans   yes/no, true/false, on/off, 1/0, case-insensitive.
 *   integers   decimal, within the key's range.
 *   optional strings (CK_OPTIONAL): an empty value means unset, the same as
 *              leaving the key out. */
#include "lib/conf_value.h"

#include "lib/conf.h"
#include "lib/proto.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LIST_ITEM_MAX 256           /* longer items are no option name */

const char conf_expect_stage[] =
    "expected a stage name (1 to 63 characters of A-Z, a-z, 0-9, '_', '.', '-', "
    "starting with a letter or digit)";
static const char expect_duration[] = "expected a duration such as 500ms, 30s, 5min, 120h";
static const char expect_bool[] = "expected yes or no (or true/false, on/off, 1/0)";

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool is_upper(char ch)
{
    return ch >= 'A' && ch <= 'Z';
}

bool conf_stage_name_ok(const char *s)
{
    return proto_stage_name_valid(s, strlen(s));
}

/* Keys are upper case: [A-Z][A-Z0-9_]*. */
bool conf_key_name_ok(const char *s)
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

/* ---- storing a value ---- */

static int store_string(const struct conf_key *k, char **dst, const char *value,
                        char *why, size_t whylen)
{
    if (*value == '\0' && (k->flags & CK_REQUIRED)) {
        snprintf(why, whylen, "must not be empty");
        return -1;
    }
    if (k->type == CT_STAGE && *value && !conf_stage_name_ok(value)) {
        snprintf(why, whylen, "invalid value \"%s\": %s", value, conf_expect_stage);
        return -1;
    }
    char *copy = NULL;
    if ((*value || !(k->flags & CK_OPTIONAL)) && !(copy = strdup(value))) {
        snprintf(why, whylen, "out of memory");
        return -2;
    }
    free(*dst);
    *dst = copy;
    return 0;
}

static int store_int(const struct conf_key *k, int *dst, const char *value, char *why,
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

int conf_value_store(const struct conf_key *k, void *base, const char *value, char *why,
                     size_t whylen)
{
    char *at = (char *)base + k->off;
    switch (k->type) {
    case CT_STRING:
    case CT_STAGE:
    case CT_OPTION_LIST:
        return store_string(k, (char **)(void *)at, value, why, whylen);
    case CT_BOOL:
        return store_bool((bool *)(void *)at, value, why, whylen);
    case CT_INT:
        return store_int(k, (int *)(void *)at, value, why, whylen);
    case CT_DURATION:
        return store_duration((int64_t *)(void *)at, value, why, whylen);
    case CT_TRISTATE:
        return store_tristate((int *)(void *)at, value, why, whylen);
    case CT_ANY:
        break;
    }
    snprintf(why, whylen, "unknown key type");
    return -1;
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
    char item[LIST_ITEM_MAX];
    for (const char *at = list; at && *at;) {
        size_t n = conf_list_next(&at, item, sizeof item);
        if (n == 0)
            break;
        if (n < sizeof item && strcmp(item, name) == 0)
            return true;
    }
    return false;
}
