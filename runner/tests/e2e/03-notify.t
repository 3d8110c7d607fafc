#!/usr/bin/env bash
# A notification wakes the runner at once: with a POLL_INTERVAL of 10 min
# the heartbeat cannot be what picks up a message injected after start-up.
# A burst of notifications collapses into one claim (D-31): counted by the
# claim ids the dispatcher numbers its claims with (pepsi.workqueue.claim_id,
# one more per claim statement sent), not by the queue draining.
. "$(dirname "$0")/lib.sh"
plan 14

conf=$E2E_DIR/pepsi.conf
# Nothing but the notifications may wake the runner during the burst: no
# heartbeat, no statistics timer, no idle worker stopped.
write_conf "$conf" POLL_INTERVAL=10min STATS_INTERVAL=10min <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
WORKER_IDLE_TIMEOUT = 10min

[stage-b]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
QUEUE_LIMIT = 64
WORKER_IDLE_TIMEOUT = 10min
EOF

ok "runner starts" start_runner "$conf"

# How long after its inject a message was claimed, on the database's
# clock (arrived_at is the inject's now(), claimed_at the claim's): the
# runner's wake-up alone, not the worker's start nor this test's polling.
claim_ms() {
    sql "select (extract(epoch from claimed_at - arrived_at) * 1000)::int from pepsi.workqueue where workqueue_id = $1"
}

sql "select pepsi.workqueue_inject('a')" >/dev/null
ok "D-29: a message injected after start-up finishes (notification, the heartbeat is 10 min away)" \
    wait_for "select count(*) from pepsi.workqueue" 0 60
sql "select pepsi.workqueue_inject('a')" >/dev/null
ok "D-29: a second message finishes too" wait_for "select count(*) from pepsi.workqueue" 0 60

# D-31. Stage b's worker holds its first message (action wait) until
# $E2E_DIR/go.b exists, so the messages behind it stay running, each with
# the id of the claim that took it, and no answer wakes the runner.
wait_b='{"do": "wait"}'
first=$(sql "select pepsi.workqueue_inject('b', p_state => '$wait_b')")
ok "stage b's worker holds its first message" \
    wait_for "select count(*) from e2e_visit where id = $first" 1 20
ms=$(claim_ms "$first")
note "stage b's first message claimed $ms ms after its inject"
ok "D-29: it was claimed within 5 s of its inject, not at the 10 min heartbeat" num_between "$ms" 0 4999

# The burst: 40 injects, one transaction (one NOTIFY) each, while the
# runner cannot read (SIGSTOP), as when it is busy. Their 40 notifications
# (20 bytes each on the wire) wait in the socket of its dispatcher
# connection (the one holding the owner-slot lock: its server end is that
# backend's socket, its client end the runner's socket with the peer
# inode) until it runs again.
backend=$(sql "select pid from pg_locks where locktype = 'advisory' and granted and classid = 1885696115
                  and objsubid = 2 and objid = 0
                  and database = (select oid from pg_database where datname = current_database())")
unread_bytes() {
    ss -xpn 2>/dev/null | awk -v b="pid=$backend," -v r="pid=$RUNNER_PID," '
        index($0, b) { peer = $8 }
        index($0, r) { queued[$6] = $3 }
        END { print (peer != "" && peer in queued) ? queued[peer] : -1 }'
}
bytes_waiting() { [ "$(unread_bytes)" -ge "$1" ]; }
kill -STOP "$RUNNER_PID"
for _ in $(seq 1 40); do echo "select pepsi.workqueue_inject('b', p_state => '$wait_b');"; done |
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" >/dev/null
ok "the 40 notifications wait in the stopped runner's socket" wait_cmd 20 bytes_waiting 800
note "unread on the dispatcher's connection: $(unread_bytes) bytes (backend pid $backend)"
kill -CONT "$RUNNER_PID"
burst="stage = 'b' and workqueue_id > $first"
ok "D-30: the burst's 40 messages are claimed" \
    wait_for "select count(*) from pepsi.workqueue where $burst and status = 'running'" 40 20
# One more message after the burst: its claim is the next claim sent.
last=$(sql "select pepsi.workqueue_inject('b', p_state => '$wait_b')")
ok "a message injected after the burst is claimed" \
    wait_for "select status from pepsi.workqueue where workqueue_id = $last" running 20
ms=$(claim_ms "$last")
note "the later message claimed $ms ms after its inject"
ok "D-29: it was claimed within 5 s of its inject too" num_between "$ms" 0 4999
burst_claims=$(sql "select count(distinct claim_id) from pepsi.workqueue where $burst and workqueue_id < $last")
is "$burst_claims" 1 "D-31: the 40 notifications brought one claim, which took all 40 messages"
is "$(sql "select (select claim_id from pepsi.workqueue where workqueue_id = $last)
                  - (select max(claim_id) from pepsi.workqueue where $burst and workqueue_id < $last)")" 1 \
   "D-31: and no other claim: the next one sent was the later message's"
note "claims: first message $(sql "select claim_id & 1099511627775 from pepsi.workqueue where workqueue_id = $first"),"\
" burst $(sql "select string_agg(distinct (claim_id & 1099511627775)::text, ',') from pepsi.workqueue where $burst and workqueue_id < $last"),"\
" later message $(sql "select claim_id & 1099511627775 from pepsi.workqueue where workqueue_id = $last")"

touch "$E2E_DIR/go.b"
ok "once released, all 42 messages of stage b finish" wait_for "select count(*) from pepsi.workqueue" 0 120
ok "D-138: the idle flush writes dispatch_stats" \
    wait_for "select notifications >= 44 from pepsi.dispatch_stats" t 20
stop_runner
is "$?" 0 "D-09: clean shutdown"
note "$(sql "select format('claims=%s claimed=%s wakeups=%s notifications=%s', claims, claimed, wakeups, notifications)
               from pepsi.dispatch_stats")"
done_testing
