#!/usr/bin/env bash
# A forged flood (W-05): 10,000 requests with bad signatures cause no
# database work at all: no row, no statement, no transaction. Checked three
# ways: the statements the test database ran (pg_stat_statements, which
# counts every statement of a client session, unlike pg_stat_database,
# whose transaction counter also moves with autovacuum), the ingress's
# statement counter, and the rows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 9

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
ok "the ingress starts" start_ingress "$conf"

sql "create extension if not exists pg_stat_statements" >/dev/null
# Statements any client ran in the test database, but this test's own
# look at the counters and the ingress's aggregated counter flush (every 30 s,
# never per request).
statements() {
    psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" -c "select coalesce(sum(calls), 0) from pg_stat_statements
                                where dbid = (select oid from pg_database where datname = '$E2E_DB')
                                  and query not like '%pg_stat_statements%'
                                  and query not like '%ingress_stats_flush%'" | tail -n 1
}
xact() { statements; }
sleep 1
before=$(xact)
out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n 10000 -r 1 -f -i forged_)
note "$out"
like "$out" '"requests": 10000, "status_2xx": 0, "status_4xx": 10000,' "W-05: 10,000 forged requests, all refused (4xx)"
is "$(metric 'pepsi_ingress_rejected_total{reason="bad_signature"}')" 10000 "all counted as bad_signature"
is "$(metric pepsi_ingress_bursts_total)" 0 "W-05: the ingress sent no statement"
after=$(xact)
note "statements in $E2E_DB: before $before, after $after"
ok "the statement counts were read" test -n "$before" -a -n "$after"
is "$after" "$before" "W-05: no statement in the database (pg_stat_statements unchanged)"
is "$(sql "select count(*) from pepsi.webhook_events")/$(sql "select count(*) from pepsi.workqueue")" 0/0 \
   "W-05: no event, no message"
is "$(post_sw sw real_1 '{"ok":true}')" 200 "a genuine request right after the flood is stored"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
