#!/usr/bin/env bash
# Logs that fit journald (issue 15): a worker's stderr line with an
# sd-daemon "<N>" prefix is logged at that level (not always INFO), the
# prefix gone; at -L debug (-v) each message event is one line (claimed,
# handed to a worker, answered with its status); a PostgreSQL restart
# leaves no line without our "LEVEL:  component:" prefix (libpq's bare
# "FATAL:  terminating connection ..." on stderr), and the server's FATAL
# is one prefixed line.
. "$(dirname "$0")/lib.sh"
plan 11

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-s]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
EOF

ok "runner starts (-v: debug)" start_runner "$conf"
id=$(sql "select pepsi.workqueue_inject('s', p_state => '{\"do\": \"say\"}')")
ok "the message finishes" wait_for "select count(*) from e2e_done where id = $id" 1 20
ok "the worker's lines reached the log" wait_cmd 10 runner_log_has "say debug on message $id"
ok "issue 15: a worker's \"<3>\" line is logged at error level" \
   runner_log_has "^ERROR:  s: \[[0-9]+\] e2e: say error on message $id\$"
ok "issue 15: \"<4>\" at warning level" runner_log_has "^WARNING:  s: \[[0-9]+\] e2e: say warning on message $id\$"
ok "issue 15: \"<7>\" at debug level" runner_log_has "^DEBUG:  s: \[[0-9]+\] e2e: say debug on message $id\$"
is "$(grep -c '<[0-7]>' "$RUNNER_LOG")" 0 "issue 15: no \"<N>\" prefix is left in the lines"
ok "issue 15: -L debug logs the claim of the message" runner_log_has "^DEBUG:  s: message=$id claimed"
ok "issue 15: -L debug logs the message handed to a worker and its answer" \
   runner_log_has "^DEBUG:  s: message=$id answered by worker pid=[0-9]+ status=0 after [0-9.]+ (ms|s)\$"

ok "PostgreSQL restarts (pg_ctl restart -m fast)" "$E2E_ROOT/scripts/pg" restart "$PGHOST"
wait_cmd 30 runner_log_has 'reconnected to the database'
is "$(grep -Ev '^(ERROR|WARNING|NOTICE|INFO|DEBUG):  [^ ]+: ' "$RUNNER_LOG")" "" \
   "issue 15: after a PostgreSQL restart every line of the log has the runner's prefix (no bare FATAL line)"
diag "the server's message, as logged: $(grep -m1 'terminating connection' "$RUNNER_LOG")"
stop_runner
done_testing
