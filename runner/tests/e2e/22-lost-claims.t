#!/usr/bin/env bash
# Claims are identified by a claim id, and any number of claims whose
# answers were lost are given back after reconnecting (issue 12). The
# dispatcher talks to PostgreSQL through a proxy that can lose the
# connection the way a network does (pgproxy.py): the server goes on and
# commits what it was doing, the answer never arrives.
#   1. A claim blocks on a row lock; the connection is cut; the lock goes:
#      the claim (A) commits on the server, its rows running, its answer
#      lost.
#   2. The runner reconnects; its give-back of A blocks on a lock of one of
#      A's rows, a new claim (B) queued behind it; the connection is lost
#      again and the give-back rolled back.
#   3. The runner reconnects: both go back in one call, every message ends.
# With one slot for "the lost claim", B overwrote A and A's rows stayed
# running until the next start.
. "$(dirname "$0")/lib.sh"
plan 13

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

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" MAINTENANCE=no LOCK_WAIT=30s <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
QUEUE_LIMIT = 8
EOF
# The dispatcher through the proxy; its workers straight to the socket.
sed -i "s|^CONNINFO = .*|CONNINFO = host=127.0.0.1 port=$port user=$PGUSER dbname=$E2E_DB\nWORKER_CONNINFO = $E2E_CONNINFO|" "$conf"

# A session that holds row locks until told: one statement per line.
hold() {
    mkfifo "$E2E_DIR/$1.in"
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/$1.in" >/dev/null 2>&1 &
    eval "$1_pid=$!"
}
dispatcher_waits() {
    [ "$(sql "select count(*) from pg_stat_activity where application_name = 'pepsi-runner'
                and datname = current_database() and wait_event_type = 'Lock'")" = 1 ]
}

ids=$(sql "select string_agg(pepsi.workqueue_inject('a')::text, ',') from generate_series(1, 5)")
first=${ids%%,*}
hold s1
exec 5>"$E2E_DIR/s1.in"
echo "begin; select 1 from pepsi.workqueue where workqueue_id = $first for update;" >&5
in_transaction() { wait_for "select count(*) from pg_stat_activity where datname = current_database()
                                and state = 'idle in transaction'" 1 10; }
ok "a session holds the first message's row" in_transaction

ok "runner starts" start_runner "$conf"
ok "its first claim waits for the locked row" wait_cmd 20 dispatcher_waits
proxy cut 1   # the claim's answer will be lost
echo "commit;" >&5
exec 5>&-
wait "$s1_pid"
ok "claim A committed on the server: its rows are running" \
    wait_for "select count(*) from pepsi.workqueue where status = 'running' and claim_id is not null" 5 10
claim_a=$(sql "select min(claim_id) from pepsi.workqueue where status = 'running'")

hold s2
exec 6>"$E2E_DIR/s2.in"
echo "begin; select 1 from pepsi.workqueue where workqueue_id = $first for update;" >&6
ok "a session holds it again" in_transaction
proxy heal 2  # the runner reconnects
ok "after reconnecting, the give-back of A waits for the locked row" wait_cmd 30 dispatcher_waits
ok "the runner had recorded claim A as lost" runner_log_has "the answer to claim $claim_a was lost"
proxy cut 3   # again, and end the session so that its give-back rolls back
sql "select pg_terminate_backend(pid) from pg_stat_activity
      where application_name = 'pepsi-runner' and datname = current_database()" >/dev/null
echo "commit;" >&6
exec 6>&-
wait "$s2_pid"
is "$(sql "select count(*) from pepsi.workqueue where status = 'running' and claim_id = $claim_a")" 5 \
   "A's rows are still running (the give-back was lost too)"
proxy heal 4
ok "issue 12: after the second reconnect every message finishes" \
    wait_for "select count(*) from pepsi.workqueue" 0 30
ok "issue 12: both lost claims went back in one call" runner_log_has 'gave back 5 message\(s\) of 2 claim\(s\)'
is "$(grep -c 'reconnected to the database' "$RUNNER_LOG")" 2 "it reconnected twice"
stop_runner
is "$?" 0 "the runner stops cleanly"
kill "$proxy_pid" 2>/dev/null
wait "$proxy_pid" 2>/dev/null
ok "the proxy is gone" true
done_testing
