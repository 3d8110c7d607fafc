/* lib/topology.c — a runner confirms the stored topology (issue 14); see
 * topology.h. */
#include "lib/topology.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/tube.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* No topology in the database: slot 0 alone, configured for none. */
static int judge_none(const struct conf *conf, const char *component)
{
    if (conf->owner_slot != 0) {
        log_error(component, "OWNER_SLOT = %d, but this database has no partition map: until one is set "
                  "(pepsi.topology_set, docs/tubes.md) slot 0 owns every tube and no other slot may serve",
                  conf->owner_slot);
        return EXIT_CONFIG;
    }
    if (conf->partition_count != 0 || conf->topology_fingerprint != NULL) {
        log_error(component, "PARTITION_COUNT or TOPOLOGY_FINGERPRINT is set, but this database has no topology: "
                  "set it first (pepsi.topology_set) or remove the keys");
        return EXIT_CONFIG;
    }
    return 0;
}

static int judge_row(const struct conf *conf, const PGresult *res, const char *component)
{
    int count = atoi(PQgetvalue(res, 0, 0));
    const char *hash = PQgetvalue(res, 0, 1);
    const char *version = PQgetvalue(res, 0, 2);
    const char *fingerprint = PQgetvalue(res, 0, 3);
    int owned = atoi(PQgetvalue(res, 0, 4));
    bool shard = !PQgetisnull(res, 0, 5);
    if (strcmp(hash, TUBE_HASH_NAME) != 0) {
        log_error(component, "the database's topology hashes tubes with \"%s\"; this build knows only \"%s\"",
                  hash, TUBE_HASH_NAME);
        return EXIT_CONFIG;
    }
    if (conf->partition_count != 0 && conf->partition_count != count) {
        log_error(component, "PARTITION_COUNT = %d, but the database's topology (version %s) has %d partitions: "
                  "refusing to serve a topology this runner was not configured for (T-41)",
                  conf->partition_count, version, count);
        return EXIT_CONFIG;
    }
    if (shard && conf->topology_fingerprint == NULL) {
        log_error(component, "this database is shard %s of a sharded topology (version %s, fingerprint %s), "
                  "but TOPOLOGY_FINGERPRINT is not set: on a shard it must be the router's fingerprint "
                  "(select pepsi_router.topology_fingerprint() on the router; issue 18)",
                  PQgetvalue(res, 0, 5), version, fingerprint);
        return EXIT_CONFIG;
    }
    if (conf->topology_fingerprint != NULL && strcasecmp(conf->topology_fingerprint, fingerprint) != 0) {
        log_error(component, "TOPOLOGY_FINGERPRINT = %s, but the database's topology (version %s) has "
                  "fingerprint %s: refusing to serve a map this runner was not configured for (T-08)",
                  conf->topology_fingerprint, version, fingerprint);
        return EXIT_CONFIG;
    }
    if (owned == 0) {
        log_error(component, "owner slot %d owns no partition %sin the database's partition map (version %s): "
                  "nothing to serve; check OWNER_SLOT", conf->owner_slot, shard ? "of this shard " : "", version);
        return EXIT_CONFIG;
    }
    if (shard)
        log_info(component, "topology version %s: %d partitions (%s), fingerprint %s; shard %s, owner slot %d "
                 "owns %d of its partitions", version, count, hash, fingerprint, PQgetvalue(res, 0, 5),
                 conf->owner_slot, owned);
    else
        log_info(component, "topology version %s: %d partitions (%s), fingerprint %s; owner slot %d owns %d",
                 version, count, hash, fingerprint, conf->owner_slot, owned);
    return 0;
}

int topology_judge(PGconn *c, const PGresult *res, const struct conf *conf, const char *component)
{
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        bool damaged = strcmp(pgerr_sqlstate(res), "PX041") == 0;
        log_error(component, "%s: %s", damaged ? "the database's topology is damaged; refusing to serve (T-10)"
                                                : "cannot read the topology",
                  pgerr_message(c, res));
        return damaged ? EXIT_CONFIG : 1;
    }
    if (PQntuples(res) == 0)
        return judge_none(conf, component);
    return judge_row(conf, res, component);
}

int topology_confirm(PGconn *c, const struct conf *conf, const char *component)
{
    char slot[16];
    snprintf(slot, sizeof slot, "%d", conf->owner_slot);
    const char *params[] = {slot};
    PGresult *res = PQexecParams(c, TOPOLOGY_CHECK_SQL, 1, NULL, params, NULL, NULL, 0);
    int code = topology_judge(c, res, conf, component);
    PQclear(res);
    return code;
}
