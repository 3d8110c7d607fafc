#!/usr/bin/env bash
# Maintenance off the claim path (issue 12). `pepsi-runner maintain` runs
# reconciliation passes and anomaly checks with no `serve` at all (W-25);
# two maintainers at once share the work through the passes' try-locks.
# An idle runner is idle (D-139): over 60 s with nothing to do, the
# statements of the runner and its maintenance write no WAL and no row.
. "$(dirname "$0")/lib.sh"
plan 12

sql "create extension if not exists pg_stat_statements" >/dev/null
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" RECONCILE_INTERVAL=1s ANOMALY_INTERVAL=1s <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
WORKER_IDLE_TIMEOUT = 1h
EOF
count() { sql "select count(*) from $1"; }
runs_over() { [ "$(count pepsi.reconcile_runs)" -gt "$1" ]; }

# W-25: no serve, only maintainers.
m1_log=$E2E_DIR/maintain.1.log
m2_log=$E2E_DIR/maintain.2.log
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$conf" -v maintain >"$m1_log" 2>&1 </dev/null &
m1=$!
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$conf" -v maintain >"$m2_log" 2>&1 </dev/null &
m2=$!
sql "select pepsi.workqueue_inject('parked')" >/dev/null
ok "W-25: with no serve, anomaly checks run" wait_for "select count(*) > 0 from pepsi.anomaly_state" t 30
ok "W-25: and reconciliation passes run" wait_for "select count(*) > 0 from pepsi.reconcile_runs where trigger = 'schedule'" t 30
sleep 3
runs=$(count pepsi.reconcile_runs)
sql "select pepsi.workqueue_inject('parked')" >/dev/null
ok "a change brings another scheduled pass" wait_cmd 30 runs_over "$runs"
ok "W-26, W-27: two maintainers, each pass under the try-lock: they never overlap" \
    test "$(sql "select count(*) from pepsi.reconcile_runs a join pepsi.reconcile_runs b
                   on a.run_id < b.run_id and b.started_at < a.finished_at and a.started_at < b.finished_at")" = 0
sleep 3
runs=$(count pepsi.reconcile_runs)
sleep 4
is "$(count pepsi.reconcile_runs)" "$runs" "D-139: passes over unchanged data are skipped, no run written"
kill -TERM "$m1" "$m2"
wait "$m1"
is "$?" 0 "maintain stops cleanly on SIGTERM"
wait "$m2" 2>/dev/null
like "$(cat "$m1_log")" 'maintain: connected: reconciliation every 1 s' "it said what it does"

# Idle means idle: traffic first, then 60 s of nothing.
sql "delete from pepsi.workqueue where stage = 'parked'" >/dev/null # an idle queue has nothing waiting
ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a') from generate_series(1, 50)" >/dev/null
ok "the traffic finishes" wait_for "select count(*) from pepsi.workqueue where stage = 'a'" 0 30
# Let the idle flush, the last maintenance writes and the statistics of
# every session settle (the cumulative statistics behind the data stamp
# lag up to 10 s), then measure the runner's own statements.
sleep 15
sql "select pg_stat_statements_reset()" >/dev/null
writes() { sql "select coalesce(string_agg(schemaname || '.' || relname || '=' || (n_tup_ins + n_tup_upd + n_tup_del), ' ' order by relid), '')
                from pg_stat_all_tables where schemaname = 'pepsi' and n_tup_ins + n_tup_upd + n_tup_del > 0"; }
before=$(writes)
t0=$(sql "select now()")
sleep 60
after=$(writes)
note "anomaly states written meanwhile: $(sql "select string_agg(check_name || ' ' || state || ' ' || coalesce(value::text, '') || ' ' || coalesce(subject, ''), '; ')
                                                from pepsi.anomaly_state where evaluated_at > '$t0'")"
is "$after" "$before" "D-139: over 60 s idle, the runner and its maintenance wrote no row (inserted, updated or deleted) in any table of pepsi"
note "idle statements: $(sql "select string_agg(calls || ' x ' || wal_bytes || ' B WAL ' || left(regexp_replace(query, '\s+', ' ', 'g'), 60), '; ' order by calls desc)
                                from pg_stat_statements s join pg_database d on d.oid = s.dbid
                               where d.datname = current_database() and s.query !~ 'pg_stat_statements'")"
ok "D-29: the heartbeat still claims (reads)" \
    test "$(sql "select coalesce(sum(calls), 0) from pg_stat_statements s join pg_database d on d.oid = s.dbid
                  where d.datname = current_database() and s.query ~ 'workqueue_claim'")" -ge 20
is "$(count pepsi.dispatch_stats)" 1 "the dispatcher did write its statistics while there was traffic"
stop_runner
done_testing
