/* dispatch/stats.h — statistics deltas kept in memory and flushed by the dispatcher
 * in one call of pepsi.stats_flush() (D-137..D-142). Only the dispatcher
 * writes the tables; a flush with no deltas writes nothing (D-139).
 * Owns: the deltas not yet flushed. Uses: jansson only. */
#ifndef PEPSI_DISPATCH_STATS_H
#define PEPSI_DISPATCH_STATS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Counters of one stage since the last flush (columns of pepsi.stage_stats). */
struct stage_delta {
    int64_t stages_executed;  /* worker passes that began at this stage (D-141) */
    int64_t runs;             /* times this stage's logic ran, fused or not (D-135) */
    int64_t run_usec;
    int64_t succeeded;
    int64_t failed;
    int64_t tempfailed;
    int64_t strikes;
    int64_t requeued;
};

/* Counters of the dispatcher since the last flush (pepsi.dispatch_stats). */
struct dispatch_delta {
    int64_t claims;
    int64_t claimed;
    int64_t wakeups;
    int64_t notifications;
    int64_t workers_started;
    int64_t workers_exited;
    int64_t bodies_collected;
};

/* Whether anything was counted. */
bool stage_delta_any(const struct stage_delta *d);
/* Whether d holds more than heartbeat claims and wake-ups: an idle
 * dispatcher writes nothing (D-139); those counts wait for the next write
 * that has something to say, or for shutdown. */
bool dispatch_delta_worth_writing(const struct dispatch_delta *d);

bool dispatch_delta_any(const struct dispatch_delta *d);

/* Appends {"stage": name, "runs": ...} for the non-zero counters of d to
 * the JSON array arr. Returns 0 or -1. */
int stage_delta_to_json(const char *name, const struct stage_delta *d, json_t *arr);

/* The dispatch counters as a JSON object (new reference), NULL on failure. */
json_t *dispatch_delta_to_json(const struct dispatch_delta *d);

/* Adds b into a. */
void stage_delta_add(struct stage_delta *a, const struct stage_delta *b);
void dispatch_delta_add(struct dispatch_delta *a, const struct dispatch_delta *b);

#endif
