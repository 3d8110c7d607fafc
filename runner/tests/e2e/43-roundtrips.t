#!/usr/bin/env bash
# Round trips per message (D-69..D-73, D-129), counted by
# pg_stat_statements: 600 messages through three metadata-only stages
# (pepsi-stage-if). One at a time, a worker makes two round trips per
# message per stage (load, commit); batched at QUEUE_LIMIT 16 it makes
# about two per batch; fused, the three stages are one hop.
. "$(dirname "$0")/lib.sh"
plan 8

sql "create extension if not exists pg_stat_statements" >/dev/null
N=600
pipeline() { # QUEUE_LIMIT FUSION
    cat <<EOF
[stage-a]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = $1
PARALLELISM = 1
CONDITION = tube == "default"
THEN = b
[stage-b]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = $1
PARALLELISM = 1
FUSION = $2
CONDITION = tube == "default"
THEN = c
[stage-c]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = $1
PARALLELISM = 1
FUSION = $2
CONDITION = tube == "nothing"
THEN = c
EOF
}

# Worker statements (loads and result calls) for one run of N messages.
worker_calls() {
    sql "select coalesce(sum(calls), 0) from pg_stat_statements s
          where s.dbid = (select oid from pg_database where datname = current_database())
            and (s.query like '%from pepsi.workqueue w%' or s.query like '%pepsi.workqueue_commit%'
                 or s.query like '%pepsi.workqueue_advance%' or s.query like '%pepsi.workqueue_finish%')"
}

run() { # QUEUE_LIMIT FUSION -> prints "worker_calls claimed"
    local conf=$E2E_DIR/rt-$1-$2.conf
    pipeline "$1" "$2" | write_conf "$conf"
    sql "select pg_stat_statements_reset(); truncate pepsi.dispatch_stats" >/dev/null
    sql "insert into pepsi.workqueue (stage) select 'a' from generate_series(1, $N)"
    start_runner "$conf"
    wait_for "select count(*) from pepsi.workqueue" 0 120 >/dev/null || return 1
    stop_runner
    echo "$(worker_calls) $(sql "select claimed from pepsi.dispatch_stats")"
}

read -r one claimed_one < <(run 1 no)
note "QUEUE_LIMIT 1, no fusion: $one worker statements, $claimed_one claimed"
is "$one" $((N * 3 * 2)) "one at a time: a load and a result call per message per stage"
is "$claimed_one" $((N * 3)) "and a claim per message per stage"

read -r four claimed_four < <(run 4 no)
note "QUEUE_LIMIT 4, no fusion: $four worker statements"
ok "D-69: batched at QUEUE_LIMIT 4: fewer than one statement per message per stage ($four for $((N * 3)))" \
    test "$four" -lt $((N * 3))

read -r sixteen claimed_sixteen < <(run 16 no)
note "QUEUE_LIMIT 16, no fusion: $sixteen worker statements"
ok "D-69: at QUEUE_LIMIT 16: at most about two statements per 4 messages per stage ($sixteen)" \
    test "$sixteen" -le $((N * 3 / 2))
ok "D-69: and fewer than at QUEUE_LIMIT 4" test "$sixteen" -le "$four"

read -r fused claimed_fused < <(run 16 yes)
note "QUEUE_LIMIT 16, fused: $fused worker statements, $claimed_fused claimed"
is "$claimed_fused" "$N" "D-129: fused, each message is claimed once: one hop instead of three"
ok "D-129: and the workers make fewer statements than unfused ($fused < $sixteen)" test "$fused" -lt "$sixteen"
is "$(sql "select count(*) from pepsi.workqueue")" 0 "everything finished"
done_testing
