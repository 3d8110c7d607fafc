#!/usr/bin/env bash
# A stage that leaves a message paused records when to retry it in
# `timeout`; the runner sleeps until then, makes it pending again and the
# stage sees it a second time. POLL_INTERVAL is long, so the heartbeat is
# not what brings it back.
. "$(dirname "$0")/lib.sh"
plan 9

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" POLL_INTERVAL=30s <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
EOF

ok "runner starts" start_runner "$conf"
id=$(sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"pause\"}')")
# The stage records the row as its pause left it, in the pause's own
# transaction (e2e_paused): the 1 s the row is paused is no window this
# test has to hit, however loaded the machine.
ok "D-92: the stage leaves the message paused" \
    wait_for "select status from e2e_paused where id = $id" paused 10
is "$(sql "select timeout - at = interval '1 second' and state->>'pause_reason' = 'e2e pause'
             from e2e_paused where id = $id")" t \
   "D-92: with its retry time in timeout (1 s after the pause) and the reason in state"
ok "D-93: after the pause the stage sees it again and finishes it" \
    wait_for "select count(*) from e2e_done where id = $id" 1 10
is "$(sql "select count(*) from e2e_visit where id = $id")" 2 "D-93: it ran twice"
# Both times from the database's clock: the second visit against the
# timeout the pause set.
late=$(sql "select (extract(epoch from v.at - p.timeout) * 1000)::int
              from e2e_visit v join e2e_paused p using (id) where v.id = $id order by v.at desc limit 1")
note "second pass $late ms after the timeout"
is "$(sql "select bool_and(v.at >= p.timeout) from e2e_visit v join e2e_paused p using (id)
             where v.id = $id and v.at > p.at")" t "D-93: not before its timeout"
ok "D-93: and soon after it, not at the next heartbeat (30 s)" num_between "$late" 0 10000
is "$(sql "select count(*) from pepsi.workqueue")" 0 "the message is done"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
