#!/usr/bin/env bash
# A runner killed with SIGKILL mid-flight leaves nothing to clean up: its
# workers end on their own (EOF on stdin, or a broken pipe on their next
# answer), PostgreSQL releases the lock with the session, and the next
# start resets the rows left running. Every message then finishes exactly
# once: the last stage records each id in the same transaction as its
# finish (e2e_done).
. "$(dirname "$0")/lib.sh"
plan 17

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
NEXT = b

[stage-b]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
QUEUE_LIMIT = 4
NEXT = c

[stage-c]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
EOF

inject() {
    sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": {\"b\": \"sleep\"}, \"sleep\": \"0.1\"}')
           from generate_series(1, $1)" >/dev/null
}
done_at_c() { sql "select count(*) || '/' || count(distinct id) from e2e_done where stage = 'c'"; }
running() { sql "select count(*) from pepsi.workqueue where status = 'running'"; }

# ---- round 1: only the runner dies; its workers live on until they notice ----
ok "runner starts" start_runner "$conf"
inject 30
ok "messages are flowing" wait_for "select count(*) >= 3 from e2e_done where stage = 'c'" t 20
kill_runner
t0=$(date +%s%N)
ok "D-16: the orphaned workers end by themselves" wait_cmd 20 no_workers
note "the orphans were gone after $(elapsed_ms "$t0") ms"
left=$(running)
note "rows left running by the killed runner: $left"
ok "D-16: a new runner starts at once: the killed one held no lock" start_runner "$conf"
is "$(grep -c 'another dispatcher' "$RUNNER_LOG")" 0 "D-16: it did not wait for a lock"
if [ "$left" -gt 0 ]; then
    like "$(runner_log)" "reset $left message\(s\) left running by an earlier dispatcher" \
       "D-18: it reset the $left rows left running"
else
    ok "D-18: nothing was left running, nothing reset" test -z "$(grep 'reset [0-9]* message' "$RUNNER_LOG")"
fi
t0=$(date +%s%N)
ok "D-18: all 30 messages finish" wait_for "select count(*) from pepsi.workqueue" 0 40
note "the rest took $(elapsed_ms "$t0") ms"
is "$(done_at_c)" "30/30" "every message finished exactly once"

# ---- round 2: the runner and all its workers die at once ----
inject 30
ok "messages are flowing again" wait_for "select count(*) >= 33 from e2e_done where stage = 'c'" t 20
pids=$(worker_pids)
kill_runner
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
ok "the whole unit is gone" wait_cmd 10 no_workers
left=$(running)
note "rows left running: $left"
ok "rows were left running" num_between "$left" 1 60
ok "D-16: a new runner starts" start_runner "$conf"
like "$(runner_log)" "reset $left message\(s\) left running by an earlier dispatcher" \
   "D-18: it reset the $left rows left running to pending"
ok "D-18: all 60 messages finish" wait_for "select count(*) from pepsi.workqueue" 0 40
is "$(done_at_c)" "60/60" "every message finished exactly once"
is "$(sql "select count(*) from pepsi.workqueue where status <> 'pending'")" 0 "no row is left behind"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
