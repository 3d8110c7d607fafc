#!/usr/bin/env bash
# A worker that crashes after "ready": its head message gets a strike
# (paused one minute, state.strikes = 1, state.last_error), the siblings
# pipelined behind it never ran and go back to pending without a strike,
# and they finish on a fresh worker.
. "$(dirname "$0")/lib.sh"
plan 13

conf=$E2E_DIR/pepsi.conf
# One worker with a queue of 4: the four messages of one claim are
# pipelined to the same worker, the crashing one at the head.
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4
EOF

ok "runner starts" start_runner "$conf"
# One transaction, one notification, one claim of all four (ids ascending).
ids=$(sql "select pepsi.workqueue_inject('a', p_state => case when i = 1 then '{\"do\": \"crash\"}'
                                                           else '{\"do\": \"sleep\", \"sleep\": \"0.1\"}' end::jsonb)
             from generate_series(1, 4) i")
head=$(head -n 1 <<<"$ids")
siblings=$(tail -n +2 <<<"$ids" | paste -sd, -)

ok "D-81: the crashed worker's head message is struck (paused)" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $head" paused 15
ok "D-89: the three siblings finish" wait_for "select count(*) from e2e_done where id in ($siblings)" 3 20

row=$(sql "select state->>'strikes', timeout - now() > interval '50 seconds' and timeout - now() <= interval '60 seconds'
             from pepsi.workqueue where workqueue_id = $head")
is "$row" "1|t" "D-84, D-86: state.strikes = 1 and the retry is about one minute ahead"
last_error=$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $head")
like "$last_error" 'stage a: worker exited with status 1' "D-86: state.last_error says how the worker died"
like "$last_error" 'crashing on message' "D-86: and quotes the worker's last stderr line"
is "$(sql "select count(*) from e2e_visit where id in ($siblings)")" 3 \
   "D-89: each sibling ran once: none ran on the crashed worker"
is "$(sql "select count(*) from e2e_done where id in ($siblings) and state ? 'strikes'")" 0 \
   "D-89: the siblings finished without a strike"
is "$(sql "select count(distinct pid) from e2e_visit")" 2 \
   "D-81: the crashed worker was replaced by a fresh one"
is "$(sql "select count(*) from pepsi.workqueue")" 1 "only the struck message is left"
like "$(runner_log)" "worker pid=[0-9]+ exited with status 1 holding message $head; striking it" \
   "D-81: the runner logs the strike"
ok "D-81, D-89: stage_stats counts one strike and three requeued siblings" \
    wait_for "select strikes || '/' || requeued from pepsi.stage_stats where stage = 'a'" "1/3" 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
