/* lib/conf.h — pepsi.conf: the INI file (parsed with inih), its defaults and
 * validation. Every key the runner knows, with its default, sits in one
 * table in conf.c (rows: lib/conf_key.h; converters: lib/conf_value.c);
 * conf/pepsi.conf documents the same keys, pepsi.config_key publishes them. Errors name
 * the file, the line and the key: "FILE:LINE: key \"X\" in [SECTION]: message".
 * Owns: struct conf and its sections. Uses: lib/ (pgpass, proto), inih,
 * libcurl (its URL parser, for passwords in URLs);
 * nothing above lib/. */
#ifndef PEPSI_LIB_CONF_H
#define PEPSI_LIB_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key=value pair kept as text: a stage's own keys, and the sections
 * that other components validate ([pepsi-ingress], [pepsi-beanstalk]). */
struct conf_kv {
    char *key;
    char *value;
    int line;
};

/* One [stage-<name>] section. */
struct stage_conf {
    char *name;                      /* <name> of [stage-<name>] */
    int line;                        /* line of the section header */
    char *program;                   /* PROGRAM (required) */
    int program_line;                /* its line in the file; -1: from the overlay */
    int parallelism;                 /* PARALLELISM, default 4 */
    int queue_limit;                 /* QUEUE_LIMIT, default 4 */
    bool queue_limit_set;            /* QUEUE_LIMIT was set (file or overlay): no adaptive
                                        hand-out (conf_stage_hand_max, conf_stage_batch_max,
                                        issue 19) */
    int max_messages;                /* MAX_MESSAGES, 0 (default): unset, see CONF_MAX_MESSAGES */
    int max_rss_growth_mb;           /* MAX_RSS_GROWTH, default 64 (MiB) */
    int64_t worker_idle_timeout_ms;  /* WORKER_IDLE_TIMEOUT, default 5 s */
    int64_t max_runtime_ms;          /* MAX_RUNTIME, default 10 min */
    int64_t max_lifetime_ms;         /* MAX_LIFETIME, default 120 h */
    char *bounce_stage;              /* BOUNCE_STAGE, NULL when unset */
    int fusion;                      /* FUSION: -1 unset (the program's default), 0 no, 1 yes */
    char *next;                      /* NEXT, NULL: the message is finished after this stage */
    char *user_options;              /* USER_OPTIONS: what end users may set per address, NULL: the
                                        program's default (a built-in's declared list, else none) */
    struct conf_kv *own;             /* the stage's own keys (e.g. COMMAND) */
    size_t n_own;
};

/* The most ids one worker of the stage takes into one batch, and the most
 * it holds. With QUEUE_LIMIT set, both exactly QUEUE_LIMIT (D-66, D-69).
 * Unset, the dispatcher adapts while the stage has a backlog (issue 19,
 * dispatch/pool.c stage_adapt): a batch of up to CONF_BATCH_LIMIT_MAX (the
 * worker is told it as PEPSI_QUEUE_LIMIT), and up to CONF_HAND_AHEAD such
 * batches held, so that a worker that answers one batch finds the next in
 * its pipe while the claim for the slots it freed runs (claim ahead). The
 * reconciliation's stuck bound is sized for what a worker may hold.
 * 128 x 4 (512 held) over 64 x 4: claims and commits of half the count,
 * fused +12-45 %, unfused +11-23 % hops/s (4 alternated pairs, issue 19);
 * the hold still stops at about 20 ms of work at the stage's pace. Both
 * may be set at build time (-D) for such an A/B. */
#ifndef CONF_BATCH_LIMIT_MAX
#define CONF_BATCH_LIMIT_MAX 128
#endif
#ifndef CONF_HAND_AHEAD
#define CONF_HAND_AHEAD 4
#endif
#define CONF_HAND_LIMIT_MAX (CONF_BATCH_LIMIT_MAX * CONF_HAND_AHEAD)
int conf_stage_hand_max(const struct stage_conf *s);
int conf_stage_batch_max(const struct stage_conf *s);

struct conf {
    char *path;                      /* the file read, or a name for a string */
    /* [pepsi] */
    bool allow_fusion;               /* ALLOW_FUSION, default yes */
    bool share_telemetry;            /* SHARE_TELEMETRY, default no */
    int max_hops;                    /* MAX_HOPS, default 1000: a message's advances before it fails as a
                                        loop (issue 12; workers pass it to every advance) */
    /* [pepsi-postgres] */
    char *conninfo;                  /* CONNINFO, default "" (libpq defaults, PG* variables) */
    char *worker_conninfo;           /* WORKER_CONNINFO, NULL: CONNINFO without its password */
    bool worker_synchronous_commit;  /* WORKER_SYNCHRONOUS_COMMIT, default no */
    int64_t connect_timeout_ms;      /* CONNECT_TIMEOUT, default 10 s */
    /* [pepsi-dispatch] */
    char *config_file;               /* CONFIG_FILE, NULL: workers start without -c */
    int64_t poll_interval_ms;        /* POLL_INTERVAL, default 5 s */
    int64_t stats_interval_ms;       /* STATS_INTERVAL, default 10 s */
    int owner_slot;                  /* OWNER_SLOT, default 0 */
    int partition_count;             /* PARTITION_COUNT, 0 (default): not checked (issue 14, T-41) */
    char *topology_fingerprint;      /* TOPOLOGY_FINGERPRINT, NULL: not checked (issue 14, T-08) */
    int64_t lock_wait_ms;            /* LOCK_WAIT, default 10 s (D-15) */
    int64_t cooldown_ms;             /* COOLDOWN, default 5 s (D-90) */
    int64_t overload_window_ms;      /* OVERLOAD_WINDOW, default 5 min (D-96) */
    bool fair_scheduling;            /* FAIR_SCHEDULING, default yes */
    int64_t fair_half_life_ms;       /* FAIR_HALF_LIFE, default 60 s */
    int fair_fifo_percent;           /* FAIR_FIFO_PERCENT, default 10 */
    int64_t reconcile_interval_ms;   /* RECONCILE_INTERVAL, default 5 min (W-23) */
    int64_t anomaly_interval_ms;     /* ANOMALY_INTERVAL, default 1 min (W-37) */
    bool maintenance;                /* MAINTENANCE, default yes: serve runs maintenance too */
    int vacuum_dead_tuples;          /* VACUUM_DEAD_TUPLES, default 50000; 0: autovacuum alone (issue 19) */
    /* [pepsi-ingress], [pepsi-beanstalk]: kept raw for their components */
    struct conf_kv *ingress;
    size_t n_ingress;
    struct conf_kv *beanstalk;
    size_t n_beanstalk;
    /* [stage-*] in file order */
    struct stage_conf *stages;
    size_t n_stages;
};

/* The largest MAX_HOPS: what pepsi.workqueue_hop_check accepts. */
#define CONF_MAX_HOPS_MAX 100000000

/* D-68's MAX_MESSAGES for a stage that leaves it unset (0) and whose
 * program is not a built-in (issue 19: built-ins recycle on memory
 * growth instead, MAX_RSS_GROWTH; dispatch/pool.c). */
#define CONF_MAX_MESSAGES 1000

/* conf_load's answer for a file that holds a secret (a password in
 * CONNINFO, a key named like a credential such as SIGNING_SECRET or
 * AUTHORIZATION, a URL with a password) and that other users may read:
 * refused like ssh and libpq refuse such files; the message says the fix
 * (chmod o-rwx FILE). Programs exit 78 (EX_CONFIG) on it. */
#define CONF_INSECURE (-3)

/* Reads and validates FILE into *out (zeroed first). Returns 0, or -1 with
 * a message "FILE:LINE: ..." in err, or CONF_INSECURE. On error *out holds
 * nothing to free. */
int conf_load(const char *path, struct conf *out, char *err, size_t errlen);

/* One row of the database overlay pepsi.config_override (D-117): in
 * [section] (only "stage-NAME"), key takes value; a NULL value takes the
 * key back out (a common key returns to its default); key "*" with a NULL
 * value removes the whole section. */
struct conf_override {
    const char *section;
    const char *key;
    const char *value;
};

/* conf_load, then the overlay rows laid over the file's [stage-*]
 * sections in order (a row may add a stage). The result is validated as a
 * whole; an error in a row reads "pepsi.config_override: ...". The
 * permission check (CONF_INSECURE) looks at the file's own keys only. */
int conf_load_overlay(const char *path, const struct conf_override *rows, size_t n_rows,
                      struct conf *out, char *err, size_t errlen);

/* The same for a configuration held in memory; name stands in for FILE. */
int conf_load_string(const char *text, const char *name, struct conf *out,
                     char *err, size_t errlen);

/* Frees everything conf_load allocated; *c is zeroed. Safe on a zeroed conf. */
void conf_free(struct conf *c);

/* The stage called name, or NULL. */
const struct stage_conf *conf_stage(const struct conf *c, const char *name);

/* The value of a stage's own key, or NULL when the section has none. */
const char *conf_stage_own(const struct stage_conf *s, const char *key);

/* "500ms", "30s", "5min", "120h", "2d", or a bare number of seconds, into
 * milliseconds. Returns 0, or -1 for anything else (negative, overflow,
 * unknown unit, trailing garbage). */
int conf_parse_duration(const char *s, int64_t *ms);

/* yes/no, true/false, on/off, 1/0 (case-insensitive). Returns 0 or -1. */
int conf_parse_bool(const char *s, bool *b);

/* A decimal integer within [min, max]. Returns 0 or -1. */
int conf_parse_int(const char *s, int min, int max, int *out);

/* Lists such as USER_OPTIONS: items separated by blanks or commas. Copies
 * the next item at *at into out (truncated to cap), advances *at past it
 * and returns its full length, 0 at the end. */
size_t conf_list_next(const char **at, char *out, size_t cap);

/* Whether list (may be NULL) holds name. */
bool conf_list_has(const char *list, const char *name);

/* Whether an option may only be set by an operator, never by an end
 * user's settings control message: it runs code, names a URL, carries a
 * credential, routes messages or sizes a pool (issue 11): the CK_OPERATOR
 * rows of the key table (lib/conf_key.h, lib/conf_names.c), which also
 * make pepsi.settings_option_operator_only in SQL (deploy/config_keys.sql). */
bool conf_option_operator_only(const char *key);

/* The configuration file to read when -c is not given: $PEPSI_CONFIG when
 * set, else /etc/pepsi/pepsi.conf. */
const char *conf_default_path(void);

#endif
