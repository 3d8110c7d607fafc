#!/usr/bin/env bash
# Other ways a worker fails before "ready", none of them the message's
# fault: a line that is not "ready", a program that cannot be started at
# all, and a start-up that never ends (held to MAX_RUNTIME like a message,
# so the messages handed to it are not stranded). In each case the
# messages go back to pending without a strike and the stage cools down.
#
# Stage s's MAX_RUNTIME (4 s) holds its hanging start-up, and, once fixed,
# its worker's start and message too: a start of stages/misbehave and its
# two psql per message took over 1 s on a loaded 2-core machine, and the
# message was struck (issue 12).
. "$(dirname "$0")/lib.sh"
plan 15

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" COOLDOWN=1s <<EOF
[stage-g]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1

[stage-m]
PROGRAM = $E2E_DIR/no-such-program
PARALLELISM = 1

[stage-s]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
MAX_RUNTIME = 4s

[stage-z]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
EOF
echo garbage >"$E2E_DIR/startup.g"
echo hang >"$E2E_DIR/startup.s"
echo hang >"$E2E_DIR/startup.z"

# A PROGRAM missing at start-up refuses the runner (issue 15,
# 70-start-checks.t): this one goes away once the runner serves.
printf '#!/bin/sh\nexit 1\n' >"$E2E_DIR/no-such-program"
chmod +x "$E2E_DIR/no-such-program"
ok "runner starts" start_runner "$conf"
rm -f "$E2E_DIR/no-such-program"
sql "select pepsi.workqueue_inject(s) from unnest('{g,m,s}'::text[]) s" >/dev/null

ok "D-25, D-27: a worker that answers something else than ready is torn down" \
    wait_cmd 10 runner_log_has 'g: worker pid=[0-9]+ is out of step \(expected ready\): "hello, this is not ready"'
ok "D-22: a PROGRAM that cannot be started is logged" \
    wait_cmd 10 runner_log_has "m: cannot start \"$E2E_DIR/no-such-program\": .*retrying after 1 s"
ok "a start-up that hangs past MAX_RUNTIME is killed" \
    wait_cmd 20 runner_log_has 's: worker pid=[0-9]+ killed by signal 9 .*before ready'
# Each retry claims a stage's message for the starting worker and gives it
# back: all three are pending together between retries (for s, the 1 s
# cool-down after each 4 s start-up).
ok "D-90: the messages of all three stages wait pending" \
    wait_for "select string_agg(stage || ':' || status, ' ' order by stage) from pepsi.workqueue" \
    "g:pending m:pending s:pending" 30
is "$(sql "select count(*) from pepsi.workqueue where state <> '{}'")" 0 "D-90: no strike, no error on any message"
is "$(sql "select count(*) from e2e_visit")" 0 "D-90: no message ran"
two_hung_starts() { [ "$(cat "$E2E_DIR/starts.s" 2>/dev/null | wc -l)" -ge 2 ]; }
ok "D-90: the hanging stage is retried after its cool-down" wait_cmd 30 two_hung_starts
ok "stage_stats: no strikes anywhere" \
    wait_for "select coalesce(sum(strikes), 0) from pepsi.stage_stats" 0 5

rm -f "$E2E_DIR/startup.g" "$E2E_DIR/startup.s"
printf '#!/bin/sh\nexec %s "$@"\n' "$E2E_STAGES/misbehave" >"$E2E_DIR/no-such-program"
chmod +x "$E2E_DIR/no-such-program"
ok "D-90: once the stages are fixed, all three messages finish" \
    wait_for "select count(*) from pepsi.workqueue" 0 30
is "$(sql "select string_agg(stage || ':' || n, ' ' order by stage)
             from (select stage, count(*) n from e2e_visit group by stage) x")" "g:1 m:1 s:1" \
   "D-90: each ran exactly once"

# Shutdown while a worker is still starting (MAX_RUNTIME 10 min): SIGTERM
# ends the shell, but its helper (sleep) lives on holding the pipes.
z=$(sql "select pepsi.workqueue_inject('z')")
z_started() { [ -s "$E2E_DIR/starts.z" ]; }
ok "a worker of stage z hangs in its start-up" wait_cmd 10 z_started
sleep 0.3
stop_runner
is "$?" 0 "D-09: clean shutdown"
is "$(sql "select status from pepsi.workqueue where workqueue_id = $z")" pending \
   "D-08: the starting worker's message is pending again"
ok "D-08: no process is left behind, the start-up's helper included" test -z "$(worker_cmdlines)"
done_testing
