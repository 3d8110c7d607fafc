#!/usr/bin/env bash
# A worker that exits 78 before "ready" has refused to run (configuration
# or schema): the runner logs the cause, the messages wait pending without
# blame, and the stage is retried after each cool-down until it is fixed.
# The built-in pepsi-stage-pass refuses the same way when its section has
# a key it does not know.
. "$(dirname "$0")/lib.sh"
plan 12

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" COOLDOWN=1s POLL_INTERVAL=30s <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1

[stage-p]
PROGRAM = pepsi-stage-pass
EOF
echo refuse >"$E2E_DIR/startup.a"
starts() { cat "$E2E_DIR/starts.a" 2>/dev/null | wc -l; }
started_thrice() { [ "$(starts)" -ge 3 ]; }

ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a') from generate_series(1, 2)" >/dev/null
ok "D-91: the worker's refusal is logged" wait_cmd 10 runner_log_has 'refused to run'
log=$(grep 'refused to run' "$RUNNER_LOG" | head -n 1)
like "$log" 'exit 78' "D-91: the log says exit 78"
like "$log" 'SECRET_FILE cannot be parsed' "D-91: the log names the cause (the worker's stderr)"
ok "D-91: the stage is retried after the cool-down" wait_cmd 10 started_thrice
ok "D-91: the messages wait pending" \
    wait_for "select string_agg(status::text, ',') from pepsi.workqueue" "pending,pending" 5
is "$(sql "select count(*) from pepsi.workqueue where state <> '{}'")" 0 "D-91: no strike, no error on the messages"

rm -f "$E2E_DIR/startup.a"
ok "D-91: once fixed, the messages finish" wait_for "select count(*) from pepsi.workqueue where stage = 'a'" 0 15

# pepsi-stage-pass with a key it does not know refuses (D-113) the same way.
# In the file, the runner refuses such a key at start-up (issue 15,
# 70-start-checks.t); through the overlay the worker finds it.
sql "select pepsi.config_set('p', 'NO_SUCH_PASS_KEY', '1')" >/dev/null
wait_cmd 10 runner_log_has 'configuration reloaded' >/dev/null
sql "select pepsi.workqueue_inject('p')" >/dev/null
ok "D-113: a built-in stage with an unknown key refuses to run" \
    wait_cmd 10 runner_log_has 'p: worker refused to run \(exit 78.*NO_SUCH_PASS_KEY'
ok "D-113: its message waits pending" wait_for "select status from pepsi.workqueue where stage = 'p'" pending 5
is "$(sql "select count(*) from pepsi.workqueue where state <> '{}'")" 0 "D-113: without blame"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
