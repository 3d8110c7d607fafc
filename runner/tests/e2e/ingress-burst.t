#!/usr/bin/env bash
# Concurrency and bursts (W-02, W-13, D-32, D-78): 16 parallel clients
# deliver 1,000 distinct events 3 times each, shuffled. Exactly 1,000 events
# and 1,000 messages exist afterwards, every request got 2xx, requests were
# written in bursts (fewer statements than requests), and workqueue was
# notified once per burst at most, not once per event.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 11

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
ok "the ingress starts" start_ingress "$conf"

# A session that listens to workqueue for the whole run and then prints
# every notification it received.
PGAPPNAME=e2e-listener psql -XAt -d "$E2E_DB" -c "listen workqueue" -c "select pg_sleep(120)" \
    >"$E2E_DIR/notify.log" 2>&1 &
listener=$!
sleep 0.5

out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n 1000 -r 3 -S 42 -i evt_)
note "$out"
like "$out" '"requests": 3000, "status_2xx": 3000,' "W-01: 3,000 deliveries, every one answered 2xx"
like "$out" '"errors": 0' "no connection errors"
is "$(sql "select count(*) from pepsi.webhook_events")" 1000 "W-13: exactly 1,000 events"
is "$(sql "select count(distinct external_id) from pepsi.webhook_events")" 1000 "W-13: one per external id"
is "$(sql "select count(*) from pepsi.workqueue")" 1000 "W-13: exactly 1,000 messages, one per event"
is "$(sql "select count(*) from (select state->>'webhook_event' from pepsi.workqueue group by 1 having count(*) > 1) d")" 0 \
   "no event has two messages"
is "$(metric pepsi_ingress_accepted_total)/$(metric pepsi_ingress_duplicate_total)" 1000/2000 \
   "metrics: 1,000 accepted, 2,000 duplicates"
bursts=$(metric pepsi_ingress_bursts_total)
note "bursts: $bursts for 3000 requests"
num_between "$bursts" 1 2999
ok "D-32: concurrent requests were written in bursts (fewer statements than requests)" test $? = 0

sleep 0.5
sql "select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'e2e-listener'" >/dev/null
wait "$listener"
notifies=$(grep -c 'Asynchronous notification "workqueue"' "$E2E_DIR/notify.log")
note "notifications of workqueue: $notifies"
num_between "$notifies" 1 "$bursts"
ok "D-32: at most one NOTIFY workqueue per burst ($notifies for $bursts bursts, 1,000 messages)" test $? = 0
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
