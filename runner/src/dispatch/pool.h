/* dispatch/pool.h — a stage's elastic pool of worker processes (D-62..D-68) and the
 * runner's side of the worker protocol (D-21..D-28, D-79..D-91, D-94).
 * A worker is spawned only when its stage has work and free capacity,
 * takes up to QUEUE_LIMIT ids in one write, answers them in order, is
 * stopped after WORKER_IDLE_TIMEOUT idle or once its pipeline drains after
 * MAX_MESSAGES (a built-in's without MAX_MESSAGES: after MAX_RSS_GROWTH of
 * memory growth, issue 19), its successor started while it drains. What the answers mean for the queue (statistics, 74/75,
 * strikes, requeues) is the dispatcher's business, reported through
 * struct pool_events.
 * Owns: the worker processes, their pipes and in-flight ids. Uses:
 * dispatch/stats.h, lib/ (conf, proto, log, util), libuv. */
#ifndef PEPSI_DISPATCH_POOL_H
#define PEPSI_DISPATCH_POOL_H

#include "lib/conf.h"
#include "lib/proto.h"
#include "dispatch/stats.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct stage;

/* What a pool tells the dispatcher. */
struct pool_events {
    /* The worker answered id with *st; usec is the wall time since the
     * message reached the head of the worker's queue. */
    void (*answered)(void *arg, struct stage *s, int64_t id, const struct proto_status *st,
                     uint64_t usec);
    /* These ids were handed out but never ran: back to pending (D-89, D-90). */
    void (*requeue)(void *arg, struct stage *s, const int64_t *ids, size_t n);
    /* The head message of a worker that crashed ("crash", D-81), broke
     * the protocol after ready (also "crash", issue 12) or hung past
     * MAX_RUNTIME ("hang", D-82). */
    void (*strike)(void *arg, struct stage *s, int64_t id, const char *kind, const char *reason);
    /* A worker of stage s could not get a database connection at start
     * (exit 75 before ready): back-pressure, as a status 75 (D-94, D-96). */
    void (*overload)(void *arg, struct stage *s);
    /* Capacity was freed or a worker went away: time for a claim round. */
    void (*wake)(void *arg);
    void *arg;
};

/* What every pool shares. */
struct pool_env {
    uv_loop_t *loop;
    const char *config_file;       /* [pepsi-dispatch] CONFIG_FILE: -c FILE for workers, or NULL */
    const char *config_path;       /* the runner's config file, PEPSI_CONFIG for workers, or NULL */
    const char *conninfo;          /* PEPSI_CONNINFO for workers: never with a password */
    const char *passfile;          /* PGPASSFILE for workers (the runner's), or NULL: theirs is kept */
    const char *self_dir;          /* where pepsi-runner lives: pepsi-stage-* built-ins are found there first */
    int64_t cooldown_ms;           /* hold-back after a worker died before ready (D-90) */
    int max_hops;                  /* [pepsi] MAX_HOPS: PEPSI_MAX_HOPS for workers (issue 16) */
    bool worker_synchronous_commit; /* PEPSI_WORKER_SYNCHRONOUS_COMMIT (yes/no) for workers (issue 16) */
    bool shutting_down;            /* in-flight ids of exiting workers are requeued, never struck */
    struct pool_events ev;
    struct dispatch_delta *dstats; /* workers_started, workers_exited */
};

enum worker_state {
    WORKER_STARTING,   /* spawned, no "ready" yet */
    WORKER_READY,      /* answering ids */
    WORKER_CLOSING,    /* stdin closed or signalled; waiting for it to exit */
};

struct worker;

struct stage {
    char *name;
    const struct stage_conf *conf;
    struct pool_env *env;
    struct worker *workers;        /* live workers, newest first */
    int n_workers;                 /* including closing ones: each holds a connection */
    int inflight;                  /* ids handed out and not answered */
    int parallelism_cap;           /* effective PARALLELISM (lowered by overload, D-96) */
    uint64_t throttle_until_ms;    /* when the lowered cap expires */
    uint64_t cooldown_until_ms;    /* no new worker before this (D-90, D-91) */
    uint64_t spawn_failures;       /* consecutive deaths before ready, for the log */
    uint64_t protocol_violations;  /* consecutive workers torn down for a bad line after ready */
    bool retired;                  /* replaced by a configuration reload: takes no new work */
    int max_messages;              /* D-68's bound in effect: MAX_MESSAGES, else 1000 or, for a
                                      built-in, none (issue 19) */
    bool rss_recycle;              /* a built-in without MAX_MESSAGES: recycled on MAX_RSS_GROWTH */
    int hand_max;                  /* the most ids one worker may hold: conf_stage_hand_max */
    int hand_limit;                /* what a worker is handed now: QUEUE_LIMIT, or up to hand_max
                                      while the stage has a backlog (stage_adapt, issue 19) */
    int64_t service_us;            /* moving average of a message's time at the head of a worker */
    int claim_asked;               /* capacity asked in the claim in flight, */
    int claim_got;                 /* and the rows it brought */
    struct stage_delta delta;      /* statistics since the last flush */
};

/* Sets up a stage with no workers (D-63). */
void stage_init(struct stage *s, const struct stage_conf *conf, struct pool_env *env);

/* How many more ids the stage can take now: free slots of its usable
 * workers plus QUEUE_LIMIT for each worker it may still start (D-67). */
int stage_capacity(const struct stage *s, uint64_t now);

/* Hands ids to workers, packing them onto the fullest worker with room
 * first and starting workers as needed (D-64, D-66). Returns how many
 * were taken; the caller gives the rest back. */
size_t stage_assign(struct stage *s, const int64_t *ids, size_t n, uint64_t now);

/* After each claim: the stage asked for asked ids and got got. A full
 * claim means a backlog: when QUEUE_LIMIT is unset, the ids handed to one
 * worker double, up to hand_max and to about HAND_QUEUED_MS of work at the
 * stage's measured pace, so a busy stage commits in larger batches and
 * claims less often; a claim that is not full halves them again, down to
 * QUEUE_LIMIT (issue 19; past D-66, documented in the README). */
void stage_adapt(struct stage *s, int asked, int got);

/* Once a second: stops idle workers (D-65), recycles drained ones (D-68),
 * kills workers that do not exit when asked, finishes exited ones. */
void stage_tick(struct stage *s, uint64_t now);

/* Retires every worker: EOF on stdin, so each finishes what it holds and
 * exits; new work goes to fresh workers (D-116, D-117). */
void stage_retire_workers(struct stage *s);

/* Stops every worker: SIGTERM and EOF, SIGKILL when kill_now (D-08). */
void stage_stop(struct stage *s, bool kill_now);

/* Whether the stage has no worker left. */
bool stage_quiet(const struct stage *s);

/* Frees a quiet stage's memory. */
void stage_free(struct stage *s);

/* The number of workers that are starting or ready (not closing). */
int stage_active_workers(const struct stage *s);

#endif
