#!/usr/bin/env bash
# issue 12: a worker that breaks the protocol after "ready" (a stray line
# on stdout) has a cost and a limit. Before, it was torn down and respawned
# in a hot loop (about 4,000 processes in 45 s), nothing was struck and the
# message never ended. Now the line counts as a crash of the head message
# (one strike, D-81), the rest of its queue goes back untouched (D-89), and
# the stage is cooled down as after a failed start (D-90), with a log line
# naming the violation.
#   stage g: one message makes its worker answer garbage on every visit;
#            two siblings queued behind it on the same worker.
#   stage s: every worker prints a stray line right after "ready" (a
#            library's banner), so every start breaks the protocol.
. "$(dirname "$0")/lib.sh"
plan 17

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" COOLDOWN=5s <<EOF
[stage-g]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 4

[stage-s]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF
echo stray >"$E2E_DIR/startup.s"
starts() { cat "$E2E_DIR/starts.$1" 2>/dev/null | wc -l; }

ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('s') from generate_series(1, 30)" >/dev/null
s_started() { [ "$(starts s)" -ge 1 ]; }
ok "a worker of stage s started" wait_cmd 10 s_started
t0=$(date +%s%N)

# ---- stage g: the head answers garbage, its siblings wait behind it ----
ids=$(sql "select pepsi.workqueue_inject('g', p_state => case when i = 1 then '{\"do\": \"garbage\"}'
                                                           else '{}' end::jsonb)
             from generate_series(1, 3) i")
head=$(head -n 1 <<<"$ids")
sibs=$(tail -n +2 <<<"$ids" | paste -sd,)
ok "issue 12, D-81: an unreadable status after ready strikes the head message once" \
    wait_for "select status || '/' || (state->>'strikes') from pepsi.workqueue where workqueue_id = $head" "paused/1" 15
like "$(runner_log)" "g: worker pid=[0-9]+ broke the worker protocol \(an unreadable status: \"what was the question\?\"\) holding message $head; striking it, requeueing 2, no new worker for 5 s" \
   "issue 12: the log names the violation, the struck message and the cool-down"
ok "D-89: the siblings finish" wait_for "select count(*) from e2e_done where id in ($sibs)" 2 20
is "$(sql "select count(*) from e2e_done where id in ($sibs) and state ? 'strikes'")" 0 \
   "D-89: the siblings are not struck"
is "$(sql "select count(*) from e2e_visit where id in ($sibs)")" 2 "D-89: each sibling ran once"

# The second and third visits (the strike's pause moved forward here).
strike_again() {
    sql "update pepsi.workqueue set timeout = now() where workqueue_id = $head and status = 'paused'" >/dev/null
    wait_for "select status || '/' || (state->>'strikes') from pepsi.workqueue where workqueue_id = $head" "$1" 20
}
ok "D-85: the second visit breaks the protocol again: a second strike" strike_again "paused/2"
ok "D-87: the third ends the message: failed, crashed" strike_again "failed/3"
is "$(sql "select failure_class || '|' || failed_stage from pepsi.failed where workqueue_id = $head")" "crashed|g" \
   "D-87: failure_class crashed, failed_stage g"
like "$(sql "select last_error from pepsi.failed where workqueue_id = $head")" \
     'stage g: worker broke the protocol: an unreadable status: "what was the question\?"' \
     "D-86: last_error names the violation"
ok "issue 12: stage g started fewer than 20 workers for all that" num_between "$(starts g)" 2 19

# ---- stage s: every start breaks the protocol; the cool-down holds it back ----
left=$((60 - $(elapsed_ms "$t0") / 1000))
[ "$left" -gt 0 ] && sleep "$left"
n=$(starts s)
note "stage s: $n worker start(s) in 60 s"
ok "issue 12, D-90: a stage whose every worker breaks the protocol starts fewer than 20 in 60 s" \
    num_between "$n" 2 19
ok "issue 12: and says why each time" \
    runner_log_has 's: worker pid=[0-9]+ broke the worker protocol \(an unreadable status: "libfoo 1.2 initialised"\) holding message [0-9]+; striking it, requeueing 0, no new worker for 5 s \([0-9]+ violation\(s\) in a row\)'
struck=$(sql "select count(*) from pepsi.workqueue where stage = 's' and state ? 'strikes'")
ok "D-81: one strike per broken worker at most (the head it held)" num_between "$struck" 1 "$n"
is "$(sql "select count(*) from pepsi.workqueue
             where stage = 's' and status in ('pending', 'running') and state = '{}'")" \
   "$((30 - struck))" "D-89: every message not struck waits, untouched"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
