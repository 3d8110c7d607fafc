/* pepsi-worker.h — libpepsi-worker, API version 1: the library a pepsi
 * stage program written in C links to (issue 13). Installed as
 * $(PREFIX)/include/pepsi-worker.h with libpepsi-worker.{a,so} and
 * pepsi-worker.pc:
 *
 *     cc -o my-stage my-stage.c $(pkg-config --cflags --libs pepsi-worker)
 *
 * (examples/c-stage/ is a whole stage with its Makefile.)
 *
 * What the library owns: the worker protocol (DESIGN.md, README "The
 * worker protocol"). It reads the configuration file and the database
 * overlay of [stage-*] sections and refuses to start (exit 78) when its
 * section cannot be used (D-113) or the database schema is not the one the
 * library was built for (D-12); connects once; says "ready" (D-25); reads
 * ids, loads each message with its per-address settings in one query,
 * splits a message whose recipients' settings differ (D-124), commits the
 * outcome in one call (D-76) and answers one status line per id, in order,
 * with the stage's time (D-24, D-26). Database trouble becomes status 74
 * (lost connection, D-99) or 75 (overload, D-94), never a failed message;
 * any other database error is a host error of the stage, retried with
 * backoff until MAX_LIFETIME (D-103, D-104). On SIGTERM it finishes the
 * message in hand, answers it and exits 0. Stdout is the protocol's: a
 * stage never writes to it (log with pepsi_log, which writes stderr).
 *
 * What the stage owns: its own keys of its [stage-*] section (declared in
 * own_keys; any other key of the section that is not a common key refuses
 * the start), checking them once in setup, and run(): a function from a
 * loaded message to an outcome (advance, finish, pause, fail, host error)
 * with an optional state patch. A stage never touches the database row
 * itself, and a stage program of its own is never fused with another
 * stage (D-128).
 *
 * Versions: PEPSI_WORKER_API_VERSION counts changes of this header; the
 * shared library's soname (libpepsi-worker.so.0) changes with any change
 * of the layout of these structures or of a function's signature. Only the
 * functions declared here are exported by the library. */
#ifndef PEPSI_WORKER_H
#define PEPSI_WORKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PEPSI_WORKER_API_VERSION 1

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

/* One stage as a worker runs it: opaque. */
struct pepsi_worker;

/* What a stage program declares. */
struct pepsi_stage_def {
    const char *program;             /* e.g. "pass" for pepsi-stage-pass; names it in log lines */
    bool loads_body;                 /* loads the header block and body (D-73) */
    bool skip_load;                  /* its outcome needs nothing of the message: no load query;
                                        run() sees only id, stage and an empty state */
    bool fusion_default;             /* FUSION when the section does not say (D-127); only
                                        stages built into pepsi-runner are ever fused */
    const char *const *own_keys;     /* its own [stage-*] keys, NULL-terminated; others refuse */
    const char *const *user_keys;    /* of those, what an end user's settings control message may
                                        set per address (issue 11): an explicit allow-list,
                                        NULL-terminated; NULL allows nothing. A section's
                                        USER_OPTIONS may narrow it, never widen it. Never a key
                                        that runs code, names a URL, carries a credential or
                                        routes messages (README "Who may change settings"). */
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

/* The worker's stage name (PEPSI_STAGE: the NAME of [stage-NAME]). */
const char *pepsi_worker_stage(const struct pepsi_worker *w);

/* A stage's private data, set by setup. */
void *pepsi_worker_data(const struct pepsi_worker *w);
void pepsi_worker_set_data(struct pepsi_worker *w, void *data);

/* The value of the stage's own key for this message: the per-address
 * override of its correspondent when there is one (D-122), else the
 * section's. NULL when neither has the key. m may be NULL (in setup: the
 * section's value). */
const char *pepsi_option(const struct pepsi_worker *w, const struct pepsi_message *m, const char *key);

/* Fills a reason with printf formatting (truncated to fit). */
void pepsi_outcome_reason(struct pepsi_outcome *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

enum pepsi_log_level {
    PEPSI_LOG_ERROR,
    PEPSI_LOG_WARNING,
    PEPSI_LOG_NOTICE,
    PEPSI_LOG_INFO,
    PEPSI_LOG_DEBUG,
};

/* Logs one line on stderr (the runner's log), tagged with the stage, in
 * the runner's format ("LEVEL:  stage: message"); below the level given
 * with -L (default info) it prints nothing. */
void pepsi_log(const struct pepsi_worker *w, enum pepsi_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs the worker until EOF on stdin or SIGTERM; config_path is the -c
 * argument or NULL ($PEPSI_CONFIG, then the default path). Returns the
 * exit status: 0, 78 when it refused to run, 1 on other start-up errors. */
int pepsi_worker_main(const struct pepsi_stage_def *def, const char *config_path);

/* The whole main() of a stage program: reads the command line the runner
 * starts a worker with, `PROGRAM [-c FILE] [-L LEVEL] [-v] worker`, and
 * runs pepsi_worker_main. Returns the exit status (64 for a command line
 * it cannot read), e.g. `return pepsi_worker_run(argc, argv, &my_stage);`. */
int pepsi_worker_run(int argc, char **argv, const struct pepsi_stage_def *def);

/* PEPSI_WORKER_API_VERSION of the library linked at run time. */
int pepsi_worker_api_version(void);

#ifdef __cplusplus
}
#endif

#endif
