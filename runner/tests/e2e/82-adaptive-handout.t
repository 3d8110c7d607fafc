#!/usr/bin/env bash
# The adaptive hand-out (issue 19, past D-66 by design): with QUEUE_LIMIT
# unset, a stage with a backlog hands each worker more ids, up to about
# 20 ms of work at the stage's measured pace: batches of up to 128, and up
# to four of them held (claim ahead: 98-claim-ahead.t), so a worker commits
# larger batches and the dispatcher claims less often. With QUEUE_LIMIT
# set it hands exactly that (D-66), a slow stage stays at the default 4,
# and every worker is told the most it takes into one batch
# (PEPSI_QUEUE_LIMIT). Counted by pg_stat_statements and the runner's
# debug log.
. "$(dirname "$0")/lib.sh"
plan 10

sql "create extension if not exists pg_stat_statements" >/dev/null
N=3000
not() { ! "$@"; }

# Worker result calls for one run: one per batch a worker commits, or per
# message it answers alone (advance/finish).
commit_calls() {
    sql "select coalesce(sum(calls), 0) from pg_stat_statements s
          where s.dbid = (select oid from pg_database where datname = current_database())
            and (s.query like '%pepsi.workqueue_commit%' or s.query like '%pepsi.workqueue_advance%'
                 or s.query like '%pepsi.workqueue_finish%')"
}

run_pass() { # QUEUE_LIMIT-line NAME -> sets CALLS, CLAIMS and RUNNER_LOG
    local conf=$E2E_DIR/ah-$2.conf
    write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
$1
EOF
    sql "select pg_stat_statements_reset(); truncate pepsi.dispatch_stats" >/dev/null
    sql "insert into pepsi.workqueue (stage) select 'a' from generate_series(1, $N)"
    start_runner "$conf" -L debug
    wait_for "select count(*) from pepsi.workqueue" 0 120 >/dev/null
    stop_runner
    CALLS=$(commit_calls)
    CLAIMS=$(sql "select claims from pepsi.dispatch_stats")
}

run_pass "QUEUE_LIMIT = 4" fixed
fixed_calls=$CALLS fixed_claims=$CLAIMS fixed_log=$RUNNER_LOG
note "QUEUE_LIMIT = 4 set: $fixed_calls commits, $fixed_claims claims for $N messages"
ok "QUEUE_LIMIT set: batches of at most 4 (D-66), at least N/4 commits" num_between "$fixed_calls" $((N / 4)) $N
ok "QUEUE_LIMIT set: the hand-out never adapts" not grep -q 'handing [0-9]* id(s) per worker' "$fixed_log"

run_pass "" adaptive
adapt_calls=$CALLS adapt_claims=$CLAIMS adapt_log=$RUNNER_LOG
note "QUEUE_LIMIT unset: $adapt_calls commits, $adapt_claims claims for $N messages"
adapt_max=$(max_handed "$adapt_log")
ok "unset, with a backlog of fast messages: more than a batch of 128 per worker (${adapt_max:-none})" \
    num_between "${adapt_max:-0}" 129 512 ||
    diag "$(grep handing "$adapt_log" | head)"
ok "unset: fewer than a quarter of the commits ($adapt_calls vs $fixed_calls)" \
    num_between "$adapt_calls" 1 $((fixed_calls / 4))
ok "unset: fewer than half the claims ($adapt_claims vs $fixed_claims)" \
    num_between "$adapt_claims" 1 $((fixed_claims / 2))
is "$(sql "select count(*) from pepsi.workqueue")" 0 "every message finished"

# What a worker is told: PEPSI_QUEUE_LIMIT is the most it takes into a batch.
env_of_worker() { # QUEUE_LIMIT-line -> the worker's PEPSI_QUEUE_LIMIT
    local conf=$E2E_DIR/ah-env.conf
    write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-exec
PARALLELISM = 1
COMMAND = sleep 2
$1
EOF
    sql "insert into pepsi.workqueue (stage) values ('a')" >/dev/null
    start_runner "$conf"
    local pid="" i
    for i in $(seq 1 100); do
        pid=$(worker_cmdlines | awk '/pepsi-stage-exec/ {print $1; exit}')
        [ -n "$pid" ] && break
        sleep 0.1
    done
    tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^PEPSI_QUEUE_LIMIT=//p'
    wait_for "select count(*) from pepsi.workqueue" 0 30 >/dev/null
    stop_runner
}
is "$(env_of_worker "")" 128 "unset: a worker is told its batches hold up to 128 (PEPSI_QUEUE_LIMIT)"
is "$(env_of_worker "QUEUE_LIMIT = 7")" 7 "set: a worker is told QUEUE_LIMIT"

# A slow stage (30 ms a message) with a backlog: 20 ms of work is less
# than one message, so it stays at QUEUE_LIMIT's default.
conf=$E2E_DIR/ah-slow.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-exec
PARALLELISM = 1
COMMAND = sleep 0.03
EOF
sql "insert into pepsi.workqueue (stage) select 'a' from generate_series(1, 60)"
start_runner "$conf" -L debug
wait_for "select count(*) from pepsi.workqueue" 0 120 >/dev/null
stop_runner
ok "a slow stage's backlog: still 4 ids per worker" not grep -q 'handing [0-9]* id(s) per worker' "$RUNNER_LOG" ||
    diag "$(grep handing "$RUNNER_LOG" | head)"
is "$(sql "select count(*) from pepsi.workqueue")" 0 "the slow stage finished its 60"
