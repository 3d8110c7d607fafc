/* lib/conf_parse.h — inside pepsi.conf's parser (not for other modules):
 * the state of one parse, shared by the inih callbacks (lib/conf.c), the
 * checks after the whole file (lib/conf_check.c) and the database overlay
 * (lib/conf_overlay.c). Errors: the first one wins, as
 * "FILE:LINE: ...", "FILE: ..." (line 0) or "pepsi.config_override: ..."
 * (line -1, an overlay row).
 * Owns: struct parser. Uses: lib/ (conf, conf_key). */
#ifndef PEPSI_LIB_CONF_PARSE_H
#define PEPSI_LIB_CONF_PARSE_H

#include "lib/conf.h"
#include "lib/conf_key.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#define SECTION_TEXT_MAX 96         /* of a section name kept for messages */
#define CONF_KEY_ROWS 64            /* at least the rows of the key table */

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
    enum conf_sect kind;            /* of the current section */
    size_t stage;                   /* the current stage, CS_STAGE */
    char section[SECTION_TEXT_MAX]; /* its name, for messages */
    int section_line[CS_COUNT];     /* header lines of the fixed sections */
    int key_line[CONF_KEY_ROWS];    /* keys of the fixed sections */
    int (*stage_key_line)[CONF_KEY_ROWS]; /* keys of each stage, like c->stages */
    size_t stages_cap;
    const struct stat *st;          /* the file's status, NULL for a string */
    bool insecure;                  /* refused for its permissions: CONF_INSECURE */
};

/* Records an error at line unless an earlier one was recorded. */
void parser_fail(struct parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records "out of memory". */
void parser_fail_oom(struct parser *p);

/* The current stage. */
struct stage_conf *parser_stage(struct parser *p);

/* Adds [stage-name] (at p->lineno), with its defaults, and makes it
 * current. 0, or -1 after recording the error. */
int parser_begin_stage(struct parser *p, const char *name);

/* Adds key = value to kv[*n] (at p->lineno); a key already there is an
 * error. 0, or -1 after recording the error. */
int parser_kv_add(struct parser *p, struct conf_kv **kv, size_t *n, const char *key, const char *value);

/* The row's index in the key table: where p->key_line and
 * p->stage_key_line[stage] keep the line it was set on. */
size_t conf_key_index(const struct conf_key *k);

/* lib/conf_check.c: CONNINFO and WORKER_CONNINFO parse, and the second
 * holds no password; a file holding a secret is not open to other users;
 * every stage has a PROGRAM, its NEXT and BOUNCE_STAGE name a section and
 * its USER_OPTIONS no operator-only option. */
void conf_check_postgres(struct parser *p);
void conf_check_secrets(struct parser *p);
void conf_check_stages(struct parser *p);

/* lib/conf_overlay.c: the rows of pepsi.config_override over the file's
 * [stage-*] sections, in order. */
void conf_apply_overlay(struct parser *p, const struct conf_override *rows, size_t n);

#endif
