#!/usr/bin/env bash
# One reconciliation pass at a time (W-26, W-27), with real sessions: a
# pass holds its advisory lock until its transaction ends; a pass started
# meanwhile from another session returns at once having done nothing; two
# passes started at the same moment: one runs, the other returns at once;
# the lock goes with the transaction (commit or error). The runner's
# NOTIFY reconcile trigger meets the same lock.
. "$(dirname "$0")/lib.sh"
plan 17

lock_held() {
    [ "$(sql "select count(*) from pg_locks where locktype = 'advisory' and granted
                and classid = 1885696115 and objid = 4294967295")" = 1 ]
}
runs() { sql "select count(*) from pepsi.reconcile_runs"; }

# ---- session A holds a pass open ----
mkfifo "$E2E_DIR/a.in"
psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/a.in" >"$E2E_DIR/a.out" 2>&1 &
session_a=$!
exec 4>"$E2E_DIR/a.in"
cat >&4 <<EOF
begin;
select 'A', ran from pepsi.reconcile(p_trigger => 'manual');
\\o $E2E_DIR/a.ran
select 1;
\\o
EOF
ok "session A runs a pass and keeps its transaction open" wait_cmd 10 test -s "$E2E_DIR/a.ran"
like "$(cat "$E2E_DIR/a.out")" '^A\|t$' "W-26: A's pass ran"
ok "W-26: A holds the advisory lock (1885696115, -1) while its transaction is open" lock_held

t0=$(date +%s%N)
out=$(sql "select ran, run_id is null, findings from pepsi.reconcile()")
ms=$(elapsed_ms "$t0")
is "$out" "f|t|0" "W-27: a pass from session B while A holds the lock returns (false, NULL, 0)"
note "session B returned after $ms ms"
ok "W-27: at once, without waiting for A (${ms} ms < 2000)" num_between "$ms" 0 1999
is "$(runs)" 0 "W-27: B recorded no run (A's is not committed yet)"

echo "commit;" >&4
ok "A commits: its lock is gone" wait_cmd 10 eval '! lock_held'
is "$(runs)" 1 "W-27: exactly one pass ran: A's"
is "$(sql "select ran from pepsi.reconcile()")" t "W-26: with the lock released, the next pass runs"
exec 4>&-
wait "$session_a" 2>/dev/null

# ---- two passes started at the same moment ----
both() {
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" >"$E2E_DIR/both.$1" 2>&1 <<'EOF'
begin;
select ran, (extract(epoch from clock_timestamp() - statement_timestamp()) * 1000)::int
  from pepsi.reconcile(p_trigger => 'manual');
select pg_sleep(2);
commit;
EOF
}
before=$(runs)
both 1 &
p1=$!
both 2 &
p2=$!
wait "$p1" "$p2"
results=$(cut -d'|' -f1 "$E2E_DIR/both.1" "$E2E_DIR/both.2" | grep -E '^[tf]$' | sort | tr '\n' ' ')
is "$results" "f t " "W-27: two passes started at once from two sessions: one runs, the other does not"
skipped_ms=$(grep -h '^f|' "$E2E_DIR/both.1" "$E2E_DIR/both.2" | cut -d'|' -f2)
note "the pass that found the lock taken returned after ${skipped_ms:-?} ms"
ok "W-27: the other returned at once (${skipped_ms:-?} ms), without waiting the 2 s its rival held the lock" \
    num_between "${skipped_ms:-99999}" 0 1000
is "$(runs)" $((before + 1)) "W-27: one run more, not two"

# ---- an error ends the pass's transaction and its lock ----
psql -XAtq -d "$E2E_DB" -c "begin; select pepsi.reconcile(); select 1 / 0; commit;" >/dev/null 2>&1
is "$(sql "select ran from pepsi.reconcile()")" t "W-26: a pass whose transaction failed leaves no lock behind"

# ---- the runner's NOTIFY trigger meets the same lock ----
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" RECONCILE_INTERVAL=1h ANOMALY_INTERVAL=1h </dev/null
ok "the runner starts" start_runner "$conf"
mkfifo "$E2E_DIR/c.in"
psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/c.in" >/dev/null 2>&1 &
session_c=$!
exec 5>"$E2E_DIR/c.in"
echo "begin; select pepsi.reconcile();" >&5
wait_cmd 10 lock_held
sql "select pepsi.control_signal_send('reconcile')" >/dev/null
ok "W-24, W-27: a reconcile signal while another session holds the lock: the runner's pass is skipped" \
    wait_cmd 10 runner_log_has 'reconciliation pass \(notify\) skipped: another pass holds the lock'
echo "commit;" >&5
exec 5>&-
wait "$session_c" 2>/dev/null
sql "select pepsi.control_signal_send('reconcile')" >/dev/null
ok "W-24: once it is free, a reconcile signal runs a pass at once" \
    wait_for "select count(*) from pepsi.reconcile_runs where trigger = 'notify'" 1 10
stop_runner
is "$?" 0 "the runner stops cleanly"
done_testing
