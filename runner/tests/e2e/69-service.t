#!/usr/bin/env bash
# Issue 15: what the runner owes systemd beyond READY=1, checked with a
# notify socket of our own (systemd is not PID 1 here).
#  - Watchdog: with $WATCHDOG_USEC set, WATCHDOG=1 comes at half the
#    period from the event loop; a process that stops sends none; without
#    $WATCHDOG_USEC it sends none at all.
#  - Restart backoff on systemd 252 (no RestartSteps=): with
#    $RUNTIME_DIRECTORY, a start-up that fails (database down, exit 1)
#    exits at once the first time (RestartSec=2s makes 2 s), waits 2 s
#    the second time (4 s), and counts in start-failures; a start that
#    serves forgets the count; a refusal (78) neither waits nor counts.
. "$(dirname "$0")/lib.sh"
plan 18

# ---- a notify socket ----

sock=$E2E_DIR/notify.sock
notes=$E2E_DIR/notify.log
: >"$notes"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        for line in s.recv(65536).decode().split("\n"):
            out.write(line + "\n")
' "$sock" "$notes" &
for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
pings() { grep -c '^WATCHDOG=1$' "$notes"; }
pinged_since() { [ "$(pings)" -gt "$1" ]; }

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
EOF

# ---- watchdog ----

export NOTIFY_SOCKET=$sock WATCHDOG_USEC=400000
ok "runner starts with a watchdog of 400 ms" start_runner "$conf"
ok "READY=1 reaches the notify socket" wait_cmd 10 grep -qx 'READY=1' "$notes"
like "$(runner_log)" 'watchdog: WATCHDOG=1 every 200 ms' "the runner pings at half the period"
n0=$(pings)
sleep 2
n1=$(pings)
ok "WATCHDOG=1 about every 200 ms: $((n1 - n0)) in 2 s" num_between "$((n1 - n0))" 7 13
# A runner that does not run sends nothing (systemd would kill it).
kill -STOP "$RUNNER_PID"
n2=$(pings)
sleep 1
n3=$(pings)
kill -CONT "$RUNNER_PID"
is "$((n3 - n2))" 0 "a stopped runner sends no WATCHDOG=1"
ok "it pings again once it runs" wait_cmd 5 pinged_since "$n3"
stop_runner
is "$?" 0 "runner stops"

unset WATCHDOG_USEC
: >"$notes"
ok "runner starts without a watchdog" start_runner "$conf"
ok "READY=1 again" wait_cmd 10 grep -qx 'READY=1' "$notes"
sleep 1
is "$(pings)" 0 "without WATCHDOG_USEC no WATCHDOG=1 is sent"
stop_runner >/dev/null
unset NOTIFY_SOCKET

# ---- restart backoff ----

export RUNTIME_DIRECTORY=$E2E_DIR/rt
mkdir -p "$RUNTIME_DIRECTORY"
failures() { cat "$RUNTIME_DIRECTORY/start-failures" 2>/dev/null || echo none; }
down=$E2E_DIR/down.conf
write_conf "$down" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
EOF
# A port nothing listens on: the database is down.
sed -i 's/^CONNINFO = .*/CONNINFO = host=127.0.0.1 port=1 dbname=x connect_timeout=2/' "$down"

t0=$(date +%s%N)
run_runner "$E2E_DIR/down.1.log" -c "$down" serve
rc=$?
ms=$(elapsed_ms "$t0")
is "$rc $(failures)" "1 1" "database down: exit 1, one failure counted"
ok "the first failure exits at once (${ms} ms; RestartSec makes the 2 s)" num_between "$ms" 0 1500
t0=$(date +%s%N)
run_runner "$E2E_DIR/down.2.log" -c "$down" serve
rc=$?
ms=$(elapsed_ms "$t0")
is "$rc $(failures)" "1 2" "again: exit 1, two failures in a row"
ok "the second waits 2 s before exiting (${ms} ms): the next start comes 4 s after" num_between "$ms" 2000 3500
like "$(cat "$E2E_DIR/down.2.log")" 'start-up failed \(exit 1, failure 2 in a row\); waiting 2 s before exiting' \
     "and says so"

ok "a start that serves" start_runner "$conf"
is "$(failures)" none "forgets the failures"
stop_runner >/dev/null

# A password in a file others may read: refused with 78 (issue 11). (A
# malformed file is exit 1, D-10: retried with the backoff.)
bad=$E2E_DIR/bad.conf
write_conf "$bad" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
EOF
sed -i 's/^CONNINFO = .*/& password=secret/' "$bad"
chmod 644 "$bad"
run_runner "$E2E_DIR/bad.log" -c "$bad" serve
rc=$?
is "$rc $(failures)" "78 none" "a refusal (78) is not a failure a retry fixes: not counted, no wait"
unset RUNTIME_DIRECTORY
done_testing
