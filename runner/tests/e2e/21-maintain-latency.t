#!/usr/bin/env bash
# Maintenance never shares the claiming connection (issue 12). With
# 1,000,000 rows in the queue, the anomaly run refreshes materialized views
# that scan them all, for seconds each; on the dispatcher's connection every
# claim waited behind it (2.3 s stalls every minute).
#
# The stall is made as long as the test likes instead of timed: a session
# of the test holds an ACCESS EXCLUSIVE lock on anomaly_queue_mv from
# before the runner starts, so the first anomaly run's refresh of it waits (it is seen waiting in pg_stat_activity).
# While it waits, 200 messages are injected and must all be claimed and
# finished by the runner. A runner whose maintenance ran on the claiming
# connection claims nothing until the lock goes, and fails here. Latency
# figures belong to `make bench`, not to a timed assertion.
. "$(dirname "$0")/lib.sh"
plan 9

sql "insert into pepsi.workqueue (stage) select 'parked' from generate_series(1, 1000000); analyze pepsi.workqueue" >/dev/null
is "$(sql "select count(*) from pepsi.workqueue")" 1000000 "a queue of 1,000,000 rows (at a stage nobody serves)"

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1s RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
WORKER_IDLE_TIMEOUT = 1h
EOF
# The lock holder: its own session, named so it can be found and ended. A
# materialized view cannot be LOCKed; a plain REFRESH in an open transaction
# holds its ACCESS EXCLUSIVE lock just the same.
PGAPPNAME=e2e_lock_holder psql -XAtq -d "$E2E_DB" \
    -c "begin; refresh materialized view pepsi.anomaly_queue_mv; select pg_sleep(600); commit" >/dev/null 2>&1 &
ok "the test holds the lock" wait_for "select count(*) from pg_locks l join pg_stat_activity a using (pid)
                                  where a.application_name = 'e2e_lock_holder' and l.relation = 'pepsi.anomaly_queue_mv'::regclass
                                    and l.mode = 'AccessExclusiveLock' and l.granted" 1 60
ok "runner starts with maintenance" start_runner "$conf"
ok "the maintenance has a connection of its own" wait_cmd 60 runner_log_has 'maintain: connected'

refresh_waits="select count(*) > 0 from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock'
                  and query ilike '%anomaly_refresh%' and application_name <> 'e2e_lock_holder'"
ok "the maintenance's refresh waits behind the lock" wait_for "$refresh_waits" t 120

sql "select pepsi.workqueue_inject('a') from generate_series(1, 200)" >/dev/null
ok "while the refresh waits, all 200 messages are claimed and finished" \
    wait_for "select count(*) from pepsi.workqueue where stage = 'a'" 0 60
is "$(sql "$refresh_waits")" t "and the refresh was still waiting all that time"
is "$(sql "select count(*) from pg_stat_activity a where a.datname = current_database() and a.wait_event_type = 'Lock'
            and a.query ilike '%workqueue_claim%'")" 0 "no claim waits on a lock"

sql "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'e2e_lock_holder'" >/dev/null
ok "once the lock is gone, the refresh finishes" wait_for "$refresh_waits" f 120
stop_runner >/dev/null
done_testing
