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
 * least one partition. docs/tubes.md.
 *
 * The partitions the slot owns (issue 14) are handed back as ONE array
 * literal for a $n::int[] parameter, built by lib/pgarray: every claim and
 * every operation on running rows passes it, so that a runner sees only
 * its slot's rows. NULL means all (no topology, or the slot owns every
 * partition): the SQL functions then take every row. */
#ifndef PEPSI_LIB_TOPOLOGY_H
#define PEPSI_LIB_TOPOLOGY_H

#include "lib/conf.h"

#include <libpq-fe.h>

/* The statement that reads the topology for owner slot $1. */
#define TOPOLOGY_CHECK_SQL \
    "select partition_count, hash_name, version, fingerprint, slot_partitions, partitions" \
    " from pepsi.topology_check($1::int)"

/* Judges the answer res (on c) to TOPOLOGY_CHECK_SQL: 0, 78 or 1 as
 * topology_confirm, for the asynchronous re-check after a reconnect. On 0
 * and with partitions not NULL, *partitions is the slot's partitions as an
 * int[] literal (malloc'd; the caller frees it) or NULL for all. */
int topology_judge(PGconn *c, const PGresult *res, const struct conf *conf, const char *component,
                   char **partitions);

/* Reads pepsi.topology_check(OWNER_SLOT) on c (blocking) and judges it.
 * Returns 0 when the runner may serve; 78 (EX_CONFIG) when it must not,
 * with a message under component saying why and what to do; 1 when the
 * check itself failed (logged). */
int topology_confirm(PGconn *c, const struct conf *conf, const char *component, char **partitions);

/* Reads the text of an int[] of partition numbers ("{3,17}", as
 * pepsi.topology_check returns it) and writes it again through lib/pgarray
 * as *literal (malloc'd). Returns the number of partitions, or -1 when the
 * text is not a list of numbers 0 .. 65535 (nothing allocated). */
long topology_partitions_literal(const char *text, char **literal);

#endif
