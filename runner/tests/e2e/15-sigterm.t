#!/usr/bin/env bash
# SIGTERM with messages in flight: the runner stops claiming, stops every
# worker (each finishes the message in hand), puts everything else it had
# handed out back to pending, and exits 0 with no row left running. A
# restart then finishes every message exactly once.
. "$(dirname "$0")/lib.sh"
plan 20

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
QUEUE_LIMIT = 4
EOF

ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"sleep\", \"sleep\": \"1\"}')
       from generate_series(1, 12)" >/dev/null
ok "two workers are busy" wait_for "select count(*) >= 2 from e2e_visit" t 10
is "$(sql "select count(*) from pepsi.workqueue where status = 'running'")" 8 \
   "eight messages in flight (two running, six pipelined)"

t0=$(date +%s%N)
stop_runner TERM
rc=$?
ms=$(elapsed_ms "$t0")
is "$rc" 0 "D-08, D-09: SIGTERM with messages in flight exits 0"
note "shutdown took $ms ms"
ok "D-08: the workers finished the message in hand (1 s), not more" num_between "$ms" 0 5000
is "$(sql "select count(*) from pepsi.workqueue where status = 'running'")" 0 "D-08: no row is left running"
is "$(sql "select (select count(*) from pepsi.workqueue where status = 'pending') + (select count(*) from e2e_done)")" 12 \
   "D-08: every message is either done or pending again"
ok "D-08: every worker and its child has ended" wait_cmd 5 no_workers
like "$(runner_log)" 'shutting down: 2 worker\(s\), 8 message\(s\) in flight' "D-08: the runner logs what it is stopping"
ok "D-138: the statistics were flushed at shutdown" \
    wait_for "select requeued > 0 from pepsi.stage_stats where stage = 'a'" t 1

ok "a restart serves the rest" start_runner "$conf"
ok "every message finishes" wait_for "select count(*) from pepsi.workqueue" 0 30
is "$(sql "select count(*) || '/' || count(distinct id) from e2e_done")" "12/12" "each exactly once"

# A worker that hangs does not hold the shutdown hostage: a second signal
# stops without waiting for the message in hand, which goes back to pending.
h=$(sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"hang\"}')")
ok "a worker hangs on a message" wait_for "select count(*) from e2e_visit where id = $h" 1 10
kill -TERM "$RUNNER_PID"
ok "the first SIGTERM starts the shutdown" \
    wait_cmd 5 runner_log_has 'shutting down: [0-9]+ worker\(s\), 1 message\(s\) in flight'
sleep 1
ok "D-08: and the runner waits for the busy worker" _alive "$RUNNER_PID"
t0=$(date +%s%N)
stop_runner TERM
is "$?" 0 "D-08, D-09: a second SIGTERM stops at once, status 0"
ms=$(elapsed_ms "$t0")
ok "D-08: without waiting for the hung message (${ms} ms)" num_between "$ms" 0 3000
is "$(sql "select status || '/' || (state ? 'strikes') from pepsi.workqueue where workqueue_id = $h")" "pending/false" \
   "D-08: the hung message is pending again, without a strike"
ok "D-08: the hung worker and its sleep are gone" wait_cmd 5 no_workers
done_testing
