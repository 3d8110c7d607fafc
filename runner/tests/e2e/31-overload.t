#!/usr/bin/env bash
# Database overload. (1) Status 75 requeues the message and halves the
# parallelism cap of the stage running the most workers, for
# OVERLOAD_WINDOW; a further 75 halves it again; then it ramps back up
# (D-95..D-98). (2) A real connection limit: the runner and its workers log
# in as a role limited to three connections; workers that cannot connect
# exit 75 before ready, which is back-pressure like a status 75: the
# busiest stage is halved (D-94, D-96; issue 12: it used to count as a
# failed start only), nothing is blamed, no message fails, all finish.
. "$(dirname "$0")/lib.sh"
plan 16

conf=$E2E_DIR/pepsi.conf
# The window and the busy sleep leave room for a loaded machine: the second
# 75 must come while the first window is open and while busy still runs the
# most workers (its workers would exit 500 ms after their sleeps end).
write_conf "$conf" OVERLOAD_WINDOW=8s <<EOF
[stage-busy]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 4
QUEUE_LIMIT = 1
WORKER_IDLE_TIMEOUT = 500ms
[stage-report]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
[stage-slow]
PROGRAM = pepsi-stage-exec
COMMAND = sleep 0.2
PARALLELISM = 4
QUEUE_LIMIT = 1
EOF

ok "runner starts" start_runner "$conf"
# Four slow messages keep four workers of "busy" running.
busy=$(sql "select array_agg(pepsi.workqueue_inject('busy', p_state => '{\"do\": \"sleep\", \"sleep\": \"20\"}')) from generate_series(1, 4)")
ok "four workers of the busy stage" wait_for "select count(distinct pid) from e2e_visit where stage = 'busy'" 4 15
id=$(sql "select pepsi.workqueue_inject('report', p_state => '{\"do\": \"status75-once\"}')")
ok "D-96: the busiest stage (not the reporter) is halved to 2" \
    wait_cmd 10 runner_log_has 'database overload reported by stage report; stage busy limited to 2 worker'
ok "D-95: the message is requeued and then finishes" wait_for "select count(*) from e2e_done where id = $id" 1 15
id2=$(sql "select pepsi.workqueue_inject('report', p_state => '{\"do\": \"status75-once\"}')")
ok "D-97: a further 75 halves again" wait_cmd 10 runner_log_has 'stage busy limited to 1 worker'
ok "D-95: and that message finishes too" wait_for "select count(*) from e2e_done where id = $id2" 1 15
ok "D-98: after the window the stage ramps back up" \
    wait_cmd 25 runner_log_has 'busy: overload window over; back to 4 worker'
is "$(sql "select count(*) from pepsi.workqueue where status = 'failed'")" 0 "D-95: no message failed"
stop_runner
# The busy messages (given back at stop) are not part of the second case.
sql "select pepsi.workqueue_delete('$busy', 'e2e: first case over')" >/dev/null

# (2) A role limited to three connections: the runner takes one of them,
# and each pepsi-stage-exec worker holds one (the C SDK connects once).
sql "create role e2e_limited_$$ login connection limit 3 in role pepsi_runner, pepsi_worker;
     grant select, insert on e2e_visit, e2e_done to e2e_limited_$$"
limited="host=$PGHOST port=$PGPORT user=e2e_limited_$$ dbname=$E2E_DB"
sed "s|^CONNINFO = .*|CONNINFO = $limited|" "$conf" >"$E2E_DIR/limited.conf"
sql "select pepsi.workqueue_inject('slow') from generate_series(1, 12)" >/dev/null
ok "the runner starts as the limited role (its grants suffice)" start_runner "$E2E_DIR/limited.conf"
ok "D-90, D-94: all twelve finish although workers beyond the limit cannot connect" \
    wait_for "select count(*) from pepsi.workqueue" 0 60
ok "D-94: a worker refused for want of connections reports overload at start (exit 75)" \
    runner_log_has 'slow: worker pid=[0-9]+ could not connect: database overload \(exit 75 before ready\)'
ok "issue 12, D-94, D-96: connection exhaustion at worker start halves the busiest stage" \
    runner_log_has 'database overload reported by stage slow at worker start \(no connection slot\); stage slow limited to 2 worker'
ok "D-97: and again at the next refusal" runner_log_has 'stage slow limited to 1 worker'
ok "D-94: stage_stats counts the refusals as tempfailed" \
    wait_for "select tempfailed > 0 from pepsi.stage_stats where stage = 'slow'" t 10
ok "D-90: nothing was blamed for the refused connections" bash -c "! grep -q striking '$RUNNER_LOG'"
stop_runner
is "$?" 0 "clean shutdown"
sql "drop owned by e2e_limited_$$; drop role e2e_limited_$$" >/dev/null 2>&1
done_testing
