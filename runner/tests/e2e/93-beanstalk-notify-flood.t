#!/usr/bin/env bash
# What a NOTIFY from a stranger does (issue 17 follow-up, NOTIFY flood).
# The frontend LISTENs on pepsi_beanstalk, and any login that may connect
# may NOTIFY it as often as it likes. Here a login with no rights on
# pepsi at all sends 2,000 NOTIFYs, one transaction each, naming the tube
# 20 clients wait on in a reserve, and 800 payloads that are not tube
# names (too long, bad characters, a leading '-', empty). Meanwhile:
#   (a) another client's put / reserve / delete are answered promptly;
#   (b) the reserve queries the database ran (pg_stat_user_functions,
#       track_functions = pl) stay near one per tube per floor (10 ms) of
#       flood, far below a query per waiter per NOTIFY (40,000);
#   (c) a job put on the flooded tube mid-flood is reserved by exactly
#       one of the 20 waiters, promptly;
# and after it five jobs put in one transaction (one NOTIFY) reach five
# waiters, the wake passed on from one to the next;
# the frontend stays up, the garbage is said in its log once, not 800
# times, and SIGTERM still exits 0.
. "$(dirname "$0")/lib.sh"

N_WAITERS=20
N_FLOOD=2000
stranger=e2e_stranger_$$

sql "create role $stranger login" || exit 1
# PUBLIC may do nothing in schema pepsi (README "Roles"): the stranger can call no function
denied() {
    local o
    o=$(psql -XAtq -U "$stranger" -d "$E2E_DB" -c "select pepsi.beanstalk_put('flood', 0, 0, 60, '\\x00'::bytea)" 2>&1)
    grep -q 'permission denied' <<<"$o" && return 0
    diag "    $o"
    return 1
}
ok "the stranger may not call pepsi.beanstalk_put (permission denied)" denied
# count the reserve queries the frontend's connections run
sql "alter database $E2E_DB set track_functions = 'pl'" || exit 1

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:0
EOF
log=$E2E_DIR/beanstalk.log
# shellcheck disable=SC2046
PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" beanstalk >"$log" 2>&1 </dev/null &
pid=$!
ok "the frontend starts" wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$log"
port=$(grep -Eo 'listening on .* port [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)

# The flood: one transaction per NOTIFY, 2 ms apart (PostgreSQL folds
# identical NOTIFYs of one transaction; these are separate), every tenth
# round also four payloads that are not tube names.
cat >"$E2E_DIR/flood.sql" <<EOF
do \$\$
begin
    for i in 1..$N_FLOOD loop
        perform pg_notify('pepsi_beanstalk', 'flood');
        if i % 10 = 0 then
            perform pg_notify('pepsi_beanstalk', repeat('x', 300));
            perform pg_notify('pepsi_beanstalk', 'bad tube!');
            perform pg_notify('pepsi_beanstalk', '-dash');
            perform pg_notify('pepsi_beanstalk', '');
        end if;
        commit;
        perform pg_sleep(0.002);
    end loop;
end
\$\$;
EOF

out=$(timeout 120 python3 - "$port" "$N_WAITERS" "$stranger" "$E2E_DB" "$E2E_DIR/flood.sql" <<'PY'
import select, socket, subprocess, sys, time
port, nw, stranger, db, flood_sql = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return s, s.makefile("rb")

def cmd(c, line):
    c[0].sendall(line.encode() + b"\r\n")
    return c[1].readline().decode().rstrip("\r\n")

def stat(c, key):
    c[0].sendall(b"stats\r\n")
    n = int(c[1].readline().split()[1])
    for l in c[1].read(n + 2).decode().splitlines():
        if l.startswith(key + ": "):
            return int(l.split(": ")[1])

waiters = []
for i in range(nw):
    c = conn()
    cmd(c, "watch flood")
    cmd(c, "ignore default")
    c[0].sendall(b"reserve-with-timeout 60\r\n")
    waiters.append(c)
ctl = conn()
deadline = time.time() + 20
while stat(ctl, "current-waiting") != nw and time.time() < deadline:
    time.sleep(0.05)
print("waiting", stat(ctl, "current-waiting"))

t0 = time.time()
flood = subprocess.Popen(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-U", stranger, "-d", db, "-f", flood_sql],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
time.sleep(1.0)

# (a) a real client's put / reserve / delete, timed, while the flood runs
solo = conn()
cmd(solo, "use solo")
cmd(solo, "watch solo")
cmd(solo, "ignore default")
worst, rounds_ok = 0.0, 0
for i in range(20):
    a = time.time()
    r1 = cmd(solo, "put 0 0 60 2\r\nhi")
    r2 = cmd(solo, "reserve-with-timeout 5")
    body = solo[1].readline() if r2.startswith("RESERVED") else b""
    r3 = cmd(solo, "delete %s" % r2.split()[1]) if r2.startswith("RESERVED") else r2
    worst = max(worst, time.time() - a)
    rounds_ok += r1.startswith("INSERTED") and r2.startswith("RESERVED") and r3 == "DELETED" and body == b"hi\r\n"
print("solo", rounds_ok, int(worst * 1000))

# (c) a job on the flooded tube, put mid-flood: exactly one waiter gets it
prod = conn()
cmd(prod, "use flood")
a = time.time()
ins = cmd(prod, "put 0 0 60 5\r\nhello")
job = ins.split()[1] if ins.startswith("INSERTED") else "?"
got, first_ms = [], None
socks = {w[0]: i for i, w in enumerate(waiters)}
deadline = time.time() + 3
while time.time() < deadline:
    r, _, _ = select.select(list(socks), [], [], 0.05)
    for s in r:
        i = socks.pop(s)
        line = waiters[i][1].readline().decode().rstrip("\r\n")
        if line.startswith("RESERVED"):
            waiters[i][1].readline()
            if first_ms is None:
                first_ms = int((time.time() - a) * 1000)
        got.append((i, line))
flood_running = flood.poll() is None
print("job", len([g for g in got if g[1] == "RESERVED %s 5" % job]), len(got), first_ms, int(flood_running))

fout = flood.communicate(timeout=60)[0].decode().strip()
flood_ms = int((time.time() - t0) * 1000)
print("flood", flood.returncode, flood_ms, fout.replace("\n", " ")[:200])
# after the flood: the other waiters still wait, nothing more was handed out
time.sleep(0.5)
r, _, _ = select.select(list(socks), [], [], 0)
print("after", len(r), stat(ctl, "current-waiting"))
if got:
    w = waiters[got[0][0]]
    print("delete", cmd(w, "delete %s" % job))

# five jobs in one transaction: one (folded) NOTIFY; the wake passes from
# waiter to waiter while each finds a job, so five of them get one each
a = time.time()
put5 = subprocess.run(["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-d", db, "-c",
                       "select pepsi.beanstalk_put('flood', 0, 0, 60, '\\x6a6f62'::bytea) from generate_series(1, 5)"],
                      capture_output=True, text=True)
ids = set(put5.stdout.split())
got5, last_ms = {}, None
deadline = time.time() + 3
while time.time() < deadline and len(got5) < 6:
    r, _, _ = select.select(list(socks), [], [], 0.05)
    for s in r:
        i = socks.pop(s)
        line = waiters[i][1].readline().decode().rstrip("\r\n")
        if line.startswith("RESERVED"):
            waiters[i][1].readline()
            last_ms = int((time.time() - a) * 1000)
        got5[i] = line
print("five", len(ids), len(set(l.split()[1] for l in got5.values() if l.startswith("RESERVED")) & ids), len(got5), last_ms)
for c in waiters + [ctl, solo, prod]:
    c[0].close()
PY
)
note "$out"
val() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' <<<"$out"; }

is "$(val waiting 2)" "$N_WAITERS" "$N_WAITERS clients wait in a reserve on tube flood"
is "$(val flood 2)" 0 "the stranger's flood ran: $N_FLOOD NOTIFYs and 800 garbage payloads ($(val flood 3) ms)"
is "$(val solo 2)" 20 "(a) during the flood, 20 rounds of put / reserve / delete on another tube all answered"
ok "(a) each round within 1 s (worst $(val solo 3) ms)" num_between "$(val solo 3)" 0 1000
is "$(val job 2)" 1 "(c) the job put on the flooded tube mid-flood is reserved by one waiter"
is "$(val job 3)" 1 "(c) and by exactly one: no other waiter is answered"
ok "(c) within 1 s of its put ($(val job 4) ms)" num_between "$(val job 4)" 0 1000
is "$(val job 5)" 1 "(c) the flood was still running when it was reserved"
is "$(val after 2)" 0 "after the flood the other waiters still wait: nothing else was handed out"
is "$(val after 3)" $((N_WAITERS - 1)) "stats counts them waiting"
is "$(val delete 2)" DELETED "the job is deleted by its reserver"
is "$(val five 2)" 5 "five jobs put in one transaction (one NOTIFY)"
is "$(val five 3)" 5 "each reserved by a waiter: the wake passes on while waiters find jobs"
is "$(val five 4)" 5 "by five waiters, one job each"
ok "all five within 1 s ($(val five 5) ms)" num_between "$(val five 5)" 0 1000
ok "the frontend is still up" _alive "$pid"
is "$(grep -c 'not tube names' "$log")" 1 "the 800 garbage payloads are said in the log once, not 800 times"
ok "that line counts them as ignored" grep -Eq 'ignored 1 NOTIFY pepsi_beanstalk payload\(s\) that are not tube names' "$log"

kill -TERM "$pid"
wait "$pid"
is $? 0 "SIGTERM: the frontend exits 0"

# (b) the reserve queries, counted by the database once the frontend's
# connections are gone (a backend flushes its function counts at exit).
gone() { [ "$(sql "select count(*) from pg_stat_activity where application_name = 'pepsi-beanstalk'")" = 0 ]; }
ok "the frontend's connections are closed" wait_cmd 20 gone
calls=$(sql "select coalesce(sum(calls), 0) from pg_stat_user_functions where schemaname = 'pepsi' and funcname = 'beanstalk_reserve'")
flood_ms=$(val flood 3)
# 20 first reserves, 20 of the solo client's, the jobs' hand-overs, and at
# most one per 10 ms of flood for the one tube; slack of 200. Without the
# floor and the one-waiter wake a flood of this pace costs thousands.
bound=$((N_WAITERS + 20 + 10 + 10 + flood_ms / 10 + 200))
ok "(b) the database ran $calls reserve queries for $N_FLOOD NOTIFYs and $N_WAITERS waiters: at most $bound, not ~$((N_FLOOD * N_WAITERS))" \
    num_between "$calls" "$N_WAITERS" "$bound"

sql "drop role $stranger" >/dev/null
done_testing
