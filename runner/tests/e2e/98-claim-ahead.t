#!/usr/bin/env bash
# Claim ahead (issue 19, past D-66/D-67 by design, with QUEUE_LIMIT unset
# only): a worker takes at most 128 ids into one batch (PEPSI_QUEUE_LIMIT)
# but may hold up to four such batches, so that when it answers a batch it
# finds the next one in its pipe while the claim for the slots it freed
# runs; before, it waited for that claim with nothing to do. The hold
# still adapts to the stage's pace (about 20 ms of work a worker) and
# starts at 4. With QUEUE_LIMIT set, a worker holds exactly that at most.
# What a worker holds is read from the database: its rows are running, and
# with PARALLELISM 1 every running row of the stage is held by the one
# worker. A sampler in the database reads the count every 2 ms.
. "$(dirname "$0")/lib.sh"
plan 9

sql "create extension if not exists pg_stat_statements" >/dev/null
N=20000

commit_calls() {
    sql "select coalesce(sum(calls), 0) from pg_stat_statements s
          where s.dbid = (select oid from pg_database where datname = current_database())
            and (s.query like '%pepsi.workqueue_commit%' or s.query like '%pepsi.workqueue_advance%'
                 or s.query like '%pepsi.workqueue_finish%')"
}

# The most rows running at stage a at once while the queue drains, sampled
# in one session (each statement of the loop reads a new snapshot).
sample_running() {
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" >"$E2E_DIR/max-running" <<'SQL' &
do $$
declare
    m int := 0;
    n int;
begin
    for i in 1 .. 30000 loop
        select count(*) into n from pepsi.workqueue where stage = 'a' and status = 'running';
        m := greatest(m, n);
        exit when not exists (select 1 from pepsi.workqueue where stage = 'a') and i > 50;
        perform pg_sleep(0.002);
    end loop;
    perform set_config('e2e.max_running', m::text, false);
end
$$;
select current_setting('e2e.max_running');
SQL
    SAMPLER=$!
}

run_pass() { # QUEUE_LIMIT-line NAME -> MAX_RUNNING, CALLS, RUNNER_LOG
    local conf=$E2E_DIR/ca-$2.conf
    write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
$1
EOF
    sql "select pg_stat_statements_reset()" >/dev/null
    sql "insert into pepsi.workqueue (stage) select 'a' from generate_series(1, $N)"
    sample_running
    start_runner "$conf" -L debug
    wait_for "select count(*) from pepsi.workqueue" 0 120 >/dev/null
    stop_runner
    wait "$SAMPLER"
    MAX_RUNNING=$(cat "$E2E_DIR/max-running")
    CALLS=$(commit_calls)
}

run_pass "" adaptive
note "QUEUE_LIMIT unset: at most $MAX_RUNNING held, $CALLS commits for $N messages"
HANDED=$(max_handed)
ok "unset, with a backlog of fast messages: the worker holds more than one batch of 128 ($MAX_RUNNING)" \
    num_between "$MAX_RUNNING" 129 512
ok "unset: ... and never more than four batches (512)" num_between "$MAX_RUNNING" 1 512
# The hold's top is 512 or the stage's pace (about 20 ms of work), which a
# slow build (ASan) may put lower: more than one batch either way.
ok "unset: the hold grows past one batch, to 512 ids a worker at most (${HANDED:-none})" \
    num_between "${HANDED:-0}" 129 512 || diag "$(grep handing "$RUNNER_LOG" | head)"
ok "unset: batches of at most 128 (D-69 by PEPSI_QUEUE_LIMIT): at least N/128 commits ($CALLS)" \
    num_between "$CALLS" $((N / 128)) $((N / 16))
is "$(sql "select count(*) from pepsi.workqueue")" 0 "unset: every message finished"
is "$(sql "select count(*) from pepsi.workqueue_history where outcome = 'finished'")" $N \
    "unset: each once (no id handed twice)"

sql "truncate pepsi.workqueue_history" >/dev/null
run_pass "QUEUE_LIMIT = 64" fixed
note "QUEUE_LIMIT = 64 set: at most $MAX_RUNNING held, $CALLS commits"
ok "QUEUE_LIMIT = 64 set: the worker holds at most 64 (D-66, D-67) ($MAX_RUNNING)" num_between "$MAX_RUNNING" 1 64
ok "set: ... and some batches were full, so the sampler saw the hold ($MAX_RUNNING)" num_between "$MAX_RUNNING" 33 64
is "$(sql "select count(*) from pepsi.workqueue_history where outcome = 'finished'")" $N "set: every message finished once"
