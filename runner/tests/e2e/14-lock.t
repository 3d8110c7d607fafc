#!/usr/bin/env bash
# Exactly one dispatcher: a second `serve` on the same database waits
# LOCK_WAIT for the advisory lock, then exits 78 (issue 14: one runner per
# owner slot, a second is a configuration error) without touching the first
# one's running rows (no start-up sweep). Once the first has stopped, the
# lock is free again.
. "$(dirname "$0")/lib.sh"
plan 13

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" LOCK_WAIT=1s <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 2
QUEUE_LIMIT = 1
EOF

ok "first runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"sleep\", \"sleep\": \"5\"}')
       from generate_series(1, 2)" >/dev/null
ok "its workers are running both messages" wait_for "select count(*) from e2e_visit" 2 10
running_q="select string_agg(workqueue_id || '@' || claimed_at, ',' order by workqueue_id)
             from pepsi.workqueue where status = 'running'"
before=$(sql "$running_q")
like "$before" '^[0-9]+@.*,[0-9]+@' "both rows are running"

second=$E2E_DIR/second.log
t0=$(date +%s%N)
run_runner "$second" -c "$conf" serve
rc=$?
ms=$(elapsed_ms "$t0")
is "$rc" 78 "D-15, issue 14: a second runner for the same owner slot exits 78"
like "$(cat "$second")" 'another dispatcher .*holds owner slot 0' "D-14, D-15: it says another dispatcher holds the lock"
like "$(cat "$second")" 'refusing to run a second one' "D-15: and that it refuses to run"
note "the second runner gave up after $ms ms (LOCK_WAIT 1s)"
ok "D-15: it waited LOCK_WAIT (1 s) for the lock first" num_between "$ms" 900 20000
is "$(sql "$running_q")" "$before" "D-17: the first runner's running rows were not reset"
is "$(grep -c . "$E2E_DIR/starts.a")" 2 "D-17, D-19: the second runner started no worker"
ok "D-17: the second runner did not serve" test -z "$(grep -E 'serving|reset [0-9]+ message' "$second")"

stop_runner
is "$?" 0 "D-09: the first runner stops cleanly"
ok "D-16: with the first runner gone, a new one takes the lock at once" start_runner "$conf"
is "$(grep -c 'another dispatcher' "$RUNNER_LOG")" 0 "D-16: without waiting for it"
stop_runner >/dev/null
done_testing
