#!/usr/bin/env bash
# Concurrency and bursts (W-02, W-13, D-32): 16 parallel clients deliver
# 1,000 distinct events 3 times each, shuffled. Exactly 1,000 events and
# 1,000 messages exist afterwards and every request got 2xx. D-32 is
# asserted from the database's side, not from the ingress's own counters:
# pg_stat_statements (nested statements tracked for this database) counts
# the statements that called webhook_events_ingest — fewer than the
# requests, one per burst, returning one row per request — and the
# notifications sent inside them (pg_notify; at most one per burst, where
# one per event would show as 1,000). One commit per burst: each of those
# statements ran on its own, in autocommit (no BEGIN, COMMIT or SAVEPOINT
# reached the database). pg_stat_database's commit count cannot say it:
# autovacuum's transactions land in it too (hundreds after such a load). (How many notifications a listener receives proves nothing:
# PostgreSQL folds identical NOTIFYs of one transaction by itself.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 15

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
sql "create extension if not exists pg_stat_statements" >/dev/null
# Nested statements too (the NOTIFY inside the ingest function), for every
# session of this database opened from now on: the ingress's writers.
sql "alter database $E2E_DB set pg_stat_statements.track = 'all'" >/dev/null
ok "the ingress starts" start_ingress "$conf"

# The database's own counts, for this database only.
stmt_calls() { # stmt_calls WHERE: calls of the statements matching WHERE (s. is pg_stat_statements)
    sql "select coalesce(sum(s.calls), 0) from pg_stat_statements s join pg_database d on d.oid = s.dbid
          where d.datname = current_database() and s.query !~ 'pg_stat_statements' and ($1)"
}
sql "select pg_stat_statements_reset()" >/dev/null

out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n 1000 -r 3 -S 42 -i evt_)
note "$out"
like "$out" '"requests": 3000, "status_2xx": 3000,' "W-01: 3,000 deliveries, every one answered 2xx"
like "$out" '"errors": 0' "no connection errors"
is "$(sql "select count(*) from pepsi.webhook_events")" 1000 "W-13: exactly 1,000 events"
is "$(sql "select count(distinct external_id) from pepsi.webhook_events")" 1000 "W-13: one per external id"
is "$(sql "select count(*) from pepsi.workqueue")" 1000 "W-13: exactly 1,000 messages, one per event"
is "$(sql "select count(*) from (select state->>'webhook_event' from pepsi.workqueue group by 1 having count(*) > 1) d")" 0 \
   "no event has two messages"
is "$(sql "select count(distinct webhook_event_id) from pepsi.workqueue w join pepsi.webhook_events e using (webhook_event_id)
           where w.webhook_event_id = (w.state->>'webhook_event')::bigint")" 1000 \
   "issue 13: each message is linked to its event by webhook_event_id, which state.webhook_event repeats"
is "$(metric pepsi_ingress_accepted_total)/$(metric pepsi_ingress_duplicate_total)" 1000/2000 \
   "metrics: 1,000 accepted, 2,000 duplicates"

bursts=$(metric pepsi_ingress_bursts_total)
ingest_calls=$(stmt_calls "s.toplevel and s.query ~ 'pepsi\\.webhook_events_ingest\\('")
ingest_rows=$(sql "select coalesce(sum(s.rows), 0) from pg_stat_statements s join pg_database d on d.oid = s.dbid
                    where d.datname = current_database() and s.toplevel and s.query ~ 'pepsi\\.webhook_events_ingest\\('")
# pg_notify's rows: one per notification sent, also when one statement
# sends several (SELECT pg_notify(...) FROM a set).
notify_calls=$(sql "select coalesce(sum(s.rows), 0) from pg_stat_statements s join pg_database d on d.oid = s.dbid
                     where d.datname = current_database() and s.query ~* 'pg_notify\\('")
xact_calls=$(stmt_calls "s.toplevel and s.query ~* '^\\s*(begin|start\\s+transaction|commit|end|rollback|savepoint|release|prepare\\s+transaction)\\M'")
note "bursts (ingress): $bursts; ingest statements (database): $ingest_calls returning $ingest_rows rows;" \
     "notifications sent: $notify_calls; transaction-control statements: $xact_calls"
is "$ingest_calls" "$bursts" "D-32: the database ran one ingest statement per burst the ingress counted"
num_between "$ingest_calls" 1 1500
ok "D-32: 3,000 requests took at most 1,500 statements (bursts: $ingest_calls)" test $? = 0
is "$ingest_rows" 3000 "D-32: those statements stored every request (one row per event)"
num_between "$notify_calls" 1 "$ingest_calls"
ok "D-32: at most one NOTIFY ran per burst ($notify_calls for $ingest_calls bursts, 1,000 messages)" test $? = 0
is "$xact_calls" 0 "D-32: one commit per burst: each ingest statement ran alone in autocommit (no BEGIN/COMMIT)"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
