#!/usr/bin/env bash
# Owner slots across a reconnect (issue 14, T-08, T-41): while a runner's
# connection is down its slot is free, and an operator may change the map
# (partition_map_set needs exactly that). When the runner gets its lock
# back it confirms the topology again and, configured for the old
# fingerprint, stops with 78 instead of serving a map it was not set up
# for. The dispatcher talks through pgproxy.py, which can cut the network.
. "$(dirname "$0")/lib.sh"
plan 10

portfile=$E2E_DIR/proxy.port
python3 "$E2E_ROOT/runner/tests/e2e/pgproxy.py" "$portfile" "$PGHOST/.s.PGSQL.$PGPORT" &
proxy_pid=$!
wait_cmd 60 test -s "$portfile" || exit 1
port=$(cat "$portfile")
# proxy cut|heal N: signals the proxy and waits until it has done it.
proxy() {
    kill -"$([ "$1" = cut ] && echo USR1 || echo USR2)" "$proxy_pid"
    wait_cmd 30 grep -sqx "$1 $2" "$portfile.state"
}
holder_q="select l.pid from pg_locks l, pepsi.lock_key('dispatcher', 1) k
           where l.locktype = 'advisory' and l.granted and l.classid = k.class_id::oid
             and l.objid = k.object_id::oid and l.objsubid = 2"

fp=$(sql "select pepsi.topology_set(8, 2)")
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" MAINTENANCE=no OWNER_SLOT=1 TOPOLOGY_FINGERPRINT="$fp" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
EOF
# The dispatcher through the proxy; its workers straight to the socket.
sed -i "s|^CONNINFO = .*|CONNINFO = host=127.0.0.1 port=$port user=$PGUSER dbname=$E2E_DB\nWORKER_CONNINFO = $E2E_CONNINFO|" "$conf"

ok "slot 1's runner starts with the topology it was configured for" start_runner "$conf"
like "$(sql "$holder_q")" '^[0-9]+$' "it holds slot 1's dispatcher lock"

proxy cut 1
# The network is down; the server session that held the lock ends.
sql "select pg_terminate_backend(pid) from ($holder_q) h" >/dev/null
ok "slot 1 is free while the runner cannot reach the database" wait_for "select count(*) from ($holder_q) h" 0 15
new_fp=$(sql "select pepsi.partition_map_set('{0,0,0,0,1,1,1,0}')" 2>&1)
like "$new_fp" '^[0-9a-f]{64}$' "T-41: the operator moves a partition of slot 1 while it is free"
ok "the runner is still running (it keeps trying to reconnect)" _alive "$RUNNER_PID"

proxy heal 2
runner_gone() { ! _alive "$RUNNER_PID"; }
ok "T-08: once reconnected it stops by itself" wait_cmd 90 runner_gone
wait "$RUNNER_PID" 2>/dev/null
rc=$?
RUNNER_PID=
is "$rc" 78 "T-08, T-41: with 78, refusing the map it was not configured for"
ok "T-08: and says the topology changed while it was away" \
   runner_log_has 'the topology changed while the connection was down; stopping'
ok "T-08: naming the database's new fingerprint" runner_log_has "has fingerprint $new_fp"
ok "it stopped at once, not at the shutdown time limit" test -z "$(grep 'shutdown took too long' "$RUNNER_LOG")"

kill "$proxy_pid" 2>/dev/null
wait "$proxy_pid" 2>/dev/null
done_testing
