#!/usr/bin/env bash
# A Python worker recycles itself (issue 16, D-68): with PEPSI_MAX_MESSAGES
# set, the process the runner starts stays a clean parent that forks a
# child per MAX_MESSAGES messages and says "ready recycles"; the runner
# then does not start a new program every MAX_MESSAGES. First the program
# alone (ids on stdin, MAX_MESSAGES 3): every id answered once, in order,
# by fresh processes of at most 3 messages each, the ids a child read but
# did not take passed on; exit 78 before ready and a child's death by a
# signal passed through; SIGTERM ends parent and child. Then under `pepsi-runner serve`: 1,000 messages
# at stage a (MAX_MESSAGES 50, PARALLELISM 2) run by at least 20 processes
# of at most 50 messages each, while the runner started 2 workers.
. "$(dirname "$0")/lib.sh"
plan 18

PROG=$E2E_STAGES/py-sdk
out=$E2E_DIR/out
# worker STAGE MAX_MESSAGES: the program as the runner starts it
worker() {
    PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=$1 PEPSI_CONNINFO=$E2E_CONNINFO PEPSI_QUEUE_LIMIT=4 \
        PEPSI_MAX_MESSAGES=$2 timeout -k 2 30 "$PROG" -v worker 2>"$out.err"
}

# ---- the program alone ----

sql "select pepsi.stage_served_publish(0, '[{\"stage\": \"a\", \"program\": \"py-sdk\", \"refs\": {\"NEXT\": \"b\"}},
                                            {\"stage\": \"b\", \"program\": \"py-sdk\"}]')" >/dev/null
ids=$(sql "select string_agg(pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'm' || g)::text, ' '
                             order by g) from generate_series(1, 10) g")
sql "update pepsi.workqueue set status = 'running', claimed_at = now()" >/dev/null
# all ten at once: each child reads more than it may take
printf '%s\n' $ids | worker a 3 >"$out"
is "$?" 0 "exit 0 at stdin's EOF"
is "$(sed -n 1p "$out")" "ready recycles" "D-68: a worker told PEPSI_MAX_MESSAGES says 'ready recycles'"
is "$(sed -n '2,$p' "$out" | cut -d' ' -f1 | tr '\n' ' ')" "0 0 0 0 0 0 0 0 0 0 " "one status per id, ten in all"
is "$(sql "select count(*) filter (where stage = 'b' and status = 'pending' and (state->>'visits_a')::int = 1)
             from pepsi.workqueue")" 10 "every id advanced to b exactly once"
is "$(sql "select count(distinct state->>'pid_a') || ' ' || max(n)
             from (select state, count(*) over (partition by state->>'pid_a') n from pepsi.workqueue) x")" "4 3" \
   "D-68: four processes ran them, none more than three (3 + 3 + 3 + 1)"
like "$(cat "$out.err")" "DEBUG:  a: \[[0-9]+\] worker process pid=[0-9]+ answered 3 messages; forking a fresh one" \
     "the parent logs each replacement at debug"
sql "delete from pepsi.workqueue" >/dev/null

# exit 78 before ready passes through the parent
nobody=e2e_py_recycle_$$
psql -XAtq -d postgres -c "create role $nobody login" >/dev/null
echo 1 | PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=a PEPSI_MAX_MESSAGES=3 \
    PEPSI_CONNINFO="host=$PGHOST port=$PGPORT user=$nobody dbname=$E2E_DB" timeout 30 "$PROG" worker >"$out" 2>"$out.err"
is "$?" 78 "a child's exit 78 before ready is the worker's"
is "$(cat "$out")" "" "and nothing on stdout"
psql -XAtq -d postgres -c "drop role $nobody" >/dev/null

# a child killed by a signal: the worker dies of the same signal (the
# runner strikes its head message, as for any worker that dies)
crash=$(sql "select pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'crash-me')")
sql "update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = $crash" >/dev/null
echo "$crash" | worker a 3 >"$out"
is "$?" 137 "a child killed by SIGKILL: the worker is killed by SIGKILL (exit status 128 + 9)"
like "$(cat "$out.err")" "worker process pid=[0-9]+ was killed by signal 9" "and says which process died of what"
sql "delete from pepsi.workqueue" >/dev/null

# SIGTERM to the parent alone while the child waits for ids: both end, 0
fifo=$E2E_DIR/in.fifo
mkfifo "$fifo"
PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=a PEPSI_MAX_MESSAGES=3 PEPSI_CONNINFO=$E2E_CONNINFO "$PROG" worker \
    <"$fifo" >"$out" 2>"$out.err" &
wpid=$!
exec 7>"$fifo"
ok "ready before the signal" wait_cmd 10 grep -qx 'ready recycles' "$out"
kill -TERM "$wpid"
wait "$wpid"
is "$?" 0 "SIGTERM to the parent: the child finishes and the worker exits 0"
exec 7>&-
ok "no process of it is left" wait_cmd 5 no_workers

# ---- under the runner ----

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1h RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = $PROG
QUEUE_LIMIT = 16
PARALLELISM = 2
MAX_MESSAGES = 50
NEXT = b

[stage-b]
PROGRAM = $PROG
EOF
# b is paused: the messages wait there with the pid that ran them at a
sql "select pepsi.workqueue_pause_stage('b')" >/dev/null
sql "select count(pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'm' || g))
       from generate_series(1, 1000) g" >/dev/null
ok "the runner starts" start_runner "$conf"
ok "all 1,000 messages pass stage a" \
   wait_for "select count(*) from pepsi.workqueue where stage = 'b' and status = 'pending'" 1000 60
is "$(sql "select count(*) filter (where (state->>'visits_a')::int <> 1) || ' ' || (max(n) <= 50)::text
             || ' ' || (count(distinct pid_a) >= 20)::text
             from (select state, state->>'pid_a' pid_a, count(*) over (partition by state->>'pid_a') n
                     from pepsi.workqueue) x")" "0 true true" \
   "D-68: each ran once at a, by at least 20 processes of at most 50 messages"
ok "the runner stops" stop_runner
is "$(grep -c 'a: started worker pid=' "$RUNNER_LOG")" 2 \
   "issue 16: the runner started two workers of a (PARALLELISM), not one per 50 messages"
done_testing
