#!/usr/bin/env bash
# Issue 19: claims under a held snapshot start at a per-stage mark
# (pepsi.claim_mark) instead of walking the dead head of the stage, and a
# mark never loses a row. Another session holds a REPEATABLE READ snapshot
# for the whole run, so no entry of a row that left `pending` is removed.
# Three unfused pass stages, the fair claim (the default) with 20
# senders, and every way a row can become pending below a mark:
#   - workers that commit out of order (PARALLELISM 4 at each stage);
#   - rows queued with a delay (run_at), released long after newer rows
#     of their stage were claimed: the lowest ids of the run;
#   - an inject whose ids are taken first and committed last (a
#     transaction held open 3 s while others commit);
#   - rows of a lower priority queued in the middle of the run.
# Every message must finish, each claimed once per stage; and the marks
# must have been in use (else this test proves nothing about them).
. "$(dirname "$0")/lib.sh"
plan 9

n=${PEPSI_E2E_MARK_MESSAGES:-20000}
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" MAINTENANCE=no <<EOF
[pepsi]
ALLOW_FUSION = no

[stage-one]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
PARALLELISM = 4
NEXT = two
[stage-two]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
PARALLELISM = 4
NEXT = three
[stage-three]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
PARALLELISM = 4
EOF

# The holder: idle in a REPEATABLE READ transaction for the whole run.
mkfifo "$E2E_DIR/holder.in"
PGAPPNAME=e2e-mark-holder psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/holder.in" >/dev/null 2>&1 &
holder_psql=$!
exec 5>"$E2E_DIR/holder.in"
echo "begin isolation level repeatable read; select count(*) from pepsi.workqueue;" >&5
ok "a session holds a snapshot" wait_for "select count(*) from pg_stat_activity
      where application_name = 'e2e-mark-holder' and state = 'idle in transaction' and backend_xmin is not null" 1 10

# The delayed rows first: the lowest ids of the run, pending only after 8 s.
sql "insert into pepsi.workqueue (stage, origin_user, status, timeout)
     select 'one', 'delayed', 'paused', now() + interval '8 s' from generate_series(1, 500)" >/dev/null
sql "insert into pepsi.workqueue (stage, origin_user)
     select 'one', 'u' || (i % 20) from generate_series(1, $((n / 2))) i" >/dev/null

# Sample the marks while the run goes on.
( while :; do
      sql "select coalesce(max(dead_at_head), 0) || ' ' || count(mark_id) from pepsi.claim_mark" 2>/dev/null
      sleep 0.3
  done >"$E2E_DIR/marks" ) &
sampler=$!

ok "the runner starts" start_runner "$conf"
# Ids taken now, committed in 3 s, after the rows queued meanwhile.
psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" >/dev/null 2>&1 <<SQL &
begin;
insert into pepsi.workqueue (stage, origin_user) select 'one', 'late' from generate_series(1, 500);
select pg_sleep(3);
commit;
SQL
late=$!
sleep 0.5
sql "insert into pepsi.workqueue (stage, origin_user)
     select 'one', 'u' || (i % 20) from generate_series(1, $((n / 2))) i" >/dev/null
wait "$late"
sleep 2
sql "insert into pepsi.workqueue (stage, origin_user, priority)
     select 'one', 'urgent', -10 from generate_series(1, 500)" >/dev/null
total=$((n + 1500))

ok "issue 19: all $total messages finish while the snapshot is held" \
   wait_for "select count(*) from pepsi.workqueue" 0 240
ok "issue 19: each was claimed once at each of the three stages" \
   wait_for "select coalesce(sum(claimed), 0) from pepsi.dispatch_stats" "$((total * 3))" 20
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
marked() { awk '$2 > 0 { m = 1 } END { exit !m }' "$E2E_DIR/marks"; }
ok "issue 19: the claims used marks (a stage's head was dead)" marked
ok "issue 19: a refresh walked more than claim_mark_dead_bound() dead entries" \
   num_between "$(awk '$1 > m { m = $1 } END { print m + 0 }' "$E2E_DIR/marks")" 1001 100000000
is "$(sql "select count(*) from pg_stat_activity where application_name = 'e2e-mark-holder'
             and state = 'idle in transaction'")" 1 "the snapshot was held to the end"

echo "commit;" >&5
exec 5>&-
wait "$holder_psql"
ok "the runner is still serving" _alive "$RUNNER_PID"
ok "it stops cleanly" stop_runner
done_testing
