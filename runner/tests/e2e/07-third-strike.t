#!/usr/bin/env bash
# The third strike is the message's own fault: after a crash it is failed
# (failure_class crashed), after a hang it is timeout (timed-out).
. "$(dirname "$0")/lib.sh"
plan 10

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-c]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 1

[stage-h]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 1
MAX_RUNTIME = 2s
EOF

ok "runner starts" start_runner "$conf"
crash=$(sql "select pepsi.workqueue_inject('c', p_state => '{\"strikes\": 2, \"do\": \"crash\"}')")
hang=$(sql "select pepsi.workqueue_inject('h', p_state => '{\"strikes\": 2, \"do\": \"hang\"}')")

# While the hang is on, its sleep is a process of ours.
ok "the hanging worker's helper runs meanwhile" \
    wait_cmd 10 eval "worker_cmdlines | grep -q ' sleep 3600'"
ok "D-87: a third crash strike leaves the message failed" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $crash" failed 15
ok "D-88: a third hang strike leaves the message timeout" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $hang" timeout 15

is "$(sql "select failure_class || '|' || failed_stage || '|' || strikes from pepsi.failed where workqueue_id = $crash")" \
   "crashed|c|3" "D-87: failure_class crashed, failed_stage c, strikes 3"
like "$(sql "select last_error from pepsi.failed where workqueue_id = $crash")" 'exited with status 1' \
   "D-86: last_error says the worker crashed"
is "$(sql "select failure_class || '|' || failed_stage || '|' || strikes from pepsi.failed where workqueue_id = $hang")" \
   "timed-out|h|3" "D-88: failure_class timed-out, failed_stage h, strikes 3"
is "$(sql "select count(*) from pepsi.workqueue where timeout is not null")" 0 "D-87, D-88: terminal rows wait for no retry"
like "$(runner_log)" "message $crash is failed after its third strike" "D-87: the runner logs the terminal strike"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
