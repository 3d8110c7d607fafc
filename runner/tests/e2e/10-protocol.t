#!/usr/bin/env bash
# The answer lines: an unreadable status throws the protocol out of step,
# so the worker is torn down and its messages are requeued without blame;
# an unreadable report is only a warning and the status is honoured.
. "$(dirname "$0")/lib.sh"
plan 13

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
ok "D-27: after an unreadable status all three messages finish" \
    wait_for "select count(*) from e2e_done where stage = 'g'" 3 20
like "$(runner_log)" "g: worker pid=[0-9]+ is out of step \(an unreadable status\): \"what was the question\?\"; tearing it down" \
   "D-27: the runner logs the unreadable status and tears the worker down"
is "$(sql "select count(distinct pid) from e2e_visit where stage = 'g'")" 2 \
   "D-27: the torn-down worker was replaced"
is "$(sql "select count(*) from e2e_done where stage = 'g' and state ? 'strikes'")" 0 \
   "D-27: no message got a strike"
is "$(sql "select count(*) from e2e_visit where id = $head")" 2 \
   "D-27: the message whose answer was unreadable ran again"
is "$(sql "select count(*) from e2e_visit where stage = 'g' and id <> $head")" 2 \
   "D-27: the siblings behind it ran once each"
ok "D-27: stage_stats counts requeues, no strike" \
    wait_for "select strikes = 0 and requeued >= 3 from pepsi.stage_stats where stage = 'g'" t 10

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
