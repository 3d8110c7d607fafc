#!/usr/bin/env bash
# A beanstalkd client may not grow its watch list without bound (issue 17):
# each watched tube is a reference row in SQL and an element of every
# reserve's array. The 1,024th tube is watched; the next new one is
# answered OUT_OF_MEMORY (beanstalkd's reply to a watch it cannot hold),
# nothing more is written, the session still works, and the log says so.
. "$(dirname "$0")/lib.sh"

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:0
EOF
log=$E2E_DIR/beanstalk.log
# shellcheck disable=SC2046
PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v beanstalk >"$log" 2>&1 </dev/null &
pid=$!
ok "the frontend starts" wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$log"
port=$(grep -Eo 'listening on .* port [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)

out=$(python3 - "$port" <<'PY'
import socket, subprocess, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
f = s.makefile("rb")
def cmd(line):
    s.sendall(line.encode() + b"\r\n")
    return f.readline().decode().rstrip("\r\n")
last = None
for i in range(1, 1024):           # default + 1,023 more = 1,024
    last = cmd("watch w%d" % i)
print(last)
print(cmd("watch w1024"))          # one too many
print(subprocess.run(["psql", "-XAtqc", "select count(*) from pepsi.beanstalk_ref where kind = 'watch'"],
                     capture_output=True, text=True).stdout.strip())
print(cmd("watch w1"))             # already watched: fine
print(cmd("ignore w1"))            # room again
print(cmd("watch w1024"))          # now it fits
print(cmd("put 0 0 10 1\r\nx").split()[0])
s.sendall(b"list-tubes-watched\r\n")
hdr = f.readline().decode().split()
print(hdr[0], sum(1 for l in f.read(int(hdr[1]) + 2).decode().splitlines() if l.startswith("- ")))
PY
)
note "$out"
lines=()
while IFS= read -r l; do lines+=("$l"); done <<<"$out"
is "${lines[0]}" "WATCHING 1024" "1,024 tubes watched"
is "${lines[1]}" "OUT_OF_MEMORY" "the 1,025th is refused: OUT_OF_MEMORY"
is "${lines[2]}" 1024 "SQL holds no watch reference beyond the limit"
is "${lines[3]}" "WATCHING 1024" "watching one already watched is still answered"
is "${lines[4]}" "WATCHING 1023" "ignore makes room"
is "${lines[5]}" "WATCHING 1024" "and a new one fits again"
is "${lines[6]}" "INSERTED" "the session still works"
is "${lines[7]}" "OK 1024" "list-tubes-watched lists 1,024"
ok "the log names the limit" grep -q 'watches 1024 tubes, the most a client may' "$log"

kill -TERM "$pid"
wait "$pid"
is $? 0 "SIGTERM: the frontend exits 0"
done_testing
