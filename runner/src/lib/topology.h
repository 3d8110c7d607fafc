/* lib/topology.h — a runner confirms the stored topology before it serves
 * (issue 14, T-08, T-10, T-41).
 * Owns: nothing kept. Uses: lib/ (conf, log, pgerr, tube), libpq.
 *
 * The database's pepsi.topology (partition count, hash, version,
 * fingerprint) and pepsi.partition_map are compared with the runner's
 * configuration: OWNER_SLOT, PARTITION_COUNT and TOPOLOGY_FINGERPRINT
 * ([pepsi-dispatch]). Without a topology only owner slot 0 may serve (it
 * owns every tube until a map exists), and only when neither of the other
 * two keys is set. With one, the hash must be this build's, the configured
 * count and fingerprint (when set) must match, and the slot must own at
 * least one partition. On a shard (issue 18: the database is one of several,
 * a router sends each tube to its shard) TOPOLOGY_FINGERPRINT is required:
 * the stored fingerprint covers the shard map, and a shard deployed with
 * another map than the router's must not serve. docs/tubes.md.
 *
 * The runner then passes its OWNER_SLOT to every claim and every
 * operation on running rows (issue 14): the rows carry their owner slot
 * (workqueue.owner_slot), so the slot's partitions are not needed. */
#ifndef PEPSI_LIB_TOPOLOGY_H
#define PEPSI_LIB_TOPOLOGY_H

#include "lib/conf.h"

#include <libpq-fe.h>

/* The statement that reads the topology for owner slot $1. */
#define TOPOLOGY_CHECK_SQL \
    "select partition_count, hash_name, version, fingerprint, slot_partitions, shard" \
    " from pepsi.topology_check($1::int)"

/* Judges the answer res (on c) to TOPOLOGY_CHECK_SQL: 0, 78 or 1 as
 * topology_confirm, for the asynchronous re-check after a reconnect. */
int topology_judge(PGconn *c, const PGresult *res, const struct conf *conf, const char *component);

/* Reads pepsi.topology_check(OWNER_SLOT) on c (blocking) and judges it.
 * Returns 0 when the runner may serve; 78 (EX_CONFIG) when it must not,
 * with a message under component saying why and what to do; 1 when the
 * check itself failed (logged). */
int topology_confirm(PGconn *c, const struct conf *conf, const char *component);

#endif
