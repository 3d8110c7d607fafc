#!/usr/bin/env bash
# MAX_MESSAGES: after that many messages a worker's child is replaced by a
# fresh process once its pipeline has drained. With one worker and
# MAX_MESSAGES = 3, ten messages need at least four processes, none of
# which handles more than three. (misbehave is a program of the test's
# own: D-68 applies to it with or without MAX_MESSAGES; built-ins, issue
# 19: 72-recycle-builtin.t.)
. "$(dirname "$0")/lib.sh"
plan 7

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = $E2E_STAGES/misbehave
PARALLELISM = 1
MAX_MESSAGES = 3
EOF

ok "runner starts" start_runner "$conf"
sql "select pepsi.workqueue_inject('a') from generate_series(1, 10)" >/dev/null
ok "D-68: all ten messages finish" wait_for "select count(*) from pepsi.workqueue" 0 30
is "$(sql "select count(*) from e2e_done")" 10 "D-68: each finished once"
pids=$(sql "select count(distinct pid) from e2e_visit")
note "worker processes: $pids; messages per process: $(sql "select string_agg(n::text, ',') from
      (select count(*) n from e2e_visit group by pid order by min(at)) x")"
ok "D-68: the worker was recycled: at least 4 processes served 10 messages" num_between "$pids" 4 10
is "$(sql "select max(n) from (select count(*) n from e2e_visit group by pid) x")" 3 \
   "D-68: no process handled more than MAX_MESSAGES (3)"
# Issue 19: the successor starts while the recycled worker drains what it
# holds, so two processes may overlap, never three (PARALLELISM 1 + the
# one draining).
is "$(sql "select count(*) from (select pid, min(at) s, max(at) e from e2e_visit group by pid) a
            where (select count(*) from (select pid, min(at) s, max(at) e from e2e_visit group by pid) b
                    where b.s <= a.s and b.e >= a.s) > 2")" 0 \
   "D-68, D-62, issue 19: at most one process beyond PARALLELISM (the one draining) at any time"
stop_runner
is "$?" 0 "D-09: clean shutdown"
done_testing
