#!/usr/bin/env bash
# Enqueue options against a live `pepsi-runner serve` (issue 16):
#   - p_run_at: a message injected with run_at = now() + 3 s waits paused,
#     is not processed before run_at, and is processed within the
#     documented bound after it (about a second: the dispatcher's tick
#     learns the new time from the inject's NOTIFY and its paused timer
#     fires at run_at). POLL_INTERVAL is 60 s, so the heartbeat is not what
#     brings it.
#   - p_priority: with PARALLELISM 1 and QUEUE_LIMIT 1, messages injected
#     in one transaction are processed lowest priority first, then by id:
#     with the fair claim (FAIR_SCHEDULING, the default), then with the
#     plain one (FAIR_SCHEDULING = no, a second runner).
#   - p_dedupe_key: injected twice (in one transaction, and by two
#     sessions at once) it yields one message, processed once.
# The order and times are read from pepsi.workqueue_history (ended_at).
. "$(dirname "$0")/lib.sh"
plan 16

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" POLL_INTERVAL=60s <<EOF
[stage-d]
PROGRAM = pepsi-stage-pass

[stage-p]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
QUEUE_LIMIT = 1

[stage-k]
PROGRAM = pepsi-stage-pass
EOF

ok "the runner starts" start_runner "$conf"
# one message through d first, so that its worker is up: the delay test
# then measures the dispatcher, not a worker's start
sql "select pepsi.workqueue_inject('d')" >/dev/null
ok "a first message passes" wait_for "select count(*) from pepsi.workqueue" 0 20

# ---- run_at ----
id=$(sql "select pepsi.workqueue_inject('d', p_run_at => now() + interval '3 seconds')")
is "$(sql "select status from pepsi.workqueue where workqueue_id = $id")" paused \
   "issue 16: a message with run_at 3 s ahead waits paused"
sleep 1
# read with the database's clock: on a loaded machine the check may come late
is "$(sql "select coalesce((select status::text from pepsi.workqueue where workqueue_id = $id), 'gone')
               || case when clock_timestamp() < (select arrived_at + interval '3 seconds'
                                                   from pepsi.messages where workqueue_id = $id)
                       then '' else ' (checked after run_at)' end")" paused \
   "issue 16: 1 s later it is still waiting (not processed before run_at)"
ok "issue 16: it is processed after run_at" wait_for "select count(*) from pepsi.workqueue_history where workqueue_id = $id" 1 10
late=$(sql "select round(extract(epoch from h.ended_at - (h.arrived_at + interval '3 seconds')) * 1000)
              from pepsi.workqueue_history h where h.workqueue_id = $id")
note "processed ${late} ms after run_at"
ok "issue 16: not before run_at ($late ms after)" test "$late" -ge 0
ok "issue 16: within the documented bound, 1 s after run_at ($late ms; POLL_INTERVAL is 60 s)" test "$late" -le 1000

# ---- priority ----
ids=$(sql "select string_agg(pepsi.workqueue_inject('p', p_priority => v.p)::text, ' ' order by v.n)
             from (values (1, 5), (2, 0), (3, -3), (4, 0), (5, 10), (6, -3)) v(n, p)")
read -r p1 p2 p3 p4 p5 p6 <<<"$ids"
ok "six messages of mixed priority are processed" \
   wait_for "select count(*) from pepsi.workqueue_history where stage = 'p'" 6 20
is "$(sql "select string_agg(workqueue_id::text, ' ' order by ended_at, workqueue_id)
             from pepsi.workqueue_history where stage = 'p'")" "$p3 $p6 $p2 $p4 $p1 $p5" \
   "issue 16: with PARALLELISM 1 they ran lowest priority first, then by id (fair claim)"

# ---- dedupe_key ----
is "$(sql "select count(distinct x.id) from (select pepsi.workqueue_inject('k', p_dedupe_key => 'once') as id
                                               union all
                                               select pepsi.workqueue_inject('k', p_dedupe_key => 'once')) x")" 1 \
   "issue 16: the same dedupe key twice gives one id"
# two sessions at once: the first holds its insert 1 s before committing;
# the second waits on the key and then answers the first's id. The row is
# delayed 3 s so that it is still live when the second looks it up.
(sql "begin; select pepsi.workqueue_inject('k', p_dedupe_key => 'race', p_run_at => now() + interval '3 seconds');
      select pg_sleep(1); commit;" >"$E2E_DIR/race1" 2>&1) &
race=$!
sleep 0.3
sql "select pepsi.workqueue_inject('k', p_dedupe_key => 'race', p_run_at => now() + interval '3 seconds')" \
    >"$E2E_DIR/race2" 2>&1
wait "$race"
is "$(head -n 1 "$E2E_DIR/race2")" "$(head -n 1 "$E2E_DIR/race1")" \
   "issue 16: two concurrent injects with one key answer the same id (the row the first committed)"
ok "the keyed messages are processed" wait_for "select count(*) from pepsi.workqueue where stage = 'k'" 0 20
is "$(sql "select count(*) from pepsi.workqueue_history where stage = 'k'")" 2 \
   "issue 16: one message per key was processed (once, race)"

stop_runner

# ---- priority, plain claim ----
write_conf "$conf" POLL_INTERVAL=60s FAIR_SCHEDULING=no <<EOF
[stage-p]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
QUEUE_LIMIT = 1
EOF
ok "a runner with FAIR_SCHEDULING = no starts" start_runner "$conf"
ids=$(sql "select string_agg(pepsi.workqueue_inject('p', p_priority => v.p)::text, ' ' order by v.n)
             from (values (1, 5), (2, 0), (3, -3), (4, 0), (5, 10), (6, -3)) v(n, p)")
read -r p1 p2 p3 p4 p5 p6 <<<"$ids"
ok "six more messages of mixed priority are processed" \
   wait_for "select count(*) from pepsi.workqueue_history where stage = 'p' and workqueue_id >= $p1" 6 20
is "$(sql "select string_agg(workqueue_id::text, ' ' order by ended_at, workqueue_id)
             from pepsi.workqueue_history where stage = 'p' and workqueue_id >= $p1")" "$p3 $p6 $p2 $p4 $p1 $p5" \
   "issue 16: with PARALLELISM 1 they ran lowest priority first, then by id (plain claim)"

stop_runner
done_testing
