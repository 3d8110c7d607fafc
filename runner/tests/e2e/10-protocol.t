#!/usr/bin/env bash
# The answer lines: an unreadable status throws the protocol out of step,
# so the worker is torn down; as a crash, its head message gets a strike
# and the others are requeued without blame (issue 12, D-81, D-89); an
# unreadable report is only a warning and the status is honoured.
. "$(dirname "$0")/lib.sh"
plan 14

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-g]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4

[stage-r]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF

ok "runner starts" start_runner "$conf"

# D-27: the head answers garbage on its first visit; two siblings wait behind it.
ids=$(sql "select pepsi.workqueue_inject('g', p_state => case when i = 1 then '{\"do\": \"garbage-once\"}'
                                                           else '{}' end::jsonb)
             from generate_series(1, 3) i")
head=$(head -n 1 <<<"$ids")
ok "D-27: after an unreadable status the two siblings finish" \
    wait_for "select count(*) from e2e_done where stage = 'g'" 2 20
like "$(runner_log)" "g: worker pid=[0-9]+ is out of step \(an unreadable status\): \"what was the question\?\"; tearing it down" \
   "D-27: the runner logs the unreadable status and tears the worker down"
is "$(sql "select count(distinct pid) from e2e_visit where stage = 'g'")" 2 \
   "D-27: the torn-down worker was replaced"
is "$(sql "select status || '/' || (state->>'strikes') from pepsi.workqueue where workqueue_id = $head")" "paused/1" \
   "issue 12, D-81: the message whose answer was unreadable got a strike"
is "$(sql "select count(*) from e2e_done where stage = 'g' and state ? 'strikes'")" 0 \
   "D-89: the siblings got none"
is "$(sql "select count(*) from e2e_visit where stage = 'g' and id <> $head")" 2 \
   "D-27: the siblings behind it ran once each"
ok "D-27: stage_stats counts one strike and the requeues" \
    wait_for "select strikes = 1 and requeued >= 2 from pepsi.stage_stats where stage = 'g'" t 10
sql "update pepsi.workqueue set timeout = now() where workqueue_id = $head" >/dev/null
ok "D-84: once its strike's pause is over, it runs again and finishes" \
    wait_for "select count(*) from e2e_done where id = $head" 1 20

# D-28: a report that is not JSON; the worker stays and answers the next one.
r1=$(sql "select pepsi.workqueue_inject('r', p_state => '{\"do\": \"badreport\"}')")
ok "D-28: a message answered with an unreadable report is finished" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id = $r1" 0 15
r2=$(sql "select pepsi.workqueue_inject('r')")
ok "D-28: the next message finishes too" wait_for "select count(*) from e2e_done where id = $r2" 1 15
like "$(runner_log)" "WARNING:  r: dropped an unreadable report for message $r1" "D-28: with a warning"
is "$(sql "select count(distinct pid) from e2e_visit where stage = 'r'")" 1 "D-28: the worker was not torn down"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
