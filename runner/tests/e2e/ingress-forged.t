#!/usr/bin/env bash
# A forged flood (W-05): 10,000 requests with bad signatures cause no
# database work at all: no row, no statement, no transaction. Checked three
# ways: the database's own transaction counter for the test database
# (pg_stat_database.xact_commit, read from another database, after waiting
# out the statistics flush interval), the ingress's statement counter, and
# the rows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 8

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
ok "the ingress starts" start_ingress "$conf"

# Backends report their counters when idle for a while; wait for the
# start-up queries (schema check, provider load, writers' set-up) to land.
xact() {
    psql -XAtq -d postgres -c "select pg_stat_clear_snapshot();
        select xact_commit + xact_rollback from pg_stat_database where datname = '$E2E_DB'" | tail -n 1
}
sleep 11
before=$(xact)
out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n 10000 -r 1 -f -i forged_)
note "$out"
like "$out" '"requests": 10000, "status_2xx": 0, "status_4xx": 10000,' "W-05: 10,000 forged requests, all refused (4xx)"
is "$(metric 'pepsi_ingress_rejected_total{reason="bad_signature"}')" 10000 "all counted as bad_signature"
is "$(metric pepsi_ingress_bursts_total)" 0 "W-05: the ingress sent no statement"
sleep 11
after=$(xact)
note "transactions in $E2E_DB: before $before, after $after"
is "$after" "$before" "W-05: no transaction in the database (pg_stat_database unchanged)"
is "$(sql "select count(*) from pepsi.webhook_events")/$(sql "select count(*) from pepsi.workqueue")" 0/0 \
   "W-05: no event, no message"
is "$(post_sw sw real_1 '{"ok":true}')" 200 "a genuine request right after the flood is stored"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
