#!/usr/bin/env bash
# Owner slots (issue 14, T-08, T-10, T-41): a runner with OWNER_SLOT other
# than 0 refuses to start (78) while the database has no partition map; a
# second runner for a slot another one holds exits 78; a runner configured
# for another PARTITION_COUNT or TOPOLOGY_FINGERPRINT, or for a slot that
# owns no partition, exits 78 — each before it touches a row (no start-up
# reset of the running rows, no worker started).
. "$(dirname "$0")/lib.sh"
plan 27

stage() {
    cat <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
QUEUE_LIMIT = 1
EOF
}
rows_q="select string_agg(workqueue_id || ':' || status || '@' || coalesce(claimed_at::text, '-'), ',' order by workqueue_id)
          from pepsi.workqueue"
# "Changes nothing": a digest of every workqueue row (all columns), the
# topology, the partition map and the dispatcher locks held (who, which).
state_q="select md5(concat_ws('|',
            (select string_agg(w::text, ',' order by w.workqueue_id) from pepsi.workqueue w),
            (select string_agg(t::text, ',') from pepsi.topology t),
            (select string_agg(m::text, ',' order by m.partition) from pepsi.partition_map m),
            (select string_agg(l.objid || ':' || l.pid || ':' || l.mode, ',' order by l.objid, l.pid)
               from pg_locks l, pepsi.lock_key('dispatcher', 0) k
              where l.locktype = 'advisory' and l.granted and l.classid = k.class_id::oid
                and l.objid::text::bigint < 65536)))"
starts() { if [ -f "$E2E_DIR/starts.a" ]; then grep -c . "$E2E_DIR/starts.a"; else echo 0; fi; }

# 1. No map: only slot 0 may serve ------------------------------------------------
stage | write_conf "$E2E_DIR/slot1.conf" OWNER_SLOT=1
sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"sleep\", \"sleep\": \"5\"}') from generate_series(1, 2)" >/dev/null
before=$(sql "$rows_q")
state=$(sql "$state_q")
run_runner "$E2E_DIR/nomap.log" -c "$E2E_DIR/slot1.conf" serve
is "$?" 78 "issue 14: OWNER_SLOT = 1 without a partition map exits 78"
like "$(cat "$E2E_DIR/nomap.log")" 'OWNER_SLOT = 1, but this database has no partition map' "issue 14: and says why"
is "$(sql "$rows_q")" "$before" "issue 14: nothing changed (both rows still pending)"
is "$(starts)" 0 "issue 14: no worker was started"
is "$(sql "$state_q")" "$state" "issue 14: rows, topology, map and dispatcher locks are as before"

stage | write_conf "$E2E_DIR/count-nomap.conf" PARTITION_COUNT=256
run_runner "$E2E_DIR/count-nomap.log" -c "$E2E_DIR/count-nomap.conf" serve
is "$?" 78 "T-41: slot 0 configured for PARTITION_COUNT = 256 on a database without topology exits 78"
like "$(cat "$E2E_DIR/count-nomap.log")" 'PARTITION_COUNT or TOPOLOGY_FINGERPRINT is set, but this database has no topology' \
     "T-41: and says why"

# 2. With a map: slot 1 serves; a second runner for slot 1 is refused ----------------
sql "delete from pepsi.workqueue" >/dev/null
fp=$(sql "select pepsi.topology_set(256, 2)")
like "$fp" '^[0-9a-f]{64}$' "T-12: on the empty queue the topology is set: 256 partitions, 2 slots"
stage | write_conf "$E2E_DIR/slot1.conf" OWNER_SLOT=1 PARTITION_COUNT=256 TOPOLOGY_FINGERPRINT="$fp" LOCK_WAIT=1s
ok "T-08: slot 1, configured for this topology, starts" start_runner "$E2E_DIR/slot1.conf"
ok "T-08: it logged the topology it confirmed" runner_log_has "topology version 1: 256 partitions \\(fnv1a64\\), fingerprint $fp; owner slot 1 owns 128"
sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"wait\"}') from generate_series(1, 2)" >/dev/null
ok "its workers are running both messages" wait_for "select count(*) from e2e_visit" 2 15
running=$(sql "$rows_q")
like "$running" '^[0-9]+:running@.*,[0-9]+:running@' "both rows are running"
n_starts=$(starts)
state=$(sql "$state_q")

run_runner "$E2E_DIR/second.log" -c "$E2E_DIR/slot1.conf" serve
is "$?" 78 "issue 14, D-15: a second runner for the held slot 1 exits 78"
like "$(cat "$E2E_DIR/second.log")" 'another dispatcher .*holds owner slot 1' "issue 14: and says another runner holds slot 1"
is "$(sql "$rows_q")" "$running" "D-17: the first runner's running rows were not reset"

# 3. Configured for another topology: 78 before the start-up reset -------------------
# Slot 0 is free: without the topology check its start-up reset would give
# slot 1's running rows back.
stage | write_conf "$E2E_DIR/count.conf" PARTITION_COUNT=1024
run_runner "$E2E_DIR/count.log" -c "$E2E_DIR/count.conf" serve
is "$?" 78 "T-41: PARTITION_COUNT = 1024 against a 256-partition topology exits 78"
like "$(cat "$E2E_DIR/count.log")" 'PARTITION_COUNT = 1024, but the database.s topology \(version 1\) has 256 partitions' \
     "T-41: and says why"
is "$(sql "$rows_q")" "$running" "T-41: nothing changed (slot 1's running rows were not reset)"

stage | write_conf "$E2E_DIR/fp.conf" TOPOLOGY_FINGERPRINT="$(printf '%064d' 0)"
run_runner "$E2E_DIR/fp.log" -c "$E2E_DIR/fp.conf" serve
is "$?" 78 "T-08: a TOPOLOGY_FINGERPRINT that is not the database's exits 78"
like "$(cat "$E2E_DIR/fp.log")" "has fingerprint $fp" "T-08: and names the database's fingerprint"

stage | write_conf "$E2E_DIR/slot5.conf" OWNER_SLOT=5
run_runner "$E2E_DIR/slot5.log" -c "$E2E_DIR/slot5.conf" serve
is "$?" 78 "issue 14: a slot that owns no partition of the map exits 78"
is "$(sql "$rows_q")" "$running" "issue 14: nothing changed by any of the refused runners"
is "$(starts)" "$n_starts" "issue 14: none of them started a worker"
is "$(sql "$state_q")" "$state" \
   "T-08, T-41: a third runner with another PARTITION_COUNT or fingerprint (and the refused others) changed nothing: rows, topology, map, dispatcher locks"

# 4. The map does not change under a running runner (T-41) ----------------------------
out=$(sql "select pepsi.partition_map_set(array(select case when g < 200 then 0 else 1 end from generate_series(0, 255) g))" 2>&1)
like "$out" 'owner slot 1 is held by a running runner' "T-41: partition_map_set refuses to move slot 1's partitions while its runner runs (PX042)"

touch "$E2E_DIR/go.a"
ok "slot 1's runner finishes both messages" wait_for "select count(*) from pepsi.workqueue" 0 15
stop_runner
is "$?" 0 "slot 1's runner stops cleanly"
done_testing
