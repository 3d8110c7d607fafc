#!/usr/bin/env bash
# The claim as a prepared statement of the runner's connection (issue 19,
# lib/db DB_PREPARED): parsed and planned once per connection, not at
# every claim; prepared again on a new connection after the old one was
# killed; and prepared again, not failed for ever, when a deploy replaced
# the claim function by one whose result type differs (PostgreSQL then
# refuses the old statement: "cached plan must not change result type",
# 0A000). Planning is counted by pg_stat_statements with track_planning on
# (set on this test's database, read by the runner's sessions at
# connect): an unnamed statement is planned at each call, a prepared one
# five times and then runs its generic plan. With the claim sent unnamed
# (round.c without DB_PREPARED) tests 3, 6 and 10 fail; without
# prepared_forget at disconnect test 7 fails; without prepared_stale
# tests 9 and 10 fail (checked by hand).
. "$(dirname "$0")/lib.sh"
plan 10

sql "create extension if not exists pg_stat_statements" >/dev/null
sql "alter database $E2E_DB set pg_stat_statements.track_planning = on" >/dev/null
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-work]
PROGRAM = pepsi-stage-pass
PARALLELISM = 2
QUEUE_LIMIT = 4
EOF

# "calls plans" of the fair claim's statement in this database.
claim_counts() {
    sql "select coalesce(sum(calls), 0) || ' ' || coalesce(sum(plans), 0) from pg_stat_statements s
                where s.dbid = (select oid from pg_database where datname = current_database())
                  and s.toplevel and s.query like 'select workqueue_id%pepsi.workqueue_claim_fair(%'"
}
# One message at a time, each after the previous one is done: a claim
# (or two) a message.
one_at_a_time() { # one_at_a_time N
    local i
    for i in $(seq 1 "$1"); do
        sql "select pepsi.workqueue_inject('work')" >/dev/null || return 1
        wait_for "select count(*) from pepsi.workqueue" 0 10 >/dev/null || return 1
    done
}

sql "select pg_stat_statements_reset()" >/dev/null
ok "runner starts" start_runner "$conf"
ok "40 messages injected one at a time are done" one_at_a_time 40
read -r calls plans < <(claim_counts)
note "after 40 single messages: $calls claims, $plans of them planned"
ok "issue 19: the claim is planned a few times, not at each of its $calls calls ($plans plans)" \
    test "$plans" -le 10 -a "$calls" -ge 40

# A new connection has none of the old one's statements.
sql "select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and application_name = 'pepsi-runner'" >/dev/null
ok "the runner reconnects after its connection was killed" wait_cmd 20 runner_log_has 'reconnected to the database'
ok "40 more messages are done after the reconnect" one_at_a_time 40
read -r calls2 plans2 < <(claim_counts)
note "after the reconnect: $((calls2 - calls)) claims, $((plans2 - plans)) planned"
ok "the claim is prepared again on the new connection, planned a few times ($((plans2 - plans)))" \
    test "$((plans2 - plans))" -le 10 -a "$((calls2 - calls))" -ge 40
ok "no statement of the old connection was used on the new one" bash -c "! grep -q 'is stale' '$RUNNER_LOG'"

# A deploy replaces the claim function by one whose fifo_credit is a
# bigint: the prepared statement can no longer give its result type.
read -r -d '' swap <<'SQL'
do $$
declare
    f oid := 'pepsi.workqueue_claim_fair'::regproc;
    args text := pg_get_function_arguments(f);
    result text := pg_get_function_result(f);
    ins text;
    outs text;
begin
    -- A function that returns a table has every mode in proargmodes.
    select string_agg(format('%1$I => %1$I', n), ', ' order by o)
      into ins
      from unnest((select proargmodes::text[] from pg_proc where oid = f),
                  (select proargnames from pg_proc where oid = f)) with ordinality a(m, n, o)
     where m = 'i';
    select string_agg(case when n = 'fifo_credit' then 'o.fifo_credit::bigint' else 'o.' || quote_ident(n) end,
                      ', ' order by o)
      into outs
      from unnest((select proargmodes::text[] from pg_proc where oid = f),
                  (select proargnames from pg_proc where oid = f)) with ordinality a(m, n, o)
     where m = 't';
    execute format('alter function %s rename to workqueue_claim_fair_before', f::regprocedure);
    execute format('create function pepsi.workqueue_claim_fair(%s) returns %s language sql as %L',
                   args, replace(result, 'fifo_credit integer', 'fifo_credit bigint'),
                   format('select %s from pepsi.workqueue_claim_fair_before(%s) o', outs, ins));
end $$;
SQL
sql "$swap" >/dev/null
is "$(sql "select count(*) from pg_proc where proname = 'workqueue_claim_fair' and pg_get_function_result(oid) like '%fifo_credit bigint%'")" \
    1 "the claim function was replaced by one that returns fifo_credit as a bigint"
ok "issue 19: 20 messages are done after the replacement (the claim prepared again)" one_at_a_time 20
ok "the runner said its prepared claim was stale" runner_log_has 'prepared statement pepsi_[0-9]+ is stale'
stop_runner
done_testing
