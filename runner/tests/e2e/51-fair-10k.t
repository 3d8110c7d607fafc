#!/usr/bin/env bash
# Fair scheduling with 10,000 senders (issue 12, D-48, D-53, D-56): every
# sender with a lead ranks by it, not only the 256 the runner used to pass
# (or the 1,024 it used to keep). With the real runner:
#   1. 10,000 senders send one message each; the runner charges each the
#      time its worker reports (D-49, D-50): 50 ms for s00000..s00099, 2 ms
#      for the others. One message per sender keeps the leads about as
#      charged: the least-served waiting sender is mostly one not yet
#      served, so levelling subtracts little (D-48).
#   2. Then each of the 10,000 sends one more, and a sender that has never
#      sent (user:a-fresh, lead 0, D-54) sends one too, the newest row of
#      all. The first claim (cap 8: a window of the first 32 senders in
#      sender order, D-60: a-fresh and s00000..s00030, each charged 50 ms)
#      must take a-fresh's message: it has the smallest lead. The runner of
#      before kept 1,024 leads and passed 256, ranked s00000.. as if they had
#      none, level with a-fresh, and ties go to the oldest row: a-fresh lost.
# Shortcut, and why: the worker (stages/declared-cost) declares each
# message's cost in its report instead of spending it; the runner's charges,
# corrections and claims are the real ones. Spending it (exec with sleep)
# took 45 s per 1,000 messages on the shared test machines.
. "$(dirname "$0")/lib.sh"
plan 7

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" FAIR_HALF_LIFE=1h FAIR_FIFO_PERCENT=0 <<EOF
[stage-work]
PROGRAM = $E2E_STAGES/declared-cost
PARALLELISM = 2
QUEUE_LIMIT = 4
EOF

# Which claim took each row, in the order of the claims (claim ids grow).
record_claims

# 1. Charge 10,000 senders, one message each.
sql "insert into pepsi.workqueue (stage, origin_user, state)
     select 'work', 's' || lpad(i::text, 5, '0'), jsonb_build_object('cost_usec', case when i < 100 then 50000 else 2000 end)
       from generate_series(0, 9999) i" >/dev/null
ok "runner starts" start_runner "$conf"
t0=$(date +%s%N)
ok "issue 12: 10,000 senders' messages are all done" wait_for "select count(*) from pepsi.workqueue" 0 300
note "10,000 messages in $(elapsed_ms "$t0") ms"
is "$(sql "select count(distinct sender_key) from e2e_claims")" 10000 "setup: 10,000 different senders were claimed (and charged)"

# 2. Every sender again, a fresh one last; the first claim after it.
sql "truncate e2e_claims" >/dev/null
sql "insert into pepsi.workqueue (stage, origin_user)
     select 'work', 's' || lpad(i::text, 5, '0') from generate_series(0, 9999) i;
     insert into pepsi.workqueue (stage, origin_user) values ('work', 'a-fresh')" >/dev/null
claimed_any() { [ "$(sql "select count(*) > 0 from e2e_claims")" = t ]; }
ok "the first claim after the burst" wait_cmd 30 claimed_any
first=$(sql "select string_agg(sender_key, ' ' order by sender_key) from e2e_claims
              where claim_id = (select min(claim_id) from e2e_claims)")
note "first claim: $first"
ok "issue 12, D-53: 10,000 senders with leads: the sender with the smallest lead (a-fresh, none) is in the first claim" \
    test "${first#*user:a-fresh}" != "$first"
ok "D-60: ... a claim of at most 8 rows (cap 8 of a 32-sender window)" \
    test "$(sql "select count(*) from e2e_claims where claim_id = (select min(claim_id) from e2e_claims)")" -le 8
stop_runner
is "$?" 0 "clean shutdown"
done_testing
