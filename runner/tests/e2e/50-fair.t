#!/usr/bin/env bash
# Fair scheduling between senders (D-42..D-61), with the real runner and
# one worker (PARALLELISM 1, QUEUE_LIMIT 1) so that every slot is a choice.
#   - a sender's single message is not stuck behind another sender's
#     10,000-message backlog (D-53);
#   - worker time, not counts, is shared: a sender whose messages cost 10x
#     is claimed about 10x less often (D-49, D-50; costs declared by the
#     worker, the share read from the order of the claims);
#   - the oldest row is still served while new senders keep arriving
#     (FAIR_FIFO_PERCENT, D-57), and starves without that share (control);
#   - FAIR_SCHEDULING = no is strict oldest first (D-41).
. "$(dirname "$0")/lib.sh"
plan 11

conf=$E2E_DIR/pepsi.conf
# The command's cost depends on the sender: from:slow.example 10x.
write_conf "$conf" <<EOF
[stage-work]
PROGRAM = pepsi-stage-exec
PARALLELISM = 1
QUEUE_LIMIT = 1
COMMAND = cat >/dev/null; case "\$PEPSI_SENDER_KEY" in from:slow.example) sleep 0.3;; *) sleep 0.03;; esac; echo "\$PEPSI_SENDER_KEY \$PEPSI_MESSAGE_ID" >> $E2E_DIR/done
EOF
done_count() { awk -v p="from:$1 " 'index($0, p) == 1 { n++ } END { print n + 0 }' "$E2E_DIR/done" 2>/dev/null || echo 0; }

# 1. A backlog of 10,000 from one sender, then one message from another.
sql "insert into pepsi.workqueue (stage, envelope_sender) select 'work', 'a@big.example' from generate_series(1, 10000)"
ok "runner starts" start_runner "$conf"
ok "the backlog is being worked" wait_cmd 20 test -s "$E2E_DIR/done"
b=$(sql "select pepsi.workqueue_inject('work', p_envelope_sender => 'b@small.example', p_body => 'x')")
t0=$(date +%s%N)
ok "D-53: the other sender's single message is done within a few claim rounds, not after the backlog" \
    wait_cmd 10 grep -q "^from:small.example $b\$" "$E2E_DIR/done"
note "it took $(elapsed_ms "$t0") ms with $(sql "select count(*) from pepsi.workqueue") messages still queued"
ok "D-53: while thousands of the backlog are still waiting" \
    test "$(sql "select count(*) from pepsi.workqueue")" -gt 9000
stop_runner
sql "delete from pepsi.workqueue"
: >"$E2E_DIR/done"

# 2. Two senders, one 10x as expensive: shared by worker time. The costs
# are declared by the worker (stages/declared-cost: 300 ms a message of
# slow.example, 30 ms one of fast.example) instead of spent, and the share
# is read from the order of the claims, so a loaded machine cannot bend it
# (issue 12: the 12-second wall-clock window of before gave 46 vs 12 under
# load). The runner's charges and claims are the real ones.
conf2=$E2E_DIR/pepsi-declared.conf
write_conf "$conf2" <<EOF
[stage-work]
PROGRAM = $E2E_STAGES/declared-cost
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF
record_claims
sql "insert into pepsi.workqueue (stage, envelope_sender, state)
          select 'work', 's' || n || '@slow.example', '{\"cost_usec\": 300000}' from generate_series(1, 300) n;
     insert into pepsi.workqueue (stage, envelope_sender, state)
          select 'work', 'f' || n || '@fast.example', '{\"cost_usec\": 30000}' from generate_series(1, 3000) n" >/dev/null
start_runner "$conf2"
wait_for "select count(*) >= 330 from e2e_claims" t 120 >/dev/null
stop_runner
first330="select count(*) filter (where sender_key = 'from:slow.example') || ' ' || count(*) filter (where sender_key = 'from:fast.example')
            from (select sender_key from e2e_claims order by claim_id, workqueue_id limit 330) c"
read -r slow fast <<<"$(sql "$first330")"
note "of the first 330 claimed: $slow of the expensive sender, $fast of the cheap one"
ok "D-49, D-50: the expensive sender got its share too ($slow messages)" test "${slow:-0}" -ge 5
ok "D-50: the cheap sender was claimed several times as often ($fast vs $slow; ~10x expected)" \
    test "${fast:-0}" -ge $((${slow:-0} * 4)) -a "${fast:-0}" -gt 0
sql "drop trigger e2e_claims on pepsi.workqueue; delete from pepsi.workqueue" >/dev/null
: >"$E2E_DIR/done"

# 3. The oldest row while new senders keep arriving, each level with the
# least served (D-54): the FIFO share still reaches it (D-57). The old
# sender's 20 messages are the oldest rows; behind them wait 3,000 new
# senders with one message each (more than the claims read here, so they
# outlast the measurement: issue 12, the feeder of before stopped after 6 s
# and, on a loaded machine, could not outpace the worker at all). Every
# message costs the same (declared, 30 ms). Of the first 300 claims, the
# FIFO share (10 %) takes about 30 oldest rows, which are the old sender's
# 20. The control, FAIR_FIFO_PERCENT = 0: the old sender, once charged,
# ranks behind every new sender at lead 0 and starves.
old_served() { # FIFO_PERCENT: how many of the old sender's 20 the first 300 claims took
    write_conf "$conf2" FAIR_FIFO_PERCENT="$1" <<EOF
[stage-work]
PROGRAM = $E2E_STAGES/declared-cost
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF
    sql "truncate e2e_claims;
         insert into pepsi.workqueue (stage, envelope_sender, state)
              select 'work', 'old@old.example', '{\"cost_usec\": 30000}' from generate_series(1, 20);
         insert into pepsi.workqueue (stage, envelope_sender, state)
              select 'work', format('n%s@new%s.example', k, k), '{\"cost_usec\": 30000}' from generate_series(1, 3000) k" >/dev/null
    start_runner "$conf2" || return 1
    wait_for "select count(*) >= 300 from e2e_claims" t 120 >/dev/null
    stop_runner >/dev/null
    sql "delete from pepsi.workqueue" >/dev/null
    sql "select count(*) filter (where sender_key = 'from:old.example')
           from (select sender_key from e2e_claims order by claim_id, workqueue_id limit 300) c"
}
sql "create trigger e2e_claims after update on pepsi.workqueue for each row execute function e2e_claims_rec()" >/dev/null
with_share=$(old_served 10)
note "of the first 300 claims, the old sender's: $with_share at FAIR_FIFO_PERCENT = 10"
is "$with_share" 20 "D-57: the first sender's 20 messages are all claimed while 3,000 newer senders wait"
without=$(old_served 0)
note "of the first 300 claims, the old sender's: $without at FAIR_FIFO_PERCENT = 0"
ok "D-57 control: at FAIR_FIFO_PERCENT = 0 the first sender starves meanwhile ($without of 20)" \
    test "${without:-20}" -lt 5
sql "drop trigger e2e_claims on pepsi.workqueue" >/dev/null
: >"$E2E_DIR/done"

# 4. FAIR_SCHEDULING = no: strict oldest first (D-41).
sed -i 's/^\[pepsi-dispatch\]$/[pepsi-dispatch]\nFAIR_SCHEDULING = no/' "$conf"
sql "insert into pepsi.workqueue (stage, envelope_sender) select 'work', 'a@big.example' from generate_series(1, 30)"
late=$(sql "select pepsi.workqueue_inject('work', p_envelope_sender => 'b@small.example')")
start_runner "$conf"
ok "FAIR_SCHEDULING = no: all finish" wait_for "select count(*) from pepsi.workqueue" 0 30
is "$(tail -n 1 "$E2E_DIR/done")" "from:small.example $late" "D-41: oldest first: the late sender's message came last"
stop_runner
is "$?" 0 "clean shutdown"
done_testing
