#!/usr/bin/env bash
# Issue 16: a paused stage stays paused across runner restarts. The pause
# is a row of pepsi.stage_pause, not runner state: a runner stopped by
# SIGTERM, or killed by SIGKILL, and started again claims nothing of the
# paused stage, while another stage flows; resume lets its messages finish.
# Every claim is recorded (record_claims), so "not claimed" means no claim
# at all, not only "pending again by the time we look".
. "$(dirname "$0")/lib.sh"

plan 14

out=$E2E_DIR/out
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1h RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
FUSION = no
NEXT = b
[stage-b]
PROGRAM = pepsi-stage-pass
FUSION = no
[stage-c]
PROGRAM = pepsi-stage-pass
FUSION = no
EOF

run_runner "$out" -c "$conf" queue pause a --reason "e2e 75"
is "$(cat "$out")" "stage a paused" "issue 16: stage a paused before any runner starts"
record_claims

paused_ids=$(sql "select string_agg(pepsi.workqueue_inject('a', p_body => 'x')::text, ',') from generate_series(1, 5)")
claims_of_a() { sql "select count(*) from e2e_claims where workqueue_id in ($paused_ids)"; }
pending_at_a() { sql "select count(*) from pepsi.workqueue where workqueue_id in ($paused_ids) and stage = 'a' and status = 'pending'"; }

# round NAME: a message at c finishes (the runner claims), then a's five
# still wait unclaimed.
round() {
    local c
    c=$(sql "select pepsi.workqueue_inject('c', p_body => 'x')")
    ok "$1: the runner claims and finishes a message at stage c" \
        wait_for "select count(*) from pepsi.workqueue where workqueue_id = $c" 0 30
    sleep 2
    is "$(claims_of_a)" 0 "issue 16, $1: no message of the paused stage a was claimed"
    is "$(pending_at_a)" 5 "issue 16, $1: all five wait pending at a"
}

start_runner "$conf"
round "first start"

stop_runner TERM
is "$?" 0 "the runner stops on SIGTERM"
start_runner "$conf"
round "after a SIGTERM restart"

kill_runner
start_runner "$conf"
round "after a SIGKILL restart"

run_runner "$out" -c "$conf" queue resume a
is "$(cat "$out")" "stage a resumed" "issue 16: queue resume a"
ok "issue 16: the five messages of a finish after resume" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id in ($paused_ids)" 0 30
stop_runner TERM
is "$?" 0 "the runner stops on SIGTERM"
done_testing
