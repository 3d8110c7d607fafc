#!/usr/bin/env bash
# A worker that dies before "ready" blames no one: its messages go back to
# pending without a strike, and the stage cools down (COOLDOWN) before the
# next worker is started, so workers start about once per cool-down rather
# than in a tight loop. Once the stage is fixed, the messages finish.
. "$(dirname "$0")/lib.sh"
plan 11

conf=$E2E_DIR/pepsi.conf
# POLL_INTERVAL is long: the retry after the cool-down must not wait for
# the heartbeat.
write_conf "$conf" COOLDOWN=1s POLL_INTERVAL=30s <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
EOF
echo die >"$E2E_DIR/startup.a"
starts() { cat "$E2E_DIR/starts.a" 2>/dev/null | wc -l; }

ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a') from generate_series(1, 3)" >/dev/null
ok "the first worker is started and dies" wait_cmd 10 runner_log_has 'exited with status 1 before ready'
t0=$(date +%s%N)
n0=$(starts)
# Watch for 5 s: the retry comes after the cool-down (1 s), at the
# runner's next housekeeping tick (every 1 s), so a start every 1 to 2 s;
# a tight loop would start hundreds, waiting for the 30 s heartbeat none.
sleep 5
n1=$(starts)
ms=$(elapsed_ms "$t0")
note "worker starts in ${ms} ms with COOLDOWN 1s: $((n1 - n0))"
ok "D-90: the stage retries once per cool-down (2..6 starts in 5 s: no tight loop, no heartbeat wait)" \
    num_between $((n1 - n0)) 2 6
ok "D-90: the dead workers' messages are back to pending" \
    wait_for "select count(*) from pepsi.workqueue where status = 'pending'" 3 5
is "$(sql "select count(*) from pepsi.workqueue where state ? 'strikes' or state ? 'last_error'")" 0 \
   "D-90: no message got a strike"
is "$(sql "select count(*) from e2e_visit")" 0 "D-90: no message ran"
like "$(runner_log)" 'worker pid=[0-9]+ exited with status 1 before ready: e2e: the helper of stage a is missing; retrying after 1 s' \
   "D-90: the log names the cause and the cool-down"

rm -f "$E2E_DIR/startup.a"
ok "D-90: once the stage is fixed, the messages finish" wait_for "select count(*) from pepsi.workqueue" 0 15
is "$(sql "select count(*) from e2e_visit")" 3 "D-90: each ran exactly once"
ok "D-137: dispatch_stats counts every worker start" \
    wait_for "select workers_started = $(starts) from pepsi.dispatch_stats" t 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
