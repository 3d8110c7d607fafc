/* dispatch/signals.h — control notifications are wake-ups, never authority
 * (issue 11). Any database login may NOTIFY config_changed,
 * telemetry_changed or reconcile; only the schema owner's functions move
 * the channel's version in pepsi.control_signal. On such a notification
 * the dispatcher reads the versions (one cheap query) and acts only on the
 * channels whose version moved since it last acted; a spoofed
 * notification is logged at debug and changes nothing.
 * Owns: the versions seen. Uses: db (the coordinator's connection), log. */
#ifndef PEPSI_DISPATCH_SIGNALS_H
#define PEPSI_DISPATCH_SIGNALS_H

#include "lib/db.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

enum control_channel {
    CONTROL_CONFIG,          /* config_changed: rebuild the stage table (D-117) */
    CONTROL_TELEMETRY,       /* telemetry_changed: retire every worker (D-116) */
    CONTROL_RECONCILE,       /* reconcile: a reconciliation pass now (W-24) */
    CONTROL_COUNT,
};

struct control_signals {
    struct db *db;
    const char *component;           /* for log lines */
    int64_t seen[CONTROL_COUNT];     /* versions acted on; -1 before the first read */
    bool inflight;                   /* a version read is under way */
    bool again;                      /* another notification came meanwhile */
    /* Called once per channel whose version moved. */
    void (*act)(void *arg, enum control_channel ch);
    void *arg;
};

/* The channel called name, or -1 when it is none of the control channels. */
int control_channel_of(const char *name);

/* The channel's name, for LISTEN and log lines. */
const char *control_channel_name(enum control_channel ch);

/* Prepares cs; nothing is read yet. */
void control_signals_init(struct control_signals *cs, struct db *db, const char *component,
                          void (*act)(void *arg, enum control_channel ch), void *arg);

/* At start-up, before the stage table is first loaded: records the
 * current versions with a blocking query on c. 0, or -1 (logged). */
int control_signals_read_now(struct control_signals *cs, PGconn *c, const char *component);

/* A control notification arrived on name (or a reconnect may have missed
 * one): reads the versions on the coordinator's connection and acts on
 * each channel that moved. Notifications during a read fold into one more. */
void control_signals_check(struct control_signals *cs, const char *name);

#endif
