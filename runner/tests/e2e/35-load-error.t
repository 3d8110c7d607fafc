#!/usr/bin/env bash
# D-99, D-103 (issue 12): only a lost connection is status 74. A load query
# that the database refuses for another reason (here: the workers' role
# may no longer execute pepsi.settings_for, which the load calls) is a
# host error of the stage: paused with state.last_error and
# state.temporary_failures, retried with backoff (D-104, D-105), given up
# after MAX_LIFETIME (D-108, D-109) and then counted failed (D-80). Before,
# every such error was answered 74 and deferred every 30 s for ever.
# Both load paths: one message at a time (exec loads the body, D-73) and a
# batch (if loads metadata only, D-69, D-70).
. "$(dirname "$0")/lib.sh"
plan 14

role=e2e_worker_$$
sql "create role $role login in role pepsi_worker" >/dev/null || exit 1

conf=$E2E_DIR/pepsi.conf
{
    write_conf /dev/stdout <<EOF
[stage-e]
PROGRAM = pepsi-stage-exec
COMMAND = true
PARALLELISM = 1
QUEUE_LIMIT = 1

[stage-i]
PROGRAM = pepsi-stage-if
CONDITION = tube ~ "x"
THEN = done
ELSE = done
PARALLELISM = 1
QUEUE_LIMIT = 8
FUSION = no

[stage-done]
PROGRAM = pepsi-stage-discard
EOF
} | sed "/^CONNINFO = /a WORKER_CONNINFO = host=$PGHOST port=$PGPORT user=$role dbname=$E2E_DB" >"$conf"

# The load's correlated settings lookup is refused: SQLSTATE 42501, an SQL
# error with a healthy connection.
sql "revoke execute on function pepsi.settings_for(jsonb, text, text[]) from pepsi_worker" >/dev/null
e=$(sql "select pepsi.workqueue_inject('e')")
old=$(sql "select pepsi.workqueue_inject('e', p_arrived_at => now() - interval '121 hours')")
batch=$(sql "select pepsi.workqueue_inject('i') from generate_series(1, 3)" | paste -sd,)

ok "runner starts (workers log in as $role)" start_runner "$conf"
ok "D-103, D-104: a load refused by the database is a host error: paused, temporary_failures 1" \
    wait_for "select status || '/' || stage || '/' || (state->'temporary_failures'->>'e')
                from pepsi.workqueue where workqueue_id = $e" "paused/e/1" 20
like "$(sql "select state->>'last_error' from pepsi.workqueue where workqueue_id = $e")" \
     '^stage e: cannot load the message: permission denied for function settings_for \(sqlstate 42501\)$' \
     "D-104: state.last_error says what the database refused"
is "$(sql "select round(extract(epoch from timeout - now()) / 60) from pepsi.workqueue where workqueue_id = $e")" 1 \
   "D-105: retried after 1 minute, not deferred 30 s"
ok "D-106: logged as a host error under the stage's name" \
    runner_log_has "WARNING: +e: \[[0-9]+\] host error on message $e: stage e: cannot load the message"
ok "D-99: not answered as a lost connection (no 74 deferral)" \
    bash -c "! grep -q 'lost its database connection' '$RUNNER_LOG'"

ok "D-108, D-109: past MAX_LIFETIME the same error fails the message, retries-exhausted" \
    wait_for "select failure_class || '/' || failed_stage from pepsi.failed where workqueue_id = $old" \
    "retries-exhausted/e" 20
ok "D-80: counted failed in stage_stats" \
    wait_for "select failed || '/' || succeeded from pepsi.stage_stats where stage = 'e'" "1/1" 10

ok "D-70, D-103: a batch whose load is refused: each message a host error of its own" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id in ($batch) and status = 'paused'
                and state->'temporary_failures'->>'i' = '1'
                and state->>'last_error' like 'stage i: cannot load the message: permission denied%'" 3 20
is "$(sql "select count(*) from pepsi.workqueue where state->>'last_error' like '%lost its database connection%'")" 0 \
   "D-99: none of them deferred as a lost connection"
ok "D-70: the three were loaded as one batch" runner_log_has 'i: \[[0-9]+\] cannot load a batch: permission denied'

# The grant is back and the retries are due (the clock moved here).
sql "grant execute on function pepsi.settings_for(jsonb, text, text[]) to pepsi_worker;
     update pepsi.workqueue set timeout = now() where status = 'paused'" >/dev/null
ok "D-105: once the host is fixed, the retries finish every message" \
    wait_for "select count(*) from pepsi.workqueue where status <> 'failed'" 0 30
is "$(sql "select count(*) from pepsi.workqueue")" 1 "only the message past MAX_LIFETIME is left, failed"
stop_runner
is "$?" 0 "D-09: clean shutdown"
sql "drop role $role" >/dev/null 2>&1
done_testing
