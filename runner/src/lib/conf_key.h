/* lib/conf_key.h — the shape of pepsi.conf's one key table (issue 13): what
 * a row says about a key (its section, name, type, range, default, flags,
 * one line of documentation). The table itself is keys[] in lib/conf.c; it
 * is published to SQL as pepsi.config_key (deploy/config_keys.sql, written
 * by `pepsi-runner conf-keys sql` and kept equal by `make lint`).
 * Owns: the row type, its names and the lookups on the table
 * (lib/conf_names.c). Uses: lib/conf (struct conf_kv), libcurl's URL parser. */
#ifndef PEPSI_LIB_CONF_KEY_H
#define PEPSI_LIB_CONF_KEY_H

#include <stdbool.h>
#include <stddef.h>

/* Where a key belongs. The last three describe no key the parser reads:
 * a built-in stage program's own keys (listed for their flags) and rules
 * that hold for every option whose name contains, or ends in, a text. */
enum conf_sect {
    CS_NONE,                        /* before the first section header */
    CS_PEPSI,
    CS_POSTGRES,
    CS_DISPATCH,
    CS_INGRESS,
    CS_BEANSTALK,
    CS_STAGE,
    CS_STAGE_OWN,                   /* a built-in stage program's own key */
    CS_NAME_PART,                   /* any option whose name contains it */
    CS_NAME_SUFFIX,                 /* any option whose name ends in it */
    CS_COUNT,
};

enum conf_type {
    CT_STRING,                      /* char * */
    CT_BOOL,                        /* bool */
    CT_INT,                         /* int within [min, max] */
    CT_DURATION,                    /* int64_t milliseconds, > 0 */
    CT_STAGE,                       /* char *, a valid stage name */
    CT_TRISTATE,                    /* int: -1 unset, 0 no, 1 yes */
    CT_OPTION_LIST,                 /* char *, option names (conf_list_next) */
    CT_ANY,                         /* a rule on names: no value of its own */
};

#define CK_OPTIONAL 1               /* an empty value means unset */
#define CK_REQUIRED 2               /* no default: the section must set it */
#define CK_OPERATOR 4               /* operator-only: never set by an end user (issue 11) */
#define CK_SECRET 8                 /* holds a credential: the file must be private */
#define CK_RELOAD 16                /* taken up at run time, without a restart */

struct conf_key {
    enum conf_sect sect;
    const char *name;
    enum conf_type type;
    int flags;
    int min, max;                   /* CT_INT */
    const char *def;                /* default as text; NULL with CK_REQUIRED */
    size_t off;                     /* in struct conf, or struct stage_conf */
    const char *doc;                /* one line */
};

/* The table: its rows and their count, in the order of conf/pepsi.conf. */
const struct conf_key *conf_keys(size_t *n);

/* The names SQL and the README use: "pepsi", "pepsi-postgres", ...,
 * "stage", "stage-own", "name-part", "name-suffix"; "string", "bool",
 * "int", "duration", "stage", "tristate", "option-list", "any". */
const char *conf_sect_name(enum conf_sect s);
const char *conf_type_name(enum conf_type t);

/* The row of a key of sect called name, or NULL. */
const struct conf_key *conf_key_find(enum conf_sect sect, const char *name);

/* The optimal string alignment distance of two keys (SIZE_MAX for keys
 * of 256 characters or more): conf_key_typo's measure, also used for the
 * keys of built-in stages (issue 15). pepsi.conf_edit_distance is the SQL
 * twin; testdata/conf-value-vectors.json holds cases for both. */
size_t conf_key_distance(const char *a, const char *b);

/* The key of sect closest to name within two edits (a key of 4
 * characters or fewer: one), or NULL: a probable misspelling. */
const char *conf_key_typo(enum conf_sect sect, const char *name);

/* A key named like a credential: a CK_SECRET row of CS_NAME_PART in its
 * name, or of CS_NAME_SUFFIX at its end (AUTHORIZATION, SIGNING_SECRET,
 * ...PASSWORD..., ...TOKEN, ...API_KEY). */
bool conf_key_secret_name(const char *name);

/* A URL with a password in it (scheme://user:password@host/...), as
 * libcurl's URL parser reads it. */
bool conf_url_has_password(const char *value);

struct conf_kv;

/* The first key of kv[n] that holds a secret (a non-empty value of a key
 * named like a credential, or a URL with a password), or NULL. */
const struct conf_kv *conf_kv_secret(const struct conf_kv *kv, size_t n);

#endif
