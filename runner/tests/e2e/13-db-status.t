#!/usr/bin/env bash
# The two database statuses are not the message's fault: 75 (overload)
# requeues it and throttles the busiest stage; 74 (lost connection) pauses
# it for 30 s, after which it returns to the same stage.
. "$(dirname "$0")/lib.sh"
plan 15

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-t]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 4

[stage-i]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
EOF

ok "runner starts" start_runner "$conf"

# ---- 75 ----
t=$(sql "select pepsi.workqueue_inject('t', p_state => '{\"do\": \"status75-once\"}')")
ok "D-95: a message answered with 75 is requeued and finishes later" \
    wait_for "select count(*) from e2e_done where id = $t" 1 15
is "$(sql "select count(*) from e2e_visit where id = $t")" 2 "D-95: it ran twice (75, then success)"
is "$(sql "select state - 'do' from e2e_done where id = $t")" "{}" "D-95: nothing was recorded against it"
like "$(runner_log)" 'database overload reported by stage t; stage t limited to 2 worker\(s\)' \
   "D-96: the busiest stage's cap is halved (4 -> 2) for 5 minutes"
ok "D-95: stage_stats counts the tempfail" \
    wait_for "select tempfailed || '/' || failed || '/' || strikes from pepsi.stage_stats where stage = 't'" "1/0/0" 10

# ---- 74 ----
i=$(sql "select pepsi.workqueue_inject('i', p_state => '{\"do\": \"status74-once\"}')")
ok "D-100: a message answered with 74 is paused" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $i" paused 15
is "$(sql "select timeout - now() between interval '25 seconds' and interval '30 seconds'
             from pepsi.workqueue where workqueue_id = $i")" t "D-100: for about 30 s"
is "$(sql "select stage from pepsi.workqueue where workqueue_id = $i")" i "D-100: at the same stage"
like "$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $i")" 'lost its database connection' \
   "D-100: state.last_error says why"
is "$(sql "select state ? 'strikes' from pepsi.workqueue where workqueue_id = $i")" f "D-100: no strike"
like "$(runner_log)" "WARNING:  dispatch: stage i lost its database connection on message $i; deferring it 30 s" \
   "D-101: each deferral is a warning of the dispatcher"
ok "D-100, D-101: neither a failure nor a strike in stage_stats; the 74 is counted nowhere" \
    wait_for "select failed || '/' || strikes from pepsi.stage_stats where stage = 'i'" "0/0" 10

# Half a minute later (moved forward here), the sweep hands it back.
sql "update pepsi.workqueue set timeout = now() where workqueue_id = $i" >/dev/null
ok "D-100: once due, the paused sweep returns it to the same stage and it finishes" \
    wait_for "select count(*) from e2e_done where id = $i and stage = 'i'" 1 15
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
