#!/usr/bin/env bash
# Elastic pools: no worker runs before a stage sees traffic; a burst grows
# the pool (up to PARALLELISM); after WORKER_IDLE_TIMEOUT of quiet every
# worker process is gone while the runner keeps serving, and the next
# message starts a worker again.
. "$(dirname "$0")/lib.sh"
plan 13

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" POLL_INTERVAL=200ms <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 4
QUEUE_LIMIT = 2
WORKER_IDLE_TIMEOUT = 1s
EOF

ok "runner starts" start_runner "$conf"
# Several heartbeats (200 ms) pass without traffic.
sleep 1
is "$(children_of "$RUNNER_PID")" "" "D-63: no worker runs before the stage sees traffic"
ok "D-63: no process of the stage was started" test ! -e "$E2E_DIR/starts.a"

sql "select pepsi.workqueue_inject('a', p_state => '{\"do\": \"sleep\", \"sleep\": \"0.3\"}')
       from generate_series(1, 16)" >/dev/null
ok "D-62: the burst runs on several workers at once" \
    wait_cmd 10 eval '[ "$(children_of "$RUNNER_PID" | wc -l)" -ge 2 ]'
max_workers=0
until [ "$(sql "select count(*) from pepsi.workqueue")" = 0 ]; do
    n=$(children_of "$RUNNER_PID" | wc -l)
    [ "$n" -gt "$max_workers" ] && max_workers=$n
    sleep 0.1
done
note "most workers seen at once: $max_workers"
ok "D-62: never more workers than PARALLELISM (4)" num_between "$max_workers" 2 4
is "$(sql "select count(*) from e2e_done")" 16 "the burst finished"

t0=$(date +%s%N)
ok "D-65: after WORKER_IDLE_TIMEOUT (1 s) no worker process is left" \
    wait_cmd 10 eval '[ -z "$(children_of "$RUNNER_PID")" ]'
ms=$(elapsed_ms "$t0")
note "workers gone ${ms} ms after the last message"
# The lower bound on the machine's clock, not the test's polling (which a
# loaded machine delays): each worker exited at least WORKER_IDLE_TIMEOUT
# after the last message it finished (misbehave logs its exit time).
idle_ms() {
    local pid at
    while read -r pid at; do
        sql "select $at - (extract(epoch from max(d.at)) * 1000)::bigint from e2e_done d where d.pid = $pid having count(*) > 0"
    done <"$E2E_DIR/exits.a" | sort -n | head -n 1
}
shortest=$(idle_ms)
note "the shortest idle time before a worker's exit: ${shortest} ms"
ok "D-65: but not before the idle timeout (${shortest} ms >= 900 ms)" num_between "${shortest:-0}" 900 10000
ok "D-65: the processes themselves are gone, helpers included" wait_cmd 5 no_workers
ok "D-65: the runner still runs" kill -0 "$RUNNER_PID"
like "$(runner_log)" 'stopping idle worker' "D-65: the runner logs the idle stops"

sql "select pepsi.workqueue_inject('a')" >/dev/null
ok "D-62: the next message starts a worker again and finishes" \
    wait_for "select count(*) from pepsi.workqueue" 0 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
