#!/usr/bin/env bash
# Tube pause (issue 14, beanstalkd pause-tube): a runner serving two tubes
# of one stage. One is paused with pepsi.tube_pause for 15 seconds (wide enough for the other tube to finish on a loaded machine: 6 s was not once): its
# messages wait while the other tube's finish, and after the pause they
# finish, none before its end, each exactly once. Then, with a long
# POLL_INTERVAL, tube_pause(t, 0) ends a long pause and the runner takes
# the rows at once (the NOTIFY), not at its next heartbeat.
. "$(dirname "$0")/lib.sh"
plan 20

n=10
stage() {
    cat <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
EOF
}

conf=$E2E_DIR/pepsi.conf

# round FAIR: the pause with FAIR_SCHEDULING=FAIR (the fair claim, or the
# plain one), tubes slow.FAIR and fast.FAIR.
round() {
    local fair=$1 slow=slow.$1 fast=fast.$1 until smax fmax
    stage | write_conf "$conf" POLL_INTERVAL=1s FAIR_SCHEDULING="$fair"
    start_runner "$conf"
    # The slow tube's messages and its pause in one transaction: the
    # runner's first claim after the inject's NOTIFY already sees the pause.
    until=$(sql "with i as (select pepsi.workqueue_inject('a', p_tube => '$slow') from generate_series(1, $n))
                 select pepsi.tube_pause('$slow', 15) from (select count(*) from i) c")
    like "$until" '^[0-9]{4}-' "FAIR_SCHEDULING=$fair: tube_pause pauses tube $slow for 15 s (until $until)"
    smax=$(sql "select max(workqueue_id) from pepsi.workqueue where tube = '$slow'")
    fmax=$(sql "select max(i) from (select pepsi.workqueue_inject('a', p_tube => '$fast') as i
                                      from generate_series(1, $n)) f")
    ok "the other tube's $n messages finish during the pause" \
        wait_for "select count(*) from e2e_done d where d.id > $smax and d.id <= $fmax" "$n" 20
    is "$(sql "select count(*) from e2e_visit where id <= $smax")" 0 "the paused tube's messages were not claimed"
    is "$(sql "select now() < '$until'::timestamptz")" t "(checked while the pause was still in force)"
    is "$(sql "select current_jobs_ready, pause from pepsi.tube_stats('$slow')")" "$n|15" \
       "tube_stats: $n ready, paused for 15 s"
    ok "after the pause the paused tube's messages finish" \
        wait_for "select count(*) from e2e_done where id <= $smax" "$n" 40
    is "$(sql "select count(*) from e2e_visit v where v.id <= $smax and v.at < '$until'::timestamptz")" 0 \
       "none of them ran before the pause ended"
    is "$(sql "select count(*), count(distinct id) from e2e_visit where id <= $fmax")" "$((2 * n))|$((2 * n))" \
       "each of the $((2 * n)) messages ran exactly once"
    is "$(sql "select count(*) from pepsi.tubes where tube in ('$slow', '$fast')")" 0 \
       "T-22: both tubes are gone with their last message"
    stop_runner
    sql "delete from e2e_visit; delete from e2e_done" >/dev/null
}
round yes
round no

# tube_pause(t, 0) wakes the runner: POLL_INTERVAL 60 s, so only the
# NOTIFY can make it claim within the test's few seconds.
stage | write_conf "$conf" POLL_INTERVAL=60s
start_runner "$conf"
fmax=$(sql "select coalesce(max(workqueue_id), 0) from pepsi.workqueue")
sql "with i as (select pepsi.workqueue_inject('a', p_tube => 'held') from generate_series(1, 3))
     select pepsi.tube_pause('held', 3600) from (select count(*) from i) c" >/dev/null
sleep 1
is "$(sql "select count(*) from e2e_visit where id > $fmax")" 0 \
   "setup: the held tube's messages wait"
t0=$(date +%s%N)
sql "select pepsi.tube_pause('held', 0)" >/dev/null
wait_for "select count(*) from e2e_done where id > $fmax" 3 30
ms=$(elapsed_ms "$t0")
note "unpaused to done: $ms ms"
ok "tube_pause(held, 0): the runner takes the messages at once, not at its 60 s heartbeat" num_between "$ms" 0 10000
stop_runner
done_testing
