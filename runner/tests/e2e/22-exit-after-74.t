#!/usr/bin/env bash
# issue 12: a worker that answers 74 (it lost its database connection) and
# then exits does not cost the messages queued behind it a strike: they
# never ran, and the worker's death follows from the lost connection, not
# from them. They go back to pending untouched and finish (D-89, D-100).
# Before, the next id already sent to it was struck as a crash (one
# PostgreSQL restart struck 5 innocent messages).
. "$(dirname "$0")/lib.sh"
plan 10

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-x]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4
EOF

ok "runner starts" start_runner "$conf"
# The head answers 74 and exits on its first visit; three wait behind it.
ids=$(sql "select pepsi.workqueue_inject('x', p_state => case when i = 1 then '{\"do\": \"status74exit-once\"}'
                                                           else '{}' end::jsonb)
             from generate_series(1, 4) i")
head=$(head -n 1 <<<"$ids")
queued=$(tail -n +2 <<<"$ids" | paste -sd,)

ok "issue 12: the messages queued behind the 74 finish" \
    wait_for "select count(*) from e2e_done where id in ($queued)" 3 20
is "$(sql "select count(*) from e2e_done where id in ($queued) and state ? 'strikes'")" 0 \
   "issue 12: none of them was struck (no state.strikes)"
is "$(sql "select count(distinct pid) from e2e_visit where id in ($queued)")" 1 \
   "D-89: they ran on the replacement worker, once each"
like "$(runner_log)" "x: worker pid=[0-9]+ exited with status 1 after reporting a lost database connection \(status 74\); its 3 queued message\(s\) go back to pending without a strike" \
   "issue 12: the log says why nobody was struck"
ok "issue 12: stage_stats counts no strike and three requeues" \
    wait_for "select strikes || '/' || (requeued >= 3) from pepsi.stage_stats where stage = 'x'" "0/true" 10

# The head itself: deferred 30 s without blame (D-100), then it finishes.
is "$(sql "select status || '/' || (state ? 'strikes') from pepsi.workqueue where workqueue_id = $head")" "paused/false" \
   "D-100: the message answered 74 is paused, not struck"
sql "update pepsi.workqueue set timeout = now() where workqueue_id = $head" >/dev/null
ok "D-100: once due it finishes" wait_for "select count(*) from e2e_done where id = $head" 1 15
is "$(sql "select count(*) from pepsi.workqueue")" 0 "nothing is left"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
