#!/usr/bin/env bash
# A worker that fails a row answers non-zero: the row stays failed with its
# reason, and the same worker process goes on with the next message.
. "$(dirname "$0")/lib.sh"
plan 8

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF

ok "runner starts" start_runner "$conf"
bad=$(sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"fail\"}')")
ok "D-79: the failing message is left failed" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $bad" failed 15
good=$(sql "select pepsi.workqueue_inject('a')")
ok "D-79: the next message finishes" wait_for "select count(*) from e2e_done where id = $good" 1 15

is "$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $bad")" \
   "e2e: stage a refused message $bad" "D-79: state.last_error holds the worker's reason"
is "$(sql "select failure_class || '/' || failed_stage from pepsi.failed where workqueue_id = $bad")" \
   "permanent/a" "D-111: pepsi.failed shows failure_class and failed_stage"
is "$(sql "select count(distinct pid) from e2e_visit")" 1 \
   "D-79: one worker process served both messages (it stays alive)"
ok "D-79: stage_stats counts one failure and one success" \
    wait_for "select failed || '/' || succeeded || '/' || strikes from pepsi.stage_stats where stage = 'a'" "1/1/0" 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
