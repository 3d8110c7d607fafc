#!/usr/bin/env bash
# Issue 15: signals an operator (or `systemctl reload`) sends.
#  - serve: SIGHUP re-reads the stage graph exactly as config_changed does:
#    an edit of the file's [stage-*] sections does nothing until the HUP,
#    then one log line, a new table, and messages take the new route; a
#    file that no longer parses stops the runner with 78, as D-118 says of
#    a config_changed reload.
#  - SIGUSR1 and SIGUSR2 are logged and ignored: the runner goes on serving.
#  - maintain: SIGHUP re-reads the stage limits; SIGUSR1 does not kill it.
#  - ingress: SIGHUP reloads the webhook providers; SIGUSR1 does not kill it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 21

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
EOF

reloads() { grep -c 'configuration reloaded' "$RUNNER_LOG"; }
reloaded_since() { [ "$(reloads)" -gt "$1" ]; }

ok "runner starts" start_runner "$conf"

# The file gains stage b: nothing happens without a signal. (A worker
# reads the file at its own start, so the change a HUP must bring is one
# only the runner acts on: which stages it serves.)
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
[stage-b]
PROGRAM = $E2E_STAGES/misbehave
EOF
sql "select pepsi.workqueue_inject('b')" >/dev/null
sleep 3 # three heartbeat claims (POLL_INTERVAL 1s)
is "$(sql "select status from pepsi.workqueue where stage = 'b'")" pending \
   "before SIGHUP: the edited file is not read (a message at b waits, unserved)"

n=$(reloads)
kill -HUP "$RUNNER_PID"
ok "SIGHUP: the runner rebuilds its stage table" wait_cmd 10 reloaded_since "$n"
is "$(grep -c 'received SIGHUP; re-reading the stage graph' "$RUNNER_LOG")" 1 "SIGHUP: one log line says so"
like "$(runner_log)" 'configuration reloaded: 2 stage\(s\)' "SIGHUP: the new table has the file's two stages"
ok "after SIGHUP: the message at b runs" wait_for "select count(*) from pepsi.workqueue" 0 20
is "$(sql "select string_agg(stage, ',' order by at) from e2e_done")" b \
   "after SIGHUP: stage b, new in the file, served it"

# SIGUSR1 and SIGUSR2: a line each, and nothing else.
kill -USR1 "$RUNNER_PID"
kill -USR2 "$RUNNER_PID"
ok "SIGUSR1 and SIGUSR2 are logged" wait_cmd 10 runner_log_has 'received SIGUSR2; ignored'
like "$(runner_log)" 'received SIGUSR1; ignored \([0-9]+ worker\(s\), 0 message\(s\) in flight\)' \
     "SIGUSR1's line says what the runner holds"
sql "truncate e2e_done; select pepsi.workqueue_inject('b')" >/dev/null
ok "after SIGUSR1 and SIGUSR2 the runner still serves" wait_for "select count(*) from e2e_done where stage = 'b'" 1 20

# A file that does not parse: the same path as a config_changed reload.
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
NEXT = nosuch
EOF
kill -HUP "$RUNNER_PID"
for _ in $(seq 1 100); do _alive "$RUNNER_PID" || break; sleep 0.1; done
stop_runner
is "$?" 78 "D-118 on SIGHUP: a graph that does not parse stops the runner with 78"

# ---- maintain ----

write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
EOF
RUNNER_LOG=$E2E_DIR/runner.maintain.log
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$conf" maintain >"$RUNNER_LOG" 2>&1 </dev/null &
RUNNER_PID=$!
ok "maintain connects" wait_cmd 20 runner_log_has 'maintain: connected'
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
[stage-b]
PROGRAM = $E2E_STAGES/misbehave
EOF
kill -HUP "$RUNNER_PID"
ok "maintain: SIGHUP re-reads the stage limits, file and overlay" \
   wait_cmd 10 runner_log_has 'stage limits re-read: 2 stage\(s\)'
like "$(runner_log)" 'received SIGHUP; re-reading the stage limits' "maintain: and says so"
kill -USR1 "$RUNNER_PID"
ok "maintain: SIGUSR1 is logged" wait_cmd 10 runner_log_has 'received SIGUSR1; ignored'
stop_runner
is "$?" 0 "maintain: still alive after SIGUSR1, SIGTERM stops it with 0"

# ---- ingress ----

iconf=$E2E_DIR/ingress.conf
ingress_conf "$iconf" </dev/null
ok "ingress starts" start_ingress "$iconf"
loads() { grep -c 'loaded [0-9]* webhook provider' "$INGRESS_LOG"; }
loaded_since() { [ "$(loads)" -gt "$1" ]; }
n=$(loads)
kill -HUP "$INGRESS_PID"
ok "ingress: SIGHUP reloads the webhook providers" wait_cmd 10 loaded_since "$n"
like "$(cat "$INGRESS_LOG")" 'received SIGHUP; reloading the webhook providers' "ingress: and says so"
kill -USR1 "$INGRESS_PID"
ok "ingress: SIGUSR1 is logged" wait_ingress_log 'received SIGUSR1; ignored' 10
stop_ingress
is "$?" 0 "ingress: still alive after SIGUSR1, SIGTERM stops it with 0"
done_testing
