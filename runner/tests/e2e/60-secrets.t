#!/usr/bin/env bash
# issue 11, secrets stay with their owner. Workers and the commands an exec
# stage runs never see the database password in their environment; workers
# find it the way libpq does, in a passfile (mode 0600, named by PGPASSFILE)
# that the runner writes in a private directory under its runtime directory
# and removes when it stops; a command gets no connection string at all
# unless its section says PASS_CONNINFO = yes; a configuration file holding
# a password is refused while other users may read it; WORKER_CONNINFO is
# the operator's way and must hold no password.
# The login used here is a member of pepsi_pw, which must give a password
# even on the local socket (scripts/test-e2e), so a worker that does not
# find the password really fails.
. "$(dirname "$0")/lib.sh"
plan 38

role=e2e_pw_$$
pw='s3:cr\et'                                  # ':' and '\' are escaped in a passfile
sql "create role $role login superuser password '$pw' in role pepsi_pw" >/dev/null
base="host=$PGHOST port=$PGPORT user=$role dbname=$E2E_DB"
with_pw="$base password='${pw//\\/\\\\}'"      # libpq's quoting: '\' doubled

# The password is really checked.
out=$(PGPASSFILE=/nonexistent psql -w "$base" -XAtqc 'select 1' </dev/null 2>&1)
like "$out" 'password' "the login is refused without its password (pg_hba: scram-sha-256)"
is "$(psql -w "$with_pw" -XAtqc 'select current_user' </dev/null 2>&1)" "$role" "and accepted with it"

# peek.sh NAME: records the command's environment in NAME.env and, when it
# was given a connection string, whom it connects as in NAME.who.
cat >"$E2E_DIR/peek.sh" <<'EOF'
tr '\0' '\n' </proc/self/environ >"$E2E_DIR/$1.env"
cat >/dev/null
if [ -n "${PEPSI_CONNINFO:-}" ]; then
    psql -w "$PEPSI_CONNINFO" -XAtqc 'select current_user' </dev/null >"$E2E_DIR/$1.who" 2>&1
fi
exit 0
EOF

# write_secret_conf FILE CONNINFO [WORKER_CONNINFO]: the pipeline
# peek (exec) -> peekpass (exec, PASS_CONNINFO) -> outside (a program of
# its own, connecting with PEPSI_CONNINFO), plus late (pass).
write_secret_conf() {
    {
        echo "[pepsi-postgres]"
        echo "CONNINFO = $2"
        [ -n "${3:-}" ] && echo "WORKER_CONNINFO = $3"
        cat <<EOF
[pepsi-dispatch]
POLL_INTERVAL = 1s
STATS_INTERVAL = 1s
COOLDOWN = 500ms
LOCK_WAIT = 2s
[stage-peek]
PROGRAM = pepsi-stage-exec
COMMAND = sh $E2E_DIR/peek.sh peek
WORKER_IDLE_TIMEOUT = 1min
NEXT = peekpass
[stage-peekpass]
PROGRAM = pepsi-stage-exec
PASS_CONNINFO = yes
COMMAND = sh $E2E_DIR/peek.sh peekpass
WORKER_IDLE_TIMEOUT = 1min
NEXT = outside
[stage-outside]
PROGRAM = $E2E_STAGES/misbehave
WORKER_IDLE_TIMEOUT = 1min
[stage-late]
PROGRAM = pepsi-stage-pass
EOF
    } >"$1"
}

# env_of PID: the process's environment, one variable a line.
env_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null; }

# no_secret_in_workers: no live worker has the password or PGPASSWORD in
# its environment; at least 3 workers were looked at.
no_secret_in_workers() {
    local pid n=0 bad=0
    for pid in $(worker_pids); do
        n=$((n + 1))
        if env_of "$pid" | grep -qF -e "$pw" -e "PGPASSWORD="; then
            diag "worker $pid has the password in its environment"
            bad=1
        fi
    done
    [ "$n" -ge 3 ] || { diag "only $n worker(s) to look at"; return 1; }
    return $bad
}

# through ID: the message went through peek, peekpass and outside.
through() { wait_for "select count(*) from e2e_done where id = $1 and stage = 'outside'" 1 30; }

conf=$E2E_DIR/pepsi.conf
write_secret_conf "$conf" "$with_pw"

# ---- the file's permissions ----
chmod 644 "$conf"
run_runner "$E2E_DIR/insecure.log" -c "$conf" serve
is "$?" 78 "issue 11: a world-readable file with a password is refused (exit 78)"
ok "issue 11: the error names the file, the key and the fix" \
    grep -qF "$conf:2: key \"CONNINFO\" in [pepsi-postgres] holds a password" "$E2E_DIR/insecure.log"
ok "issue 11: ... run chmod o-rwx FILE" grep -qF "run chmod o-rwx $conf" "$E2E_DIR/insecure.log"
chmod 640 "$conf"

# ---- a worker connects; nobody sees the password ----
mkdir -p "$E2E_DIR/run"
RUNTIME_DIRECTORY=$E2E_DIR/run ok "issue 11: the same file at mode 0640 is accepted" start_runner "$conf"
id=$(sql "select pepsi.workqueue_inject('peek', p_body => 'hello')")
ok "issue 11: workers log in with the password-protected role (three stages ran)" through "$id"

ok "the exec command's environment was recorded" grep -qx "PEPSI_MESSAGE_ID=$id" "$E2E_DIR/peek.env"
ok "issue 11: an exec command's environment holds no password" \
    bash -c "! grep -qF -e '$pw' -e 'password' '$E2E_DIR/peek.env'"
is "$(grep -cE '^(PEPSI_CONNINFO|PGPASSWORD|PGPASSFILE|PGSERVICE|PGSERVICEFILE|PGHOST|PGPORT|PGUSER|PGDATABASE|PEPSI_CONFIG)=' "$E2E_DIR/peek.env")" 0 \
   "issue 11: nor any connection string (PEPSI_CONNINFO, PGPASSFILE, PG*, PEPSI_CONFIG)"

ok "issue 11: with PASS_CONNINFO = yes the command gets PEPSI_CONNINFO" \
    grep -qx "PEPSI_CONNINFO=.*user='$role'.*" "$E2E_DIR/peekpass.env"
ok "issue 11: ... without the password" bash -c "! grep -qF -e '$pw' -e 'password' '$E2E_DIR/peekpass.env'"
is "$(cat "$E2E_DIR/peekpass.who" 2>&1)" "$role" "issue 11: ... and connects with it through PGPASSFILE"

ok "issue 11: no worker has the password or PGPASSWORD in /proc/PID/environ" no_secret_in_workers
wpid=$(for p in $(worker_pids); do env_of "$p" | grep -qx 'PEPSI_STAGE=peek' && echo "$p"; done | head -n 1)
wenv=$(env_of "$wpid")
like "$(grep '^PEPSI_CONNINFO=' <<<"$wenv")" "user='$role'" "issue 11: the worker's PEPSI_CONNINFO names the login"
passfile=$(sed -n 's/^PGPASSFILE=//p' <<<"$wenv")
like "$passfile" "^$E2E_DIR/run/pepsi-runner\.[A-Za-z0-9]{6}/pgpass\$" \
     "issue 11: PGPASSFILE is in a private directory under \$RUNTIME_DIRECTORY"
is "$(stat -c %a "$passfile" 2>&1) $(stat -c %a "$(dirname "$passfile")" 2>&1)" "600 700" \
   "issue 11: the passfile has mode 0600, its directory 0700"
is "$(cat "$passfile")" "$PGHOST:$PGPORT:$E2E_DB:$role:s3\\:cr\\\\et" \
   "issue 11: one line, ':' and '\\' escaped as libpq reads them"

# Without the passfile, a new worker cannot log in; with it back, it can.
cp -p "$passfile" "$E2E_DIR/pgpass.saved"
rm "$passfile"
late=$(sql "select pepsi.workqueue_inject('late')")
ok "issue 11: without the passfile a new worker fails to log in" \
    wait_cmd 20 runner_log_has 'late.*(no password supplied|password authentication failed)'
is "$(sql "select status from pepsi.workqueue where workqueue_id = $late")" pending \
   "issue 11: and its message waits"
cp -p "$E2E_DIR/pgpass.saved" "$passfile"
ok "issue 11: with the passfile back, it logs in and runs the message" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id = $late" 0 30

stop_runner
is "$?" 0 "clean shutdown"
ok "issue 11: the runner removed the passfile and its directory" \
    bash -c "[ ! -e '$passfile' ] && [ ! -e '$(dirname "$passfile")' ]"
is "$(ls -A "$E2E_DIR/run")" "" "issue 11: nothing is left in the runtime directory"

# ---- the password from the runner's own PGPASSWORD ----
rm -f "$E2E_DIR"/peek*.env "$E2E_DIR"/peekpass.who
conf2=$E2E_DIR/env-password.conf
write_secret_conf "$conf2" "$base"
PGPASSWORD=$pw ok "a runner whose login's password is in \$PGPASSWORD starts" start_runner "$conf2"
ok "the runner itself has PGPASSWORD" bash -c "tr '\\0' '\\n' </proc/$RUNNER_PID/environ | grep -q '^PGPASSWORD='"
id=$(sql "select pepsi.workqueue_inject('peek')")
ok "issue 11: workers log in with \$PGPASSWORD put in the passfile" through "$id"
ok "issue 11: no worker inherits PGPASSWORD" no_secret_in_workers
ok "issue 11: nor an exec command" bash -c "! grep -qF -e '$pw' -e 'PGPASSWORD' '$E2E_DIR/peek.env'"
is "$(cat "$E2E_DIR/peekpass.who" 2>&1)" "$role" "issue 11: PASS_CONNINFO = yes still connects"
stop_runner
is "$?" 0 "clean shutdown"

# ---- WORKER_CONNINFO, the operator's choice ----
conf3=$E2E_DIR/worker-conninfo.conf
write_secret_conf "$conf3" "$with_pw" "$with_pw"
chmod 600 "$conf3"
run_runner "$E2E_DIR/worker-pw.log" -c "$conf3" serve
is "$?" 1 "issue 11: a WORKER_CONNINFO with a password is refused"
ok "issue 11: saying why" grep -qF 'key "WORKER_CONNINFO" in [pepsi-postgres]: holds a password' "$E2E_DIR/worker-pw.log"

printf '*:*:*:%s:%s\n' "$role" 's3\:cr\\et' >"$E2E_DIR/operator.pgpass"
chmod 600 "$E2E_DIR/operator.pgpass"
wci="$base passfile=$E2E_DIR/operator.pgpass"
write_secret_conf "$conf3" "$with_pw" "$wci"
chmod 600 "$conf3"
ok "a runner with a WORKER_CONNINFO starts" start_runner "$conf3"
id=$(sql "select pepsi.workqueue_inject('peek')")
ok "issue 11: workers log in with the operator's WORKER_CONNINFO and passfile" through "$id"
wpid=$(for p in $(worker_pids); do env_of "$p" | grep -qx 'PEPSI_STAGE=peek' && echo "$p"; done | head -n 1)
is "$(env_of "$wpid" | sed -n 's/^PEPSI_CONNINFO=//p')" "$wci" "issue 11: PEPSI_CONNINFO is WORKER_CONNINFO as written"
is "$(env_of "$wpid" | grep -c '^PGPASSFILE=')" 0 "issue 11: and the runner wrote no passfile of its own"
stop_runner
is "$?" 0 "clean shutdown"
sql "drop role $role" >/dev/null 2>&1
done_testing
