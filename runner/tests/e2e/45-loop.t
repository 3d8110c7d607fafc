#!/usr/bin/env bash
# issue 12: a hop limit per message. A stage whose NEXT is itself used to
# run one message thousands of times a second, for ever, with nothing
# logged. Now, with [pepsi] MAX_HOPS = 50:
#   - start-up warns about the self-loop, a cycle no message can leave,
#     and not about a cycle with a way out (an if that loops while a
#     state key is there);
#   - the self-looping message fails as a 'loop' after exactly 50 hops,
#     with the limit and its last stages in last_error, the worker's log
#     names it, and stage_stats counts it failed (the worker answered
#     non-zero);
#   - a message caught in the cycle with a way out is bounded the same way;
#   - a legitimate 3-stage pipeline is unaffected;
# with fusion on (a chain of fused stages counts one hop each) and off:
# the rows left are the same both ways.
. "$(dirname "$0")/lib.sh"
plan 30

pipeline() {
    cat <<EOF
[stage-loop]
PROGRAM = pepsi-stage-pass
NEXT = loop
[stage-in]
PROGRAM = pepsi-stage-pass
NEXT = mid
[stage-mid]
PROGRAM = pepsi-stage-pass
NEXT = out
[stage-out]
PROGRAM = pepsi-stage-pass
[stage-check]
PROGRAM = pepsi-stage-if
CONDITION = state.again exists
THEN = again
ELSE = out
[stage-again]
PROGRAM = pepsi-stage-pass
NEXT = check
EOF
}

# What must be the same with and without fusion: the rows left.
outcome() {
    sql "select coalesce(string_agg(format('%s/%s/%s/%s/%s', state->>'n', stage, status, state->>'failure_class',
                                           state->>'hops'), ' ' order by (state->>'n')::int), '')
           from pepsi.workqueue"
}

run_mode() {
    local fusion=$1 conf=$E2E_DIR/pepsi-$1.conf t0 loop_id check_id ms
    {
        echo "[pepsi]"
        echo "ALLOW_FUSION = $fusion"
        echo "MAX_HOPS = 50"
        echo
        pipeline
    } | write_conf "$conf" STATS_INTERVAL=1s
    sql "truncate pepsi.workqueue, pepsi.stage_stats, pepsi.dispatch_stats"
    ok "fusion $fusion: the runner starts" start_runner "$conf"
    like "$(runner_log)" 'WARNING: +config: stage graph: stage "loop" sends every message back to itself and finishes none; a message that reaches it fails as a loop after MAX_HOPS \(50\) hops' \
        "issue 12: fusion $fusion: start-up warns about the stage whose NEXT is itself"
    ok "issue 12: fusion $fusion: no warning about the cycle check -> again -> check, which has a way out" \
        bash -c "! grep -q 'stage graph:.*\"check\"' '$RUNNER_LOG'"

    t0=$(date +%s%N)
    loop_id=$(sql "select pepsi.workqueue_inject('loop', p_state => '{\"n\": 0}')")
    check_id=$(sql "select pepsi.workqueue_inject('check', p_state => '{\"n\": 1, \"again\": true}')")
    sql "select pepsi.workqueue_inject_batch((select jsonb_agg(jsonb_build_object('stage', 'in', 'state', jsonb_build_object('n', n)))
                                                from generate_series(2, 21) n))" >/dev/null
    sql "select pepsi.workqueue_inject('check', p_state => '{\"n\": 22}')" >/dev/null
    ok "issue 12: fusion $fusion: the self-looping message fails" \
        wait_for "select status from pepsi.workqueue where workqueue_id = $loop_id" failed 30
    ms=$(elapsed_ms "$t0")
    ok "issue 12: fusion $fusion: quickly (${ms} ms)" num_between "$ms" 0 20000
    is "$(sql "select f.failure_class || ' ' || f.failed_stage || ' ' || (w.state->>'hops')
                 from pepsi.failed f join pepsi.workqueue w using (workqueue_id) where workqueue_id = $loop_id")" \
       "loop loop 51" "issue 12: fusion $fusion: as a loop at its stage after exactly MAX_HOPS hops"
    is "$(sql "select last_error from pepsi.failed where workqueue_id = $loop_id")" \
       "loop: 51 hops, more than MAX_HOPS (50); the last stages: loop -> loop -> loop -> loop -> loop -> loop -> loop -> loop" \
       "issue 12: fusion $fusion: last_error names the limit and the path"
    ok "issue 12: fusion $fusion: the message caught in the cycle with a way out is bounded too" \
        wait_for "select (state->>'failure_class') || ' ' || (state->>'hops') from pepsi.workqueue where workqueue_id = $check_id" "loop 51" 30
    is "$(sql "select last_error from pepsi.failed where workqueue_id = $check_id")" \
       "loop: 51 hops, more than MAX_HOPS (50); the last stages: check -> again -> check -> again -> check -> again -> check -> again" \
       "issue 12: fusion $fusion: with the cycle's stages in its reason"
    ok "issue 12: fusion $fusion: the legitimate pipeline finishes every message" \
        wait_for "select count(*) from pepsi.workqueue where status <> 'failed'" 0 30
    like "$(runner_log)" "WARNING: +loop: \[[0-9]+\] message $loop_id failed as a loop: more than MAX_HOPS \(50\) hops" \
        "issue 12: fusion $fusion: the worker's log names the looping message"
    ok "issue 12: fusion $fusion: stage_stats counts it failed (the worker answered non-zero)" \
        wait_for "select coalesce(sum(failed), 0) from pepsi.stage_stats where stage = 'loop'" 1 10
    ok "fusion $fusion: one failure counted for the other cycle, none for the pipeline" \
        wait_for "select coalesce(sum(failed), 0) from pepsi.stage_stats where stage in ('check', 'again', 'in', 'mid', 'out')" 1 10
    stop_runner
    is "$?" 0 "fusion $fusion: clean shutdown"
}

run_mode no
rows_off=$(outcome)
run_mode yes
rows_on=$(outcome)
is "$rows_on" "$rows_off" "D-130: the rows left are identical with and without fusion (the loops fail at the same stage and count)"
is "$rows_off" "0/loop/failed/loop/51 1/check/failed/loop/51" "issue 12: only the two looping messages are left, failed as loops"
done_testing
