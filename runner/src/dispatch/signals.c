/* dispatch/signals.c — see signals.h. */
#include "dispatch/signals.h"

#include "lib/log.h"
#include "lib/pgerr.h"

#include <stdlib.h>
#include <string.h>

#define VERSIONS_SQL "select channel, version from pepsi.control_signal_versions()"

static const char *const channel_names[CONTROL_COUNT] = {"config_changed", "telemetry_changed", "reconcile"};

int control_channel_of(const char *name)
{
    for (int i = 0; i < CONTROL_COUNT; i++)
        if (name && strcmp(name, channel_names[i]) == 0)
            return i;
    return -1;
}

const char *control_channel_name(enum control_channel ch)
{
    return ch < CONTROL_COUNT ? channel_names[ch] : "?";
}

void control_signals_init(struct control_signals *cs, struct db *db, const char *component,
                          void (*act)(void *arg, enum control_channel ch), void *arg)
{
    memset(cs, 0, sizeof *cs);
    cs->db = db;
    cs->component = component;
    cs->act = act;
    cs->arg = arg;
    for (int i = 0; i < CONTROL_COUNT; i++)
        cs->seen[i] = -1;
}

/* The versions in res, by channel; -1 where a row is missing. 0, or -1
 * when res is not the answer expected. */
static int versions_of(const PGresult *res, int64_t out[CONTROL_COUNT])
{
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 2)
        return -1;
    for (int i = 0; i < CONTROL_COUNT; i++)
        out[i] = -1;
    for (int row = 0; row < PQntuples(res); row++) {
        int ch = control_channel_of(PQgetvalue(res, row, 0));
        if (ch >= 0)
            out[ch] = strtoll(PQgetvalue(res, row, 1), NULL, 10);
    }
    return 0;
}

int control_signals_read_now(struct control_signals *cs, PGconn *c, const char *component)
{
    PGresult *res = PQexec(c, VERSIONS_SQL);
    int rc = versions_of(res, cs->seen);
    if (rc != 0)
        log_error(component, "cannot read the control signal versions: %s", pgerr_conn_message(c));
    PQclear(res);
    return rc;
}

static void read_versions(struct control_signals *cs);

static void versions_done(struct db *db, PGresult *res, void *arg)
{
    struct control_signals *cs = arg;
    int64_t now[CONTROL_COUNT];
    cs->inflight = false;
    if (res == NULL)
        return; /* the connection broke: the reconnect checks again */
    if (versions_of(res, now) != 0) {
        log_warning(cs->component, "cannot read the control signal versions: %s", pgerr_message(db->conn, res));
        PQclear(res);
        return;
    }
    PQclear(res);
    bool any = false;
    for (int i = 0; i < CONTROL_COUNT; i++) {
        if (now[i] < 0 || now[i] == cs->seen[i])
            continue;
        if (cs->seen[i] < 0) {
            cs->seen[i] = now[i]; /* the first reading is where we start from */
            continue;
        }
        log_debug(cs->component, "%s version %lld (was %lld)", channel_names[i], (long long)now[i],
                  (long long)cs->seen[i]);
        cs->seen[i] = now[i];
        any = true;
        cs->act(cs->arg, (enum control_channel)i);
    }
    if (!any)
        log_debug(cs->component, "a control notification without a new version: ignored");
    if (cs->again) {
        cs->again = false;
        read_versions(cs);
    }
}

static void read_versions(struct control_signals *cs)
{
    cs->inflight = true;
    db_query(cs->db, VERSIONS_SQL, 0, NULL, 0, versions_done, cs);
}

void control_signals_check(struct control_signals *cs, const char *name)
{
    log_debug(cs->component, "control notification \"%s\": reading versions", name ? name : "(reconnect)");
    if (cs->inflight) {
        cs->again = true;
        return;
    }
    read_versions(cs);
}
