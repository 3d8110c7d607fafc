#!/usr/bin/env bash
# Stage errors through pepsi-stage-exec (D-103..D-111): exit 75 is a host
# error, paused in its stage with state.last_error and
# state.temporary_failures, retried after 1, 2, 4 ... minutes (the clock is
# moved by rewriting the timeout); after MAX_LIFETIME it is bounced to
# BOUNCE_STAGE, or failed as retries-exhausted without one; any other exit
# is a permanent failure at once. Giving up is a failure the worker
# reports, so stage_stats counts it failed (D-80).
. "$(dirname "$0")/lib.sh"
plan 19

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-flaky]
PROGRAM = pepsi-stage-exec
COMMAND = echo "upstream says try later" >&2; exit 75
BOUNCE_STAGE = bounce
[stage-lonely]
PROGRAM = pepsi-stage-exec
COMMAND = echo "still down" >&2; exit 75
MAX_LIFETIME = 1h
[stage-broken]
PROGRAM = pepsi-stage-exec
COMMAND = echo "cannot parse the order" >&2; exit 2
[stage-bounce]
PROGRAM = $E2E_STAGES/misbehave
EOF

ok "runner starts" start_runner "$conf"
id=$(sql "select pepsi.workqueue_inject('flaky')")

# Each retry: wait for the pause, check it, then move the clock (make the
# retry due now); the heartbeat claim releases it (D-93).
check_retry() {
    local n=$1 minutes=$2
    wait_for "select status || '/' || (state->'temporary_failures'->>'flaky')
                from pepsi.workqueue where workqueue_id = $id" "paused/$n" 20 || return 1
    local got
    got=$(sql "select round(extract(epoch from timeout - now()) / 60)
                 from pepsi.workqueue where workqueue_id = $id")
    [ "$got" = "$minutes" ] || { diag "retry after $got min, expected $minutes"; return 1; }
    sql "update pepsi.workqueue set timeout = now() where workqueue_id = $id"
}
ok "D-104, D-105: first host error: paused, retry after 1 minute" check_retry 1 1
ok "D-105: second: after 2 minutes" check_retry 2 2
ok "D-105: third: after 4 minutes" check_retry 3 4
ok "D-105: fourth: after 8 minutes" check_retry 4 8
is "$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $id")" \
   "stage flaky: command asked to retry (exit 75): upstream says try later" \
   "D-104: state.last_error keeps the command's reason"
ok "D-106: each retry is a warning under the stage's name" \
    runner_log_has "WARNING: +flaky: \[[0-9]+\] host error on message $id"

# An old message: past MAX_LIFETIME at its next host error.
old=$(sql "select pepsi.workqueue_inject('flaky', p_arrived_at => now() - interval '121 hours')")
ok "D-108: past MAX_LIFETIME (120 h default) it goes to BOUNCE_STAGE, which runs it" \
    wait_for "select count(*) from e2e_done where id = $old and stage = 'bounce'" 1 20
is "$(sql "select state->>'failure_class' || '/' || (state->>'failed_stage') from e2e_done where id = $old")" \
   "retries-exhausted/flaky" "D-111: with failure_class retries-exhausted and failed_stage"

lonely=$(sql "select pepsi.workqueue_inject('lonely', p_arrived_at => now() - interval '2 hours')")
ok "D-109: without BOUNCE_STAGE it fails" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $lonely" failed 20
is "$(sql "select failure_class || '/' || failed_stage from pepsi.failed where workqueue_id = $lonely")" \
   "retries-exhausted/lonely" "D-111: retries-exhausted, failed in its stage"
# D-80: giving up is a failure the worker reports (non-zero), so that it
# is counted failed, never as a success (issue 12).
ok "D-80: stage_stats counts the exhausted message failed, not succeeded" \
    wait_for "select failed || '/' || succeeded from pepsi.stage_stats where stage = 'lonely'" "1/0" 10
like "$(runner_log)" "WARNING: +lonely: \[[0-9]+\] message $lonely failed: host errors outlived MAX_LIFETIME" \
   "D-80: the worker says so"

generated=$(sql "select pepsi.workqueue_inject('lonely', p_arrived_at => now() - interval '2 hours',
                                               p_state => jsonb_build_object('generated_at', now()))")
ok "D-107: a notice counts its lifetime from state.generated_at: paused, not failed" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $generated" paused 20
ok "D-80, D-108: a bounce after MAX_LIFETIME and retries are no failures of the stage" \
    wait_for "select (select failed from pepsi.stage_stats where stage = 'flaky') || '/'
                     || (select failed from pepsi.stage_stats where stage = 'lonely')" "0/1" 10

broken=$(sql "select pepsi.workqueue_inject('broken')")
ok "D-110: any other exit fails the message at once" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $broken" failed 20
is "$(sql "select failure_class || '/' || last_error from pepsi.failed where workqueue_id = $broken")" \
   "permanent/cannot parse the order" "D-111: failure_class permanent and the command's last stderr line"
is "$(sql "select state ? 'temporary_failures' from pepsi.workqueue where workqueue_id = $broken")" f \
   "D-110: no retry was counted for a permanent failure"
stop_runner
is "$?" 0 "clean shutdown"
done_testing
