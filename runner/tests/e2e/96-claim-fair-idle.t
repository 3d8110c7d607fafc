#!/usr/bin/env bash
# The idle fair claim (issue 19, sqitch change claim_fair_idle) with the
# real runner and its one claiming session: messages that arrive one at a
# time, each into an empty stage, are claimed without probing the senders
# (workqueue_pending_sender_idx is not scanned: the claim took every
# waiting row without ranking), while a backlog deeper than the caps is
# claimed by the full fair claim (the senders probed, the control), and
# after it drains single messages go the idle way again (the session's
# pepsi.claim_fair_full went back to '0'). Fair scheduling is on (the
# default). Scans are read from pg_stat_user_indexes. A backend that
# flushed its statistics less than a second ago keeps the next ones up to
# 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL; a first version of this
# test read them 1.5 s after a backlog and counted its last claims in the
# next phase), or until it exits: each reading waits 11 s, or follows the
# runner's stop. The test itself reads no workqueue index (it polls a
# file). With revert/claim_fair_idle.sql applied first, tests 3 and 6
# fail (checked by hand).
. "$(dirname "$0")/lib.sh"
plan 6

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-work]
PROGRAM = pepsi-stage-exec
PARALLELISM = 2
QUEUE_LIMIT = 4
COMMAND = cat >/dev/null; echo "\$PEPSI_MESSAGE_ID" >> $E2E_DIR/done
EOF
: >"$E2E_DIR/done"
done_lines() { wc -l <"$E2E_DIR/done"; }
done_at_least() { [ "$(done_lines)" -ge "$1" ]; }
# The sender index's scans so far, after SECONDS for the backends'
# statistics to come in.
sender_scans() { # sender_scans SECONDS
    sleep "$1"
    sql "select idx_scan from pg_stat_user_indexes where indexrelname = 'workqueue_pending_sender_idx'"
}
# One message at a time, each after the previous one is done: the stage
# is empty at every claim.
one_at_a_time() { # one_at_a_time N
    local i n0
    n0=$(done_lines)
    for i in $(seq 1 "$1"); do
        sql "select pepsi.workqueue_inject('work', p_envelope_sender => 's$((i % 3))@idle.example', p_body => 'x')" \
            >/dev/null || return 1
        wait_cmd 10 done_at_least $((n0 + i)) || return 1
    done
}

ok "runner starts" start_runner "$conf"
s0=$(sender_scans 11)
ok "20 messages injected one at a time are done" one_at_a_time 20
s1=$(sender_scans 11)
is "$((s1 - s0))" 0 "issue 19: ... claimed without probing the senders (the idle claim: no scan of workqueue_pending_sender_idx)"

# A backlog of 400 from 10 senders, far deeper than the caps: full claims.
n0=$(done_lines)
sql "insert into pepsi.workqueue (stage, envelope_sender)
     select 'work', 'b' || (n % 10) || '@busy.example' from generate_series(1, 400) n; notify workqueue" >/dev/null
ok "a backlog of 400 messages is done" wait_cmd 60 done_at_least $((n0 + 400))
s2=$(sender_scans 11)
ok "issue 19: ... claimed by the full fair claim, which probes the senders ($((s2 - s1)) scans)" \
    test "$((s2 - s1))" -gt 0
one_at_a_time 10 || diag "the 10 single messages after the backlog were not all done"
stop_runner
s3=$(sender_scans 1)
is "$((s3 - s2))" 0 "issue 19: after the backlog, single messages are claimed the idle way again (no sender scan)"
sql "delete from pepsi.workqueue" >/dev/null
done_testing
