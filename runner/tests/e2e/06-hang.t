#!/usr/bin/env bash
# MAX_RUNTIME: a worker that hangs on a message is killed and the message
# is struck; a sibling queued behind it is not charged for the wait and
# finishes. The clock runs per message from the head of the queue, so slow
# messages in a row do not add up to a kill.
#
# MAX_RUNTIME applies to every message and start-up of these stages, the
# ones that must not be killed too: a worker of stages/misbehave starts a
# shell and two psql per message, which took over 1 s on a loaded 2-core
# machine (the sibling was struck, issue 12). So the limits are 4 s, and
# a slow message sleeps 1.2 s: well inside the limit alone, over it four
# in a row.
. "$(dirname "$0")/lib.sh"
plan 14

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-h]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4
MAX_RUNTIME = 4s

[stage-slow]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4
MAX_RUNTIME = 4s
EOF

ok "runner starts" start_runner "$conf"
ids=$(sql "select pepsi.workqueue_inject('h', p_state => case when i = 1 then '{\"do\": \"hang\"}'
                                                           else '{}' end::jsonb)
             from generate_series(1, 2) i")
head=$(head -n 1 <<<"$ids")
sibling=$(tail -n 1 <<<"$ids")
ok "D-82: the hung head message is struck (paused)" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $head" paused 20
# From the claim to the strike on the database's clock (a first strike
# pauses for 1 min from its now()): the worker starts after the claim and
# the head's clock after its ready, so no less than MAX_RUNTIME can pass;
# the test's own polling is not counted.
ms=$(sql "select (extract(epoch from timeout - interval '1 minute' - claimed_at) * 1000)::int
            from pepsi.workqueue where workqueue_id = $head")
ok "D-82: the worker was killed after MAX_RUNTIME (4 s), not much later ($ms ms from claim to strike)" \
    num_between "$ms" 4000 10000
ok "D-89: the sibling queued behind it finishes" wait_for "select count(*) from e2e_done where id = $sibling" 1 20
is "$(sql "select state->>'strikes' from pepsi.workqueue where workqueue_id = $head")" 1 \
   "D-86: state.strikes = 1"
like "$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $head")" \
   'MAX_RUNTIME' "D-86: state.last_error mentions MAX_RUNTIME"
is "$(sql "select state ? 'strikes' from e2e_done where id = $sibling")" f \
   "D-83, D-89: the sibling was not charged a strike"
is "$(sql "select count(*) from e2e_visit where id = $sibling")" 1 "D-89: the sibling ran once, on a fresh worker"
no_hung_sleep() { ! worker_cmdlines | grep -q ' sleep 3600'; }
ok "D-82: the whole process group of the killed worker is gone (its sleep included)" \
    wait_cmd 10 no_hung_sleep

# Four messages of 1.2 s each on one worker, MAX_RUNTIME 4 s: together
# they take longer than MAX_RUNTIME, each alone does not.
ids=$(sql "select pepsi.workqueue_inject('slow', p_state => '{\"do\": \"sleep\", \"sleep\": \"1.2\"}')
             from generate_series(1, 4)")
ok "D-83: four slow messages in one worker's queue all finish" \
    wait_for "select count(*) from e2e_done where stage = 'slow'" 4 30
is "$(sql "select (select max(at) from e2e_done where stage = 'slow') - (select min(at) from e2e_visit where stage = 'slow')
                  > interval '4 seconds'")" t \
   "D-83: from the first one's start to the last one's end took longer than MAX_RUNTIME"
is "$(sql "select count(distinct pid) from e2e_visit where stage = 'slow'")" 1 \
   "D-83: on one worker, none killed: the clock starts at the head of the queue"
ok "stage_stats: one strike at h, none at slow" \
    wait_for "select string_agg(stage || ':' || strikes, ' ' order by stage) from pepsi.stage_stats" "h:1 slow:0" 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
