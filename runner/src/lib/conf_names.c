/* lib/conf_names.c — what pepsi.conf's key table (lib/conf_key.h) says
 * about a name: the key it is, the key it is probably a typo of, whether
 * an end user may set it, whether it names a credential. */
#include "lib/conf_key.h"

#include "lib/conf.h"

#include <stdint.h>
#include <string.h>

#include <curl/curl.h>

#define TYPO_DISTANCE 2             /* see conf_key_typo() */
#define KEY_MAX 256                 /* longer keys cannot come from inih */

const struct conf_key *conf_key_find(enum conf_sect sect, const char *name)
{
    size_t n;
    const struct conf_key *k = conf_keys(&n);
    for (size_t i = 0; i < n; i++)
        if (k[i].sect == sect && strcmp(k[i].name, name) == 0)
            return &k[i];
    return NULL;
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Damerau-Levenshtein distance (optimal string alignment: insertions,
 * deletions, substitutions, transpositions of neighbours). */
size_t conf_key_distance(const char *a, const char *b)
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

const char *conf_key_typo(enum conf_sect sect, const char *name)
{
    size_t n;
    const struct conf_key *k = conf_keys(&n);
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (k[i].sect != sect)
            continue;
        size_t limit = strlen(k[i].name) <= 4 ? 1 : TYPO_DISTANCE;
        size_t d = conf_key_distance(name, k[i].name);
        if (d <= limit && d < best_d) {
            best = k[i].name;
            best_d = d;
        }
    }
    return best;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Whether a CS_NAME_PART row with flag is in name, or a CS_NAME_SUFFIX
 * row with flag ends it. */
static bool name_rule(const char *name, int flag)
{
    size_t n;
    const struct conf_key *k = conf_keys(&n);
    for (size_t i = 0; i < n; i++) {
        if (!(k[i].flags & flag))
            continue;
        if ((k[i].sect == CS_NAME_PART && strstr(name, k[i].name))
            || (k[i].sect == CS_NAME_SUFFIX && has_suffix(name, k[i].name)))
            return true;
    }
    return false;
}

bool conf_key_secret_name(const char *name)
{
    return name_rule(name, CK_SECRET);
}

/* Operator-only (issue 11): a common stage key or a built-in program's own
 * key with CK_OPERATOR, or a name that a CK_OPERATOR name rule matches. The
 * same rows make pepsi.settings_option_operator_only (deploy/config_keys.sql). */
bool conf_option_operator_only(const char *key)
{
    if (key == NULL)
        return true;
    const struct conf_key *k = conf_key_find(CS_STAGE, key);
    if (k == NULL)
        k = conf_key_find(CS_STAGE_OWN, key);
    return (k && (k->flags & CK_OPERATOR)) || name_rule(key, CK_OPERATOR);
}

bool conf_url_has_password(const char *value)
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

const struct conf_kv *conf_kv_secret(const struct conf_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (*kv[i].value && (conf_key_secret_name(kv[i].key) || conf_url_has_password(kv[i].value)))
            return &kv[i];
    return NULL;
}
