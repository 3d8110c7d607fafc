#!/usr/bin/env bash
# Workers in Python (issue 16): sdk/python/pepsi_worker.py speaks the worker
# protocol with pepsi.worker_load and one pepsi.workqueue_commit per batch.
# First the program alone, ids on its stdin: "ready", one status line per
# id in input order (a failed message answers 1 in its own place), an id
# not running at its stage answered 0 and left alone, exit 0 at EOF and at
# SIGTERM, exit 78 before "ready" for a login without pepsi_worker's rights.
# Then a 3-stage pipeline of Python stages (stages/py-sdk) under
# `pepsi-runner serve`: 5,000 messages each finished exactly once after
# three visits, one failed at stage a, one paused at stage b and finished
# after; the runner's log names the failed id and only it; the workers'
# environment carries QUEUE_LIMIT, MAX_HOPS, MAX_LIFETIME and
# WORKER_SYNCHRONOUS_COMMIT.
. "$(dirname "$0")/lib.sh"
plan 25

PROG=$E2E_STAGES/py-sdk
out=$E2E_DIR/out
# worker STAGE: the program as the runner starts it, stdin from the caller
worker() {
    PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=$1 PEPSI_CONNINFO=$E2E_CONNINFO PEPSI_QUEUE_LIMIT=16 \
        timeout -k 2 30 "$PROG" worker 2>"$out.err"
}

# ---- the program alone ----

ids=$(sql "select string_agg(pepsi.workqueue_inject('a', p_body => 'payload', p_subject => s)::text, ' ' order by g)
             from unnest('{one,fail-me,three,four}'::text[]) with ordinality u(s, g)")
read -r m1 m2 m3 m4 <<<"$ids"
sql "update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id in ($m1, $m2, $m3)" >/dev/null
# NEXT comes from the stage graph a dispatcher published (pepsi.worker_load)
sql "select pepsi.stage_served_publish(0, '[{\"stage\": \"a\", \"program\": \"py-sdk\", \"refs\": {\"NEXT\": \"b\"}},
                                            {\"stage\": \"b\", \"program\": \"py-sdk\"}]')" >/dev/null
# m4 stays pending: not running at a, so not this worker's
printf '%s\n' "$m3" "$m2" "$m4" "$m1" | worker a >"$out"
is "$?" 0 "exit 0 at stdin's EOF"
is "$(sed -n 1p "$out")" "ready" "issue 16: 'ready' first"
is "$(sed -n '2,$p' "$out" | cut -d' ' -f1 | tr '\n' ' ')" "0 1 0 0 " \
   "issue 16: one status per id in input order: m3 0, m2 (fail-me) 1, m4 (not running here) 0, m1 0"
like "$(sed -n 2p "$out")" '^0 \[\["a",[0-9]+\]\]$' "a status line carries the report [[stage, microseconds]]"
is "$(sql "select string_agg(stage || '/' || status, ' ' order by workqueue_id) from pepsi.workqueue
            where workqueue_id in ($m1, $m2, $m3, $m4)")" "b/pending a/failed b/pending a/pending" \
   "advanced to NEXT of the graph (b), failed in place, the pending one untouched"
is "$(sql "select last_error || '|' || failure_class from pepsi.failed where workqueue_id = $m2")" \
   "asked to fail|permanent" "the failure's reason and class"
like "$(cat "$out.err")" "WARNING:  a: \[[0-9]+\] message $m4 is not running at this stage; skipping it" \
     "the skipped id is logged on stderr in the runner's format"

# SIGTERM while waiting for ids: exit 0 at once
fifo=$E2E_DIR/in.fifo
mkfifo "$fifo"
PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=a PEPSI_CONNINFO=$E2E_CONNINFO "$PROG" worker <"$fifo" >"$out" 2>"$out.err" &
wpid=$!
exec 7>"$fifo"
ok "ready before the signal" wait_cmd 10 grep -qx ready "$out"
kill -TERM "$wpid"
wait "$wpid"
is "$?" 0 "issue 16: exit 0 on SIGTERM while waiting for ids"
exec 7>&-

# a login without pepsi_worker's rights: 78 before ready
nobody=e2e_py_nobody_$$
psql -XAtq -d postgres -c "create role $nobody login" >/dev/null
echo "$m1" | PEPSI_E2E_TAG=$E2E_TAG PEPSI_STAGE=a PEPSI_CONNINFO="host=$PGHOST port=$PGPORT user=$nobody dbname=$E2E_DB" \
    timeout 30 "$PROG" worker >"$out" 2>"$out.err"
is "$?" 78 "issue 16: exit 78 before ready for a login without pepsi_worker's rights"
is "$(cat "$out")" "" "nothing on stdout: no ready"
psql -XAtq -d postgres -c "drop role $nobody" >/dev/null
PEPSI_STAGE=a "$PROG" >"$out" 2>&1 </dev/null
is "$?" 64 "without the 'worker' argument: usage, exit 64"
sql "delete from pepsi.workqueue" >/dev/null

# ---- a pipeline of Python stages ----

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1h RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = $PROG
QUEUE_LIMIT = 64
PARALLELISM = 2
NEXT = b

[stage-b]
PROGRAM = $PROG
QUEUE_LIMIT = 64
PARALLELISM = 2
NEXT = c

[stage-c]
PROGRAM = $PROG
QUEUE_LIMIT = 64
PARALLELISM = 2
EOF
pause_id=$(sql "select pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'pause-me')")
fail_id=$(sql "select pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'fail-me')")
sql "select count(pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'm' || g))
       from generate_series(1, 2500) g" >/dev/null
t0=$(date +%s%N)
ok "the runner starts" start_runner "$conf"
ok "issue 16: the pause-me message is paused at b" \
   wait_for "select stage || '/' || status || '/' || (state->>'paused') from pepsi.workqueue where workqueue_id = $pause_id" \
   "b/paused/true" 20
# what the runner tells a worker instead of the file (issue 16)
worker_env_a() {
    local p env
    for p in $(worker_pids); do
        # Read once: a worker may exit (recycled) between two reads.
        env=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ") || continue
        if grep -qx 'PEPSI_STAGE=a' <<<"$env"; then
            grep -E '^PEPSI_(QUEUE_LIMIT|MAX_HOPS|MAX_LIFETIME_MS|WORKER_SYNCHRONOUS_COMMIT)=' <<<"$env" |
                sort | tr '\n' ' '
            return 0
        fi
    done
    return 1
}
env_a=
for _ in $(seq 1 100); do env_a=$(worker_env_a) && break; sleep 0.1; done
is "$env_a" "PEPSI_MAX_HOPS=1000 PEPSI_MAX_LIFETIME_MS=432000000 PEPSI_QUEUE_LIMIT=64 PEPSI_WORKER_SYNCHRONOUS_COMMIT=no " \
   "issue 16: a worker's environment has QUEUE_LIMIT, MAX_HOPS, MAX_LIFETIME and WORKER_SYNCHRONOUS_COMMIT"
sql "select count(pepsi.workqueue_inject('a', p_body => 'payload', p_subject => 'n' || g))
       from generate_series(1, 2500) g" >/dev/null
ok "issue 16: every message but the failed one leaves the queue" \
   wait_for "select count(*) from pepsi.workqueue" 1 50
ms=$(elapsed_ms "$t0")
note "5,002 messages through 3 Python stages in $ms ms"
is "$(sql "select count(*) || ' ' || count(distinct workqueue_id) || ' ' || min(hops) || ' ' || max(hops)
             from pepsi.workqueue_history where outcome = 'finished' and workqueue_id >= $pause_id")" \
   "5001 5001 2 2" \
   "issue 16: 5,001 finished, each exactly once, after two hops (a -> b -> c)"
is "$(sql "select count(*) from pepsi.workqueue_history where workqueue_id = $pause_id and outcome = 'finished'
             and stage = 'c'")" 1 "the paused message finished at c after its pause"
is "$(sql "select f.stage || '/' || f.failed_stage || '/' || f.last_error || '/' || (w.state->>'visits_a')
             from pepsi.failed f join pepsi.workqueue w using (workqueue_id) where workqueue_id = $fail_id")" \
   "a/a/asked to fail/1" \
   "issue 16: the fail-me message failed at a with the handler's reason"
ok "stage statistics are written" wait_for "select count(*) from pepsi.stage_totals where stage in ('a','b','c')" 3 20
ok "the runner stops" stop_runner
like "$(runner_log)" "a: message $fail_id failed with status 1" \
     "issue 16: the runner counts the failed id's status, in its place"
is "$(grep -c 'failed with status' "$RUNNER_LOG")" 1 "and no other message's"
is "$(grep -Ec 'out of step|striking|exited with status [1-9]|killed by signal' "$RUNNER_LOG")" 0 \
   "no protocol break, strike or abnormal worker exit"
ok "no worker is left" no_workers
done_testing
