#!/usr/bin/env bash
# Success through three stages of pepsi-stage-pass: every message finishes,
# a stage advance needs no notification (the answer brings the next claim),
# and the statistics of the burst are flushed when the pipeline goes idle.
. "$(dirname "$0")/lib.sh"
plan 10

conf=$E2E_DIR/pepsi.conf
# A long POLL_INTERVAL and STATS_INTERVAL: neither the heartbeat nor the
# interval flush can be what moves the messages or writes the figures.
# FUSION = no: every hop goes through the dispatcher (fusion has its own
# test, 40-fusion.t).
write_conf "$conf" POLL_INTERVAL=60s STATS_INTERVAL=60s <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
NEXT = b

[stage-b]
PROGRAM = pepsi-stage-pass
FUSION = no
NEXT = c

[stage-c]
PROGRAM = pepsi-stage-pass
FUSION = no
EOF

ok "runner starts" start_runner "$conf"
ok "D-63: no worker runs before the first message" test -z "$(children_of "$RUNNER_PID")"

sql "select pepsi.workqueue_inject('a') from generate_series(1, 50)" >/dev/null
ok "D-24, D-35: 50 messages pass three stages and finish (rows gone)" \
    wait_for "select count(*) from pepsi.workqueue" 0 30

ok "D-137, D-138: stage_stats written when the pipeline goes idle (STATS_INTERVAL is 60s)" \
    wait_for "select count(*) from pepsi.stage_stats where stages_executed = 50" 3 10
is "$(sql "select string_agg(format('%s:%s/%s/%s', stage, stages_executed, succeeded, failed), ' ' order by stage)
             from pepsi.stage_stats")" \
   "a:50/50/0 b:50/50/0 c:50/50/0" "D-24: 50 passes per stage, all status 0"
is "$(sql "select sum(runs) = 150 and bool_and(run_usec > 0) from pepsi.stage_stats")" t \
   "D-26: every pass reported its run time"
is "$(sql "select claimed from pepsi.dispatch_stats")" 150 "D-38: 150 rows claimed (50 per stage)"
is "$(sql "select stages_executed from pepsi.stage_totals where stage = 'b'")" 50 \
   "pepsi.stage_totals sums the stage's counters"
stop_runner
is "$?" 0 "D-09: SIGTERM ends the runner with status 0"
ok "D-08: no worker left after shutdown" no_workers
done_testing
