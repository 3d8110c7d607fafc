#!/usr/bin/env bash
# A worker retired while it is still starting (a reload or telemetry_changed
# between its spawn and its "ready"; issue 12, found by slice E of issue 13
# as a 33-reload flake): its late "ready" is the answer it owes, not "a
# second ready". It runs the message it was given, then goes; nothing is
# torn down, nobody is struck, the stage is not cooled down, no second
# process starts. Before the fix: "out of step (a second ready)", SIGKILL,
# the message back to pending and the stage held back as after a failed
# start.
. "$(dirname "$0")/lib.sh"
plan 8

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
EOF
echo gate >"$E2E_DIR/startup.a"
ok "runner starts" start_runner "$conf"
id=$(sql "select pepsi.workqueue_inject('a')")
ok "a worker starts and waits before its ready, holding the message" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $id" running 20
started() { [ "$(wc -l <"$E2E_DIR/starts.a" 2>/dev/null || echo 0)" -ge 1 ]; }
ok "its process is up" wait_cmd 20 started
n=$(grep -c 'retiring' "$RUNNER_LOG")
sql "select pepsi.telemetry_changed()" >/dev/null
retired() { [ "$(grep -c 'retiring' "$RUNNER_LOG")" -gt "$n" ]; }
ok "telemetry_changed retires it while it is starting" wait_cmd 20 retired
touch "$E2E_DIR/go-ready.a"
ok "its late ready is accepted and the message finishes" \
    wait_for "select count(*) from e2e_done where id = $id" 1 20
ok "no protocol error, no failed start, no cool-down" \
    test -z "$(grep -E 'out of step|before ready|retrying after' "$RUNNER_LOG")"
is "$(wc -l <"$E2E_DIR/starts.a")" 1 "no second worker process was started"
is "$(sql "select count(*) from e2e_visit where id = $id")" 1 "the message ran once, unstruck"
stop_runner >/dev/null
done_testing
