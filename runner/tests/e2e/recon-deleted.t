#!/usr/bin/env bash
# A message deleted on purpose stays deleted (issue 12, W-21): a webhook
# event's message fails; the operator deletes it with
# pepsi.workqueue_delete, which leaves a tombstone. The runner's passes
# (every second) and anomaly runs (every second) go by: the event is not
# re-injected, not delivered, and no check counts it as lost. Beside it,
# a message deleted by a plain DELETE is still found as lost and
# re-injected (nobody said it was on purpose). Removing the tombstone
# takes the decision back: the next pass re-injects the event.
. "$(dirname "$0")/lib.sh"
plan 16

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" RECONCILE_INTERVAL=1s ANOMALY_INTERVAL=1s <<EOF
[stage-deliver]
PROGRAM = $E2E_STAGES/misbehave
EOF
sql "select pepsi.webhook_provider_add('acme', 'github', '{s}', 'deliver')" >/dev/null
sql "select pepsi.reconcile_configure('{\"lost_after\": \"1 second\"}')" >/dev/null
poison=$(sql "select webhook_event_id from pepsi.webhook_event_ingest('acme', 'evt_poison', '{\"n\": 1}'::bytea)")
sql "update pepsi.workqueue set state = state || '{\"do\": \"fail-once\"}' where state->>'external_id' = 'evt_poison'" >/dev/null
lost=$(sql "select webhook_event_id from pepsi.webhook_event_ingest('acme', 'evt_lost', '{\"n\": 2}'::bytea)")
sql "delete from pepsi.workqueue where state->>'external_id' = 'evt_lost'" >/dev/null

delivered() { sql "select count(*) from e2e_done where state->>'external_id' = '$1'"; }
ok "the runner starts" start_runner "$conf"
ok "the poison event's message fails" \
    wait_for "select status from pepsi.workqueue where state->>'external_id' = 'evt_poison'" failed 20
msg=$(sql "select workqueue_id from pepsi.workqueue where state->>'external_id' = 'evt_poison'")
deleted_at=$(sql "select now()")
is "$(sql "select pepsi.workqueue_delete(array[$msg], 'sent by mistake, the provider says')")" 1 \
   "issue 12: the operator deletes it with workqueue_delete"
ok "W-21: the message deleted by hand is found lost, re-injected and delivered" \
    wait_for "select processed_at is not null from pepsi.webhook_events where webhook_event_id = $lost" t 20
# A pass runs after the deletion (it changed the data), then passes over
# unchanged data are skipped (D-139); each would re-inject the event.
ok "passes ran after the deletion" \
    wait_for "select count(*) > 0 from pepsi.reconcile_runs where started_at > '$deleted_at'" t 20
sleep 3 # more scheduled passes and anomaly runs
is "$(sql "select count(*) from pepsi.reconcile_findings where kind = 'lost_message' and webhook_event_id = $poison")" 0 \
   "issue 12: no pass found the deleted message lost"
is "$(sql "select count(*) from pepsi.workqueue where state->>'external_id' = 'evt_poison'")" 0 \
   "issue 12: no message was made for its event"
is "$(delivered evt_poison)" 0 "issue 12: it was not delivered"
is "$(sql "select processed_at is null from pepsi.webhook_events where webhook_event_id = $poison")" t \
   "the event is left unprocessed: it never reached its destination"
is "$(sql "select count(*) from pepsi.reconcile_findings where kind = 'message_failed' and resolved_at is null")" 0 \
   "the failed-message finding cleared with the message"
is "$(sql "select state from pepsi.anomaly_state where check_name = 'unprocessed_events_without_message'")" ok \
   "issue 12: the lost-message check is silent about it"
is "$(sql "select unprocessed from pepsi.anomaly_event_mv where provider = 'acme'")" 0 \
   "issue 12: and the latency checks do not count it as waiting"

sql "delete from pepsi.workqueue_tombstones where webhook_event_id = $poison" >/dev/null
ok "issue 12: without its tombstone, the next pass re-injects the event" \
    wait_for "select count(*) from pepsi.reconcile_findings where kind = 'lost_message' and webhook_event_id = $poison" 1 20
ok "and it is delivered, once" \
    wait_for "select (select processed_at is not null from pepsi.webhook_events where webhook_event_id = $poison)
                     and (select count(*) from e2e_done where state->>'external_id' = 'evt_poison') = 1" t 20
is "$(delivered evt_lost)" 1 "the lost one was delivered exactly once"
stop_runner
is "$?" 0 "the runner stops cleanly"
done_testing
