/* test_conf_keys.c — issue 13 (slice conf): the one key table of
 * lib/conf.c, the rules read from it, and what `pepsi-runner conf-keys`
 * writes from it. */
#include "cli/conf_keys_cmd.h"
#include "lib/conf.h"
#include "lib/conf_key.h"
#include "lib/conf_value.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parsed_section(enum conf_sect s)
{
    return s == CS_PEPSI || s == CS_POSTGRES || s == CS_DISPATCH || s == CS_STAGE;
}

/* Every row is well formed: a key name, one line of documentation, no
 * row twice, and a default that its own converter accepts. */
static void test_rows(void)
{
    size_t n;
    const struct conf_key *k = conf_keys(&n);
    CHECK(n >= 30, "issue 13: the table has its rows (%zu)", n);
    for (size_t i = 0; i < n; i++) {
        CHECK(conf_key_name_ok(k[i].name), "issue 13: %s is a key name", k[i].name);
        CHECK(k[i].doc && *k[i].doc && !strchr(k[i].doc, '\n'), "issue 13: %s has one line of doc", k[i].name);
        CHECK(*conf_sect_name(k[i].sect) && *conf_type_name(k[i].type), "issue 13: %s has named section and type",
              k[i].name);
        for (size_t j = 0; j < i; j++)
            CHECK(k[j].sect != k[i].sect || strcmp(k[j].name, k[i].name) != 0, "issue 13: %s [%s] once",
                  k[i].name, conf_sect_name(k[i].sect));
        CHECK(((k[i].flags & CK_REQUIRED) != 0) == (parsed_section(k[i].sect) && k[i].def == NULL),
              "issue 13: %s has a default unless required", k[i].name);
        if (!parsed_section(k[i].sect) || k[i].def == NULL)
            continue;
        union {
            struct conf c;
            struct stage_conf s;
        } scratch;
        memset(&scratch, 0, sizeof scratch);
        char why[320] = "";
        int rc = conf_value_store(&k[i], &scratch, k[i].def, why, sizeof why);
        CHECK_INT(rc, 0, "issue 13: the default of %s (\"%s\") parses: %s", k[i].name, k[i].def, why);
        if (k[i].type == CT_STRING || k[i].type == CT_STAGE || k[i].type == CT_OPTION_LIST)
            free(*(char **)(void *)((char *)&scratch + k[i].off));
    }
}

/* The operator-only rule as conf.c wrote it out before issue 13: the
 * reference the table-driven rule must still answer like. */
static bool old_operator_only(const char *key)
{
    static const char *const exact[] = {"PROGRAM", "NEXT", "BOUNCE_STAGE", "THEN", "ELSE", "FUSION",
                                        "USER_OPTIONS", "PARALLELISM", "QUEUE_LIMIT", "MAX_MESSAGES",
                                        "MAX_RSS_GROWTH", /* issue 19: operator-only like MAX_MESSAGES */
                                        "WORKER_IDLE_TIMEOUT", "MAX_RUNTIME", "PASS_CONNINFO", NULL};
    static const char *const parts[] = {"COMMAND", "CONDITION", "URL", "SECRET", "PASSWORD", "PASSWD",
                                        "TOKEN", "AUTH", "CREDENTIAL", "KEY", "CONNINFO", "SCRIPT",
                                        "EXEC", "PROGRAM", "STAGE", "HOST", NULL};
    for (const char *const *e = exact; *e; e++)
        if (strcmp(key, *e) == 0)
            return true;
    for (const char *const *q = parts; *q; q++)
        if (strstr(key, *q))
            return true;
    return false;
}

/* The credential-name rule as conf.c wrote it out before issue 13. */
static bool old_secret_name(const char *name)
{
    static const char *const parts[] = {"AUTHORIZATION", "SECRET", "PASSWORD", "PASSWD"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i]))
            return true;
    size_t n = strlen(name);
    return (n >= 5 && strcmp(name + n - 5, "TOKEN") == 0) || (n >= 7 && strcmp(name + n - 7, "API_KEY") == 0);
}

static void same_rules(const char *name)
{
    CHECK(conf_option_operator_only(name) == old_operator_only(name),
          "issue 13: %s is operator-only exactly when it was (%d)", name, old_operator_only(name));
    CHECK(conf_key_secret_name(name) == old_secret_name(name),
          "issue 13: %s is named like a credential exactly when it was (%d)", name, old_secret_name(name));
}

/* The same probes as pgtap/52-config-keys.sql: every name of the table,
 * with a suffix and a prefix, and names of stage programs' own keys. */
static void test_rules_unchanged(void)
{
    static const char *const more[] = {"HEADERS", "MAX_LIFETIME", "TIMEOUT", "LANGUAGE", "SIGNATURE_TEXT",
                                       "API_KEY", "DB_PASSWORD", "SIGNING_SECRET", "SMTP_HOST", "WEBHOOK_URL",
                                       "METRICS_TOKEN", "TOKEN_TTL", "AUTHOR", "MONKEY", "STAGED", "EXECUTE",
                                       "A", "THEN_X", "NEXTS", "PROGRAMS", "FUSION2", "SUBJECT_PREFIX",
                                       "RETRIES", NULL};
    size_t n;
    const struct conf_key *k = conf_keys(&n);
    char buf[300];
    for (size_t i = 0; i < n; i++) {
        same_rules(k[i].name);
        snprintf(buf, sizeof buf, "%s_X", k[i].name);
        same_rules(buf);
        snprintf(buf, sizeof buf, "X_%s", k[i].name);
        same_rules(buf);
    }
    for (const char *const *m = more; *m; m++)
        same_rules(*m);
    CHECK(conf_option_operator_only(NULL), "issue 11: no name is operator-only");
}

/* conf-keys sql: one INSERT row per key the parser reads, and the
 * function that reads them. make lint compares the whole text with
 * deploy/config_keys.sql. */
static void test_sql(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL) {
        CHECK(false, "open_memstream");
        return;
    }
    CHECK_INT(conf_keys_sql(out), 0, "issue 13: conf-keys sql writes");
    fclose(out);
    CHECK(strncmp(text, "-- Deploy pepsi:config_keys to pg\n", 34) == 0, "issue 13: a sqitch deploy script");
    CHECK_CONTAINS(text, "    ('stage', 'PROGRAM', 'string', null, null, null, true, true, false, false, true, ",
                   "issue 13: PROGRAM is required, operator-only, reloadable");
    CHECK_CONTAINS(text, "    ('stage', 'MAX_LIFETIME', 'duration', 1, null, '120h', false, false, false, true, true, ",
                   "issue 13: MAX_LIFETIME may be set per address");
    CHECK_CONTAINS(text, "    ('pepsi-dispatch', 'FAIR_FIFO_PERCENT', 'int', 0, 100, '10', ",
                   "issue 13: an int carries its range");
    CHECK_CONTAINS(text, "runner''s lock", "issue 13: quotes are doubled in SQL");
    CHECK_CONTAINS(text, "create function pepsi.settings_option_operator_only(p_option text)",
                   "issue 13: the operator-only rule reads the table");
    size_t rows = 0, n;
    const struct conf_key *k = conf_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char row[128];
        snprintf(row, sizeof row, "    ('%s', '%s', '%s', ", conf_sect_name(k[i].sect), k[i].name,
                 conf_type_name(k[i].type));
        rows += strstr(text, row) != NULL;
    }
    CHECK_INT((int)rows, (int)n, "issue 13: every row of the table is published");
    free(text);

    text = NULL;
    out = open_memstream(&text, &len);
    if (out == NULL)
        return;
    CHECK_INT(conf_keys_readme(out), 0, "issue 13: conf-keys readme writes");
    fclose(out);
    CHECK_CONTAINS(text, "| `[stage-<name>]` | `PARALLELISM` | integer, 1 to 1024 | `4` | ",
                   "issue 13: the README row of PARALLELISM");
    CHECK(strstr(text, "THEN") == NULL, "issue 13: the README table lists common keys only");
    free(text);
}

int main(void)
{
    test_rows();
    test_rules_unchanged();
    test_sql();
    return unit_done();
}
