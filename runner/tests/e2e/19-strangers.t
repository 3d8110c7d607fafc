#!/usr/bin/env bash
# Strangers cannot steer the runner (issue 11). A login without any
# privilege on schema pepsi can still NOTIFY every channel and take any
# advisory lock. Notifications are wake-ups, never authority: 100 of each
# control channel from such a login retire no worker, reload nothing and
# run no reconciliation pass, and the runner keeps claiming; the same
# channels moved by the schema owner's functions still act. A stranger
# holding the dispatcher lock keeps a runner from starting, and the log
# says who holds it.
. "$(dirname "$0")/lib.sh"
plan 17

stranger=e2e_stranger_$$
psql -XAtq -d postgres -c "create role $stranger login" || exit 1
as_stranger() { psql -XAtq "dbname=$E2E_DB user=$stranger application_name=intruder" -v ON_ERROR_STOP=1 "$@" </dev/null; }

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" LOCK_WAIT=1s <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
WORKER_IDLE_TIMEOUT = 1h
EOF

ok "runner starts" start_runner "$conf"
m=$(sql "select pepsi.workqueue_inject('a')")
ok "a message finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m" 0 20
before=$(worker_pids | sort | tr '\n' ' ')
ok "one worker is alive" test -n "$before"
ok "the stranger has no access to schema pepsi" \
    test "$(as_stranger -c "select has_schema_privilege('pepsi', 'usage')")" = f

notes=$E2E_DIR/notify.sql
for _ in $(seq 1 100); do
    echo "notify config_changed; notify telemetry_changed; notify reconcile;"
done >"$notes"
# One statement a transaction: 300 notifications that do not fold.
ok "the stranger sends 100 NOTIFY of each control channel" as_stranger -f "$notes"
read_at_least() { [ "$(grep -c 'control notification "' "$RUNNER_LOG")" -ge "$1" ]; }
ok "issue 11: the runner reads the versions for them" wait_cmd 20 read_at_least 300
ok "and finds nothing new" runner_log_has 'a control notification without a new version: ignored'
sleep 1
is "$(worker_pids | sort | tr '\n' ' ')" "$before" "issue 11: no worker was retired"
is "$(grep -c 'configuration reloaded\|retiring' "$RUNNER_LOG")" 0 "issue 11: no reload, no retirement"
is "$(sql "select count(*) from pepsi.reconcile_runs where trigger = 'notify'")" 0 \
   "issue 11: no reconciliation pass ran for them"
m=$(sql "select pepsi.workqueue_inject('a')")
ok "issue 11: the runner keeps claiming" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m" 0 20

sql "select pepsi.config_set('a', 'PARALLELISM', '2')" >/dev/null
ok "D-117: the owner's config_set still reloads" wait_cmd 20 runner_log_has 'configuration reloaded'
sql "select pepsi.telemetry_changed()" >/dev/null
ok "D-116: the owner's telemetry_changed still retires the workers" wait_cmd 20 runner_log_has 'telemetry setting changed; retiring'
sql "select pepsi.control_signal_send('reconcile')" >/dev/null
ok "W-24: and a reconcile signal from the owner runs a pass" \
    wait_for "select count(*) from pepsi.reconcile_runs where trigger = 'notify'" 1 20
stop_runner >/dev/null

# The stranger takes the dispatcher lock and keeps it.
as_stranger -c "select pg_advisory_lock(1885696115, 0)" -c "select pg_sleep(60)" >/dev/null 2>&1 &
holder=$!
ok "the stranger holds the lock of owner slot 0" \
    wait_for "select count(*) from pg_locks where locktype = 'advisory' and classid = 1885696115 and objid = 0 and granted" 1 10
run_runner "$E2E_DIR/second.log" -c "$conf" serve
is "$?" 78 "D-15, issue 14: the runner cannot start (78: its owner slot is held)"
like "$(cat "$E2E_DIR/second.log")" \
     "holds owner slot 0 after [0-9.]+ (ms|s|min): pid [0-9]+ user \"$stranger\" application \"intruder\" client local socket since " \
     "issue 11: its log names the holder: pid, user, application, client address"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
psql -XAtq -d postgres -c "drop role if exists $stranger" >/dev/null 2>&1
done_testing
