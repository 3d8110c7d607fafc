/* sdk/sdk.h — the worker SDK: what a stage program written in C links to.
 *
 * A stage is a function over a loaded message that returns an outcome
 * (advance, finish, pause, fail, host error). The SDK owns the rest of the
 * worker protocol (DESIGN.md): it reads its section of the configuration
 * and refuses to start (exit 78) when it cannot be parsed (D-113), connects
 * once, checks the schema (D-12), says "ready" (D-25), then reads ids,
 * loads each message in one query, commits the outcome in one call (D-76)
 * and answers one status line per id, in order (D-24), with a report of
 * the stage's time (D-26). Database trouble becomes status 74 (lost
 * connection, D-99) or 75 (overload, D-94); the message is never failed
 * for it. On SIGTERM the SDK finishes the message in hand, answers it and
 * exits 0. */
#ifndef PEPSI_SDK_SDK_H
#define PEPSI_SDK_SDK_H

#include "lib/conf.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A loaded message. Strings are NUL-terminated; NULL where SQL had NULL. */
struct pepsi_message {
    int64_t id;
    const char *stage;
    const char *tube;
    const char *sender_key;
    const char *envelope_sender;     /* NULL: none; "": the null sender */
    char **recipients;
    size_t n_recipients;
    const char *header_from;
    const char *subject;
    json_t *state;                   /* borrowed: a JSON object */
    const char *arrived_at;
    bool has_body;                   /* headers/body loaded (the stage asked for them) */
    const char *headers;
    const unsigned char *body;
    size_t body_len;
    json_t *overrides;               /* borrowed: per-address settings by stage and address, or NULL */
};

enum pepsi_outcome_kind {
    PEPSI_ADVANCE,      /* to next, or to the section's NEXT; finish when there is none */
    PEPSI_FINISH,       /* done: the row is deleted */
    PEPSI_PAUSE,        /* retry this stage after pause_ms */
    PEPSI_FAIL,         /* a permanent error: failed now (D-110) */
    PEPSI_HOST_ERROR,   /* the host's fault: retried with backoff until MAX_LIFETIME (D-104) */
};

struct pepsi_outcome {
    enum pepsi_outcome_kind kind;
    const char *next;                /* PEPSI_ADVANCE: a stage name, or NULL for NEXT */
    int64_t pause_ms;                /* PEPSI_PAUSE */
    char reason[512];                /* PEPSI_PAUSE, PEPSI_FAIL, PEPSI_HOST_ERROR */
    const char *failure_class;       /* PEPSI_FAIL: NULL means "permanent" */
    json_t *state_patch;             /* keys merged into state; the SDK releases it */
    json_t *settings_changes;        /* ADVANCE/FINISH: per-address settings changed with the
                                        result, in the same call ([{"stage","option","value"}],
                                        value null deletes); the SDK releases it */
    const char *settings_address;    /* whose settings settings_changes are */
};

struct pepsi_worker;

/* What a stage program declares. */
struct pepsi_stage_def {
    const char *program;             /* e.g. "pass" for pepsi-stage-pass */
    bool loads_body;                 /* loads the header block and body (D-73) */
    bool skip_load;                  /* its outcome needs nothing of the message: no load query;
                                        run() sees only id, stage and an empty state */
    bool fusion_default;             /* FUSION when the section does not say (D-127) */
    const char *const *own_keys;     /* its own [stage-*] keys, NULL-terminated; others refuse */
    const char *const *user_keys;    /* of those, what an end user's settings control message may
                                        set per address (issue 11): an explicit allow-list,
                                        NULL-terminated; NULL allows nothing. A section's
                                        USER_OPTIONS may narrow it, never widen it. Never a key
                                        that runs code, names a URL, carries a credential or
                                        routes messages (conf_option_operator_only). */
    /* Checks the section once at start; -1 with a message refuses (78). */
    int (*setup)(struct pepsi_worker *w, char *err, size_t errlen);
    /* Runs the stage on one message; fills *out (zeroed, kind ADVANCE). */
    void (*run)(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out);
    /* Releases what setup made; may be NULL. */
    void (*teardown)(struct pepsi_worker *w);
    /* Checks a per-address override of one of its own keys (D-114); -1
     * with a message makes it a permanent error for that message. May be
     * NULL: any value is taken. */
    int (*check_option)(struct pepsi_worker *w, const char *key, const char *value, char *err,
                        size_t errlen);
    /* Whether it can run on this message with the metadata alone, when
     * fused behind a stage that loaded no body (D-131). NULL: by loads_body. */
    bool (*runs_on_metadata)(struct pepsi_worker *w, const struct pepsi_message *m);
};

/* The worker's stage name (PEPSI_STAGE), its section and the whole file. */
const char *pepsi_worker_stage(const struct pepsi_worker *w);
const struct stage_conf *pepsi_worker_section(const struct pepsi_worker *w);
const struct conf *pepsi_worker_conf(const struct pepsi_worker *w);

/* A stage's private data, set by setup. */
void *pepsi_worker_data(const struct pepsi_worker *w);
void pepsi_worker_set_data(struct pepsi_worker *w, void *data);

/* The value of the stage's own key for this message: the per-address
 * override of its correspondent when there is one (D-122), else the
 * section's. NULL when neither has the key. m may be NULL. */
const char *pepsi_option(const struct pepsi_worker *w, const struct pepsi_message *m, const char *key);

/* Whether OPTION = VALUE may be set per address for stage (of c, whose
 * PROGRAM is builtin, or NULL for a program of its own): 0, or -1 with
 * why. `pepsi-runner settings set` asks before writing (D-114). */
int pepsi_check_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                        const struct pepsi_stage_def *builtin, char *why, size_t cap);

/* Whether an end user may set OPTION per address for stage (of c, whose
 * PROGRAM is builtin, or NULL) with a settings control message: the
 * option must be on the stage's allow-list (the section's USER_OPTIONS;
 * without it, builtin's user_keys, or nothing for a program of its own)
 * and not operator-only; a value (NULL: a deletion) must then pass
 * pepsi_check_setting. 0, or -1 with why (issue 11). */
int pepsi_check_user_setting(const struct conf *c, const char *stage, const char *key, const char *value,
                             const struct pepsi_stage_def *builtin, char *why, size_t cap);

/* The built-in stages a worker may fuse (D-126, D-128): the multi-call
 * binary registers, before pepsi_worker_main, how to find the built-in
 * behind a PROGRAM; a stage program of its own registers nothing and never
 * fuses. */
void pepsi_sdk_builtins(const struct pepsi_stage_def *(*find)(const char *program));

/* Fills a reason with printf formatting (truncated to fit). */
void pepsi_outcome_reason(struct pepsi_outcome *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs the worker until EOF on stdin or SIGTERM; config_path is the -c
 * argument or NULL ($PEPSI_CONFIG, then the default path). Returns the
 * exit status: 0, 78 when it refused to run, 1 on other start-up errors. */
int pepsi_worker_main(const struct pepsi_stage_def *def, const char *config_path);

#endif
