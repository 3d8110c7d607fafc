#!/usr/bin/env bash
# A notification wakes the runner at once: with a POLL_INTERVAL of 60 s the
# heartbeat cannot be what picks up a message injected after start-up.
. "$(dirname "$0")/lib.sh"
plan 8

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" POLL_INTERVAL=60s STATS_INTERVAL=60s <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
EOF

ok "runner starts" start_runner "$conf"
# Let the start-up claim finish and its worker-less round pass.
sleep 0.5

t0=$(date +%s%N)
sql "select pepsi.workqueue_inject('a')" >/dev/null
ok "D-29: a message injected after start-up finishes (notification)" \
    wait_for "select count(*) from pepsi.workqueue" 0 10
ms=$(elapsed_ms "$t0")
note "inject to finish: $ms ms (worker start included)"
ok "D-29: within 2 s, long before the 60 s heartbeat" test "$ms" -lt 2000

# The worker now exists: a second message is even faster.
t0=$(date +%s%N)
sql "select pepsi.workqueue_inject('a')" >/dev/null
ok "D-29: a second message finishes too" wait_for "select count(*) from pepsi.workqueue" 0 10
ms=$(elapsed_ms "$t0")
note "inject to finish with a warm worker: $ms ms"
ok "D-29: within 1 s" test "$ms" -lt 1000

# A burst of 40 notifications (one transaction each): the claim rounds
# they trigger collapse (see the note with the counts at the end).
for _ in $(seq 1 40); do echo "select pepsi.workqueue_inject('a');"; done |
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" >/dev/null
ok "D-30, D-31: a burst of 40 separate notifications is absorbed; all finish" wait_for "select count(*) from pepsi.workqueue" 0 20
ok "D-138: the idle flush writes dispatch_stats" \
    wait_for "select notifications >= 40 from pepsi.dispatch_stats" t 10
stop_runner
is "$?" 0 "D-09: clean shutdown"
note "$(sql "select format('claims=%s claimed=%s wakeups=%s notifications=%s', claims, claimed, wakeups, notifications)
               from pepsi.dispatch_stats")"
done_testing
