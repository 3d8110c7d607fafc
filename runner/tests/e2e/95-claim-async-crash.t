#!/usr/bin/env bash
# Issue 19, claim_commit_async: the dispatcher's claim commits without
# waiting for its WAL. Shown end to end, and what a crash then costs: the
# claim is lost, its message is pending again, and it is claimed again and
# finished; nothing else is lost (D-18, "a dead database costs a retry,
# never a message").
#
# How the test knows the claim's WAL was not written: PostgreSQL's own
# writers are stopped (SIGSTOP: WAL writer, background writer,
# checkpointer, autovacuum launcher), so WAL reaches the kernel only when
# a backend writes it itself, as a synchronous commit does. Once a worker
# holds the claimed id, WAL has been inserted that is not written
# (pg_current_wal_insert_lsn past pg_current_wal_lsn): the claim's. With
# the claim's old synchronous commit nothing was left unwritten, and after
# the crash the row was still running. The crash is a SIGKILL of the WAL writer:
# the postmaster then stops every backend and recovers from the WAL on
# disk, as after a power cut of the database's processes.
. "$(dirname "$0")/lib.sh"
plan 10

# A stage that holds the first id it reads, touching no database: its
# own writes would flush the claim's WAL.
hold=$E2E_DIR/hold
cat > "$hold" <<'SH'
#!/usr/bin/env bash
echo ready
while read -r id; do echo "$id" >> "$E2E_DIR/held"; sleep 3600; done
SH
chmod +x "$hold"

conf=$E2E_DIR/pepsi.conf
# No write of the runner's own between the claim and the crash: no
# heartbeat, statistics, maintenance or vacuum.
write_conf "$conf" POLL_INTERVAL=1h STATS_INTERVAL=1h MAINTENANCE=no VACUUM_DEAD_TUPLES=0 <<EOF
[stage-h]
PROGRAM = $hold
PARALLELISM = 1
EOF

aux_pid() { sql "select pid from pg_stat_activity where backend_type = '$1'"; }
aux="$(aux_pid walwriter) $(aux_pid 'background writer') $(aux_pid checkpointer) $(aux_pid 'autovacuum launcher')"
walwriter=$(aux_pid walwriter)
ok "the runner starts" start_runner "$conf"
sleep 1 # the start-up's own writes (orphan reset, first claim) are done
for p in $aux; do kill -STOP "$p"; done
trap 'for p in $aux; do kill -CONT "$p" 2>/dev/null; done' EXIT

# Due in 2 s: the write position is read before the runner claims it.
id=$(sql "select pepsi.workqueue_inject('h', p_run_at => now() + interval '2 s')")
lsn0=$(sql "select pg_current_wal_lsn()")
is "$(sql "select status from pepsi.workqueue where workqueue_id = $id")" paused "setup: the message waits for its time"
ok "a worker holds the injected message" wait_cmd 10 grep -qx "$id" "$E2E_DIR/held"
is "$(sql "select status from pepsi.workqueue where workqueue_id = $id")" running "the claim is visible: running"
kill -STOP "$RUNNER_PID"
read -r wrote unwritten < <(sql "select pg_current_wal_lsn() || ' ' || pg_wal_lsn_diff(pg_current_wal_insert_lsn(), pg_current_wal_lsn())")
note "WAL write position: $lsn0 after the inject, $wrote once the claim is held; $unwritten bytes inserted and not written"
ok "issue 19: the claim committed without writing its WAL ($unwritten bytes inserted, not yet written)" \
    test "$unwritten" -gt 0

# The crash: the postmaster sees its WAL writer killed, stops every
# backend (the stopped ones once continued) and recovers.
kill -KILL "$walwriter"
for p in $aux; do kill -CONT "$p" 2>/dev/null; done
answers() { sql "select 1" >/dev/null 2>&1; }
ok "PostgreSQL recovers from the crash" wait_cmd 30 answers
is "$(sql "select status from pepsi.workqueue where workqueue_id = $id")" pending \
   "issue 19: the claim was lost in the crash: the message is pending again, not lost"

# The frozen runner is gone with its connections; a new one claims the
# message again, now with a stage that finishes it.
kill -KILL "$RUNNER_PID" 2>/dev/null
wait "$RUNNER_PID" 2>/dev/null
RUNNER_PID=
for p in $(worker_pids); do kill -KILL "$p" 2>/dev/null; done
write_conf "$conf" <<EOF
[stage-h]
PROGRAM = pepsi-stage-pass
EOF
ok "a new runner starts" start_runner "$conf"
ok "D-18: the message is claimed again and finished" \
    wait_for "select count(*) from pepsi.workqueue" 0 30
stop_runner
is "$?" 0 "clean shutdown"
done_testing
