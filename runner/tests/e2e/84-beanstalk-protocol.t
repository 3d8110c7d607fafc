#!/usr/bin/env bash
# The beanstalkd frontend (issue 17): `pepsi-runner beanstalk` against the
# real schema, spoken to by a small socket client (beanstalk-client.py):
# every command and every error reply byte for byte as beanstalkd 1.12
# gives them, a reserve woken by a put without polling, TTR expiry,
# DEADLINE_SOON, disconnects, pause-tube (T-33), stats-tube (T-32), one
# default (T-37); then two frontends at once: one new tube used and
# watched through both (T-31), and a frontend killed with SIGKILL whose
# sessions and references are reaped by the other (T-39); SIGTERM exits 0
# and closes the sessions.
. "$(dirname "$0")/lib.sh"

CLIENT=$E2E_ROOT/runner/tests/e2e/beanstalk-client.py

# py_checks ARGS...: runs the client; each line it prints is one test.
py_checks() {
    local st desc dg any=0
    while IFS=$'\t' read -r st desc dg; do
        [ "$st" = held ] && continue
        any=1
        if [ "$st" = ok ]; then
            _tap 0 "$desc"
        else
            _tap 1 "$desc"
            diag "    $dg"
        fi
    done < <(timeout 120 /usr/bin/python3 "$CLIENT" "$@" </dev/null 2>&1)
    [ $any = 1 ] || _tap 1 "the client printed its checks"
}

# start_bs N CONF: frontend N (log $E2E_DIR/beanstalk.N.log); sets BS_PID[N], BS_PORT[N].
declare -A BS_PID BS_PORT BS_GEN
start_bs() {
    local n=$1 conf=$2 log=$E2E_DIR/beanstalk.$1.log
    # shellcheck disable=SC2046
    PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v beanstalk >"$log" 2>&1 </dev/null &
    BS_PID[$n]=$!
    if ! wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$log"; then
        diag "frontend $n did not start; its log:" "$(tail -n 30 "$log")"
        return 1
    fi
    BS_PORT[$n]=$(grep -Eo 'listening on .* port [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)
    BS_GEN[$n]=$(grep -Eo 'generation [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)
}

# bs_exited N: frontend N has exited.
bs_exited() { ! _alive "${BS_PID[$1]}"; }

bs_conf() {
    write_conf "$1" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:0
MAX_JOB_SIZE = 1000
CONNECTIONS = 2
REAP_INTERVAL = 1s
${2:-}
EOF
}

conf=$E2E_DIR/pepsi.conf
bs_conf "$conf"
ok "the frontend starts and listens" start_bs 1 "$conf"
is "$(sql "select count(*) from pepsi.beanstalk_frontend")" 1 "it registered one generation"

py_checks protocol "${BS_PORT[1]}"
is "$(sql "select count(*) from pepsi.tubes where tube = 'nosuch'")" 0 \
   "T-32, T-33: stats-tube and pause-tube of an unknown tube left nothing behind"
is "$(sql "select count(*) from pepsi.workqueue where stage = 'beanstalk' and tube = 'p1'")" 0 \
   "deleted jobs are gone from pepsi.workqueue"

# ---- two frontends ----
conf2=$E2E_DIR/pepsi2.conf
bs_conf "$conf2"
ok "a second frontend starts against the same database" start_bs 2 "$conf2"
is "$(sql "select count(*) from pepsi.beanstalk_frontend")" 2 "two generations registered"

exec 7> >(timeout 120 /usr/bin/python3 "$CLIENT" t31 "${BS_PORT[1]}" "${BS_PORT[2]}" > "$E2E_DIR/t31.out" 2>&1)
ok "T-31: the clients of both frontends are in" wait_cmd 20 grep -q '^held' "$E2E_DIR/t31.out"
while IFS=$'\t' read -r st desc dg; do
    [ "$st" = held ] && continue
    if [ "$st" = ok ]; then _tap 0 "$desc"; else _tap 1 "$desc"; diag "    $dg"; fi
done < "$E2E_DIR/t31.out"
is "$(sql "select count(*) from pepsi.tubes where tube = 't31tube'")" 1 "T-31: one tube"
is "$(sql "select string_agg(kind, ',' order by kind) from pepsi.beanstalk_ref where tube = 't31tube'")" \
   "use,use,watch,watch" "T-31: four references, one use and one watch per client"
exec 7>&-
ok "T-35: once both clients are gone, the empty tube is gone" \
    wait_for "select count(*) from pepsi.tubes where tube = 't31tube'" 0 10

# A worker loop across both frontends: SKIP LOCKED, wake-ups, no job twice.
py_checks loop "${BS_PORT[1]}" "${BS_PORT[2]}" 2000
is "$(sql "select count(*) from pepsi.workqueue where stage = 'beanstalk' and tube = 'loop1'")" 0 \
   "worker loop: no job left behind"

# T-39: a frontend killed with SIGKILL: its sessions and references are reaped.
exec 8> >(timeout 120 /usr/bin/python3 "$CLIENT" hold "${BS_PORT[2]}" reaped1 > "$E2E_DIR/hold.out" 2>&1)
ok "a client of frontend 2 uses and watches reaped1" wait_cmd 20 grep -q '^held' "$E2E_DIR/hold.out"
is "$(sql "select count(*) from pepsi.beanstalk_ref where tube = 'reaped1'")" 2 "its two references are there"
kill -KILL "${BS_PID[2]}"
wait "${BS_PID[2]}" 2>/dev/null
ok "T-39: the references of the killed frontend are reaped within a few seconds" \
    wait_for "select count(*) from pepsi.beanstalk_ref where tube = 'reaped1'" 0 10
ok "T-39: and its generation and sessions" \
    wait_for "select (select count(*) from pepsi.beanstalk_frontend) || ',' ||
                     (select count(*) from pepsi.beanstalk_session s where s.frontend_id <> ${BS_GEN[1]})" "1,0" 10
ok "the surviving frontend logged the reap" grep -Eq 'reaped 1 dead frontend' "$E2E_DIR/beanstalk.1.log"
exec 8>&-

# Limits and a lost control connection, on a third frontend.
conf3=$E2E_DIR/pepsi3.conf
bs_conf "$conf3" "MAX_CLIENTS = 1"
ok "a third frontend starts" start_bs 3 "$conf3"
py_checks maxclients "${BS_PORT[3]}"
exec 9> >(timeout 120 /usr/bin/python3 "$CLIENT" wait-close "${BS_PORT[3]}" > "$E2E_DIR/wait-close.out" 2>&1)
ok "a client of frontend 3 waits in reserve" wait_cmd 20 grep -q '^held' "$E2E_DIR/wait-close.out"
sql "select pg_terminate_backend(backend_pid) from pepsi.beanstalk_frontend where frontend_id = ${BS_GEN[3]}" >/dev/null
ok "its control connection (the generation's lock) is lost: the client connection is closed" \
    wait_cmd 10 grep -q '^closed' "$E2E_DIR/wait-close.out"
ok "the frontend stops" wait_cmd 15 bs_exited 3
kill -KILL "${BS_PID[3]}" 2>/dev/null
wait "${BS_PID[3]}"
is $? 1 "and exits 1, for systemd to start a new generation"
ok "it said why" grep -Eq 'lost the control connection' "$E2E_DIR/beanstalk.3.log"
exec 9>&-

# T-40: a generation deleted under a live frontend (as a reap would): its
# clients are not served, and the frontend stops (exit 1).
conf4=$E2E_DIR/pepsi4.conf
bs_conf "$conf4"
ok "a fourth frontend starts" start_bs 4 "$conf4"
exec 9> >(timeout 120 /usr/bin/python3 "$CLIENT" t40 "${BS_PORT[4]}" > "$E2E_DIR/t40.out" 2>&1)
ok "a client of frontend 4 is in session" wait_cmd 20 grep -q '^held' "$E2E_DIR/t40.out"
sql "delete from pepsi.beanstalk_frontend where frontend_id = ${BS_GEN[4]}" >/dev/null
echo go >&9
ok "the client's checks ran" wait_cmd 30 bash -c "[ \$(grep -c '^ok\|^not ok' '$E2E_DIR/t40.out') -ge 2 ]"
while IFS=$'\t' read -r st desc dg; do
    [ "$st" = held ] && continue
    if [ "$st" = ok ]; then _tap 0 "$desc"; else _tap 1 "$desc"; diag "    $dg"; fi
done < "$E2E_DIR/t40.out"
ok "T-40: the frontend of the reaped generation stops" wait_cmd 15 bs_exited 4
kill -KILL "${BS_PID[4]}" 2>/dev/null
wait "${BS_PID[4]}"
is $? 1 "T-40: it exits 1"
ok "saying why" grep -Eq 'generation is not live any more \(PX060' "$E2E_DIR/beanstalk.4.log"
is "$(sql "select count(*) from pepsi.beanstalk_ref where tube = 't40tube'")" 0 "T-40: nothing was created for it"
exec 9>&-

# The runner refuses a [stage-beanstalk] section (exit 78).
write_conf "$E2E_DIR/stage.conf" <<EOF
[stage-beanstalk]
PROGRAM = pepsi-stage-pass
EOF
run_runner "$E2E_DIR/stage.log" -c "$E2E_DIR/stage.conf" serve
is $? 78 "a [stage-beanstalk] section: the runner refuses to start (exit 78)"
ok "saying the name is reserved for the beanstalkd frontend" \
    grep -Eq 'stage name "beanstalk" is reserved for the beanstalkd frontend' "$E2E_DIR/stage.log"
write_conf "$E2E_DIR/ok.conf" </dev/null
sql "select pepsi.config_set('beanstalk', 'PROGRAM', 'pepsi-stage-pass')" >/dev/null
run_runner "$E2E_DIR/overlay.log" -c "$E2E_DIR/ok.conf" serve
is $? 78 "a [stage-beanstalk] from the overlay (pepsi.config_override): refused too (exit 78)"
ok "saying so" grep -Eq 'pepsi.config_override.*reserved for the beanstalkd frontend' "$E2E_DIR/overlay.log"
sql "select pepsi.config_remove_stage('beanstalk')" >/dev/null

# SIGTERM: exit 0, every session closed, a waiting client's too.
exec 9> >(timeout 120 /usr/bin/python3 "$CLIENT" wait-close "${BS_PORT[1]}" > "$E2E_DIR/wait-close1.out" 2>&1)
ok "a client of frontend 1 waits in reserve" wait_cmd 20 grep -q '^held' "$E2E_DIR/wait-close1.out"
is "$(sql "select count(*) from pepsi.beanstalk_session")" 1 "its session is open"
kill -TERM "${BS_PID[1]}"
wait "${BS_PID[1]}"
is $? 0 "SIGTERM: the frontend exits 0"
ok "the waiting client's connection was closed" wait_cmd 10 grep -q '^closed' "$E2E_DIR/wait-close1.out"
is "$(sql "select count(*) from pepsi.beanstalk_session")" 0 "its sessions were closed in SQL"
exec 9>&-

done_testing
