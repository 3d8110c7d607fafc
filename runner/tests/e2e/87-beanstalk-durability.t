#!/usr/bin/env bash
# The beanstalkd frontend's durability (issue 17): a producer puts 3,000
# jobs while PostgreSQL restarts and the frontend is killed with SIGKILL
# and started again (as systemd would): every put the frontend
# acknowledged (INSERTED) is in the queue afterwards. And a job reserved
# by a client that vanished with a killed frontend (no disconnect ever
# reached the database) is ready again after its TTR, not before, and not
# lost: a new client reserves it.
. "$(dirname "$0")/lib.sh"

producer=$E2E_ROOT/runner/tests/e2e/clients/bs-producer.py
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:$port
EOF

fe_n=0
# start_frontend: starts `pepsi-runner beanstalk`, waits until it listens.
start_frontend() {
    fe_n=$((fe_n + 1))
    fe_log=$E2E_DIR/beanstalk.$fe_n.log
    # shellcheck disable=SC2046
    PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v beanstalk >"$fe_log" 2>&1 </dev/null &
    fe_pid=$!
    wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$fe_log"
}
acked_count() { wc -l <"$E2E_DIR/acked" 2>/dev/null || echo 0; }
acked_over() { [ "$(acked_count)" -gt "$1" ]; }
running_in() { [ "$(sql "select count(*) from pepsi.workqueue where tube = '$1' and status = 'running'")" = 1 ]; }

ok "the frontend starts" start_frontend
: >"$E2E_DIR/acked"
python3 "$producer" "$port" durable 3000 "$E2E_DIR/acked" 2>"$E2E_DIR/producer.err" &
ppid_=$!
ok "the producer is putting" wait_cmd 60 acked_over 300

ok "PostgreSQL restarts mid-run (pg_ctl restart -m fast)" "$E2E_ROOT/scripts/pg" restart "$PGHOST"
# The frontend either survives the restart or exits non-zero for systemd
# to restart it (its README section says which); either way it serves again.
sleep 2
if ! _alive "$fe_pid"; then
    wait "$fe_pid"
    rc=$?
    note "the frontend exited $rc when PostgreSQL restarted; starting it again, as systemd would"
    ok "it exited non-zero (Restart=on-failure restarts it)" test "$rc" -ne 0
    start_frontend
else
    ok "it survived the restart" true
fi
before=$(acked_count)
ok "puts are acknowledged again after the restart" wait_cmd 60 acked_over $((before + 100))

kill -KILL "$fe_pid"
wait "$fe_pid" 2>/dev/null
ok "after kill -9 of the frontend, a new one starts" start_frontend
wait "$ppid_"
is $? 0 "the producer got all 3,000 puts acknowledged" || diag "$(tail -n 5 "$E2E_DIR/producer.err")"

ids=$(paste -sd, "$E2E_DIR/acked")
is "$(sql "select count(distinct workqueue_id) from pepsi.workqueue
            where stage = 'beanstalk' and tube = 'durable' and workqueue_id in ($ids)")" \
   "$(sort -u "$E2E_DIR/acked" | wc -l)" "no acknowledged put was lost"
is "$(sort -u "$E2E_DIR/acked" | wc -l)" 3000 "3,000 distinct ids acknowledged"

# A reserved job whose client vanished with a killed frontend.
reserved=$(python3 - "$port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
def cmd(b):
    s.sendall(b)
    time.sleep(0.2)
    return s.recv(4096)
cmd(b"use ttr\r\n")
cmd(b"put 0 0 3 4\r\nlate\r\n")
cmd(b"watch ttr\r\n")
r = cmd(b"reserve-with-timeout 5\r\n")
print(r.split()[1].decode() if r.startswith(b"RESERVED") else "none:" + r.decode())
sys.stdout.flush()
s.settimeout(60)
try:  # holds the connection until the frontend dies
    while s.recv(4096):
        pass
except OSError:
    pass
PY
) &
rpy=$!
ok "a client reserved a job with TTR 3" wait_cmd 20 running_in ttr
t0=$(date +%s%N)
kill -KILL "$fe_pid"
wait "$fe_pid" 2>/dev/null
ok "the frontend is killed and started again" start_frontend
got=$(python3 - "$port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"watch ttr\r\nreserve-with-timeout 15\r\n")
buf = b""
while buf.count(b"\r\n") < 3 and not buf.startswith(b"WATCHING 2\r\nTIMED_OUT"):
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
print(buf.split(b"\r\n")[1].decode())
PY
)
ms=$(elapsed_ms "$t0")
like "$got" '^RESERVED [0-9]+ 4$' "the vanished client's job is reserved again by a new client"
ok "not before its TTR (3 s after the reserve; ${ms} ms after the kill)" test "$ms" -ge 2000
is "$(sql "select (state->'beanstalk'->>'timeouts')::int from pepsi.workqueue where tube = 'ttr'")" 1 \
   "stats: one timeout counted"
wait "$rpy" 2>/dev/null

kill -TERM "$fe_pid"
wait "$fe_pid"
rc=$?
[ "$rc" = 0 ] || note "exit status $rc; the log ends:" "$(tail -n 5 "$fe_log")"
is "$rc" 0 "SIGTERM: the frontend exits 0"
done_testing
