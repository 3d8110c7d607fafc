#!/usr/bin/env bash
# A lost message (W-21, W-23..W-25, W-41): a webhook event's workqueue row
# deleted by hand while the event is unprocessed is found by the runner's
# next scheduled pass (RECONCILE_INTERVAL), re-injected, and the event is
# processed exactly once; later passes find nothing more. Then the other
# trigger: with the schedule an hour away, an anomaly check that starts
# firing (unprocessed_events_without_message) sends NOTIFY reconcile and
# the runner runs a pass at once.
. "$(dirname "$0")/lib.sh"
plan 18

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" RECONCILE_INTERVAL=2s ANOMALY_INTERVAL=1h <<EOF
[stage-deliver]
PROGRAM = $E2E_STAGES/misbehave
EOF
sql "select pepsi.webhook_provider_add('acme', 'github', '{s}', 'deliver')" >/dev/null
sql "select pepsi.reconcile_configure('{\"lost_after\": \"1 second\"}')" >/dev/null
ev=$(sql "select webhook_event_id from pepsi.webhook_event_ingest('acme', 'evt_lost', '{\"n\": 1}'::bytea)")
sql "select pepsi.webhook_event_ingest('acme', 'evt_fine', '{\"n\": 2}'::bytea)" >/dev/null
sql "delete from pepsi.workqueue where state->>'external_id' = 'evt_lost'" >/dev/null
is "$(sql "select count(*) from pepsi.workqueue")" 1 "the lost event's message is deleted by hand; the other is queued"

delivered() { sql "select count(*) from e2e_done where state->>'external_id' = '$1'"; }
ok "the runner starts" start_runner "$conf"
ok "the other event is delivered and processed" \
    wait_for "select processed_at is not null from pepsi.webhook_events where external_id = 'evt_fine'" t 20
ok "W-21, W-23: the scheduled pass finds the lost message and re-injects it" \
    wait_for "select count(*) from pepsi.reconcile_findings where kind = 'lost_message' and webhook_event_id = $ev" 1 20
is "$(sql "select r.trigger || ' ' || f.action from pepsi.reconcile_findings f join pepsi.reconcile_runs r using (run_id)
            where f.webhook_event_id = $ev")" "schedule reinjected" "W-23: found by a scheduled pass, action reinjected"
ok "W-21: the re-injected message is delivered and marks the event processed" \
    wait_for "select processed_at is not null from pepsi.webhook_events where webhook_event_id = $ev" t 20
ok "the runner logged the finding" runner_log_has 'reconciliation pass run=[0-9]+ \(schedule\): 1 finding'
# More scheduled passes go by: over unchanged data they skip without a
# write (D-139), which the log says.
ok "W-28: passes keep coming on schedule (skipped while nothing changes)" \
    wait_cmd 20 runner_log_has 'reconciliation pass \(schedule\) skipped: nothing changed since the last one'
is "$(delivered evt_lost)" 1 "W-21: the lost event was delivered exactly once"
is "$(delivered evt_fine)" 1 "and the other one exactly once"
is "$(sql "select count(*) from pepsi.reconcile_findings where kind = 'lost_message'")" 1 \
   "W-28: later passes find nothing more"
stop_runner
is "$?" 0 "the runner stops cleanly"

# ---- the other trigger: an anomaly check starts firing (W-41) ----
write_conf "$conf" RECONCILE_INTERVAL=1h ANOMALY_INTERVAL=1s <<EOF
[stage-deliver]
PROGRAM = $E2E_STAGES/misbehave
EOF
ev2=$(sql "select webhook_event_id from pepsi.webhook_event_ingest('acme', 'evt_lost2', '{\"n\": 3}'::bytea)")
sql "delete from pepsi.workqueue where state->>'external_id' = 'evt_lost2'" >/dev/null
sleep 1.2   # older than lost_after
ok "the runner starts again (schedule an hour away, anomaly checks every second)" start_runner "$conf"
ok "W-41: the check unprocessed_events_without_message fires" \
    wait_for "select count(*) from pepsi.anomaly_signal where check_name = 'unprocessed_events_without_message'" 1 20
ok "W-24, W-41: its NOTIFY reconcile runs a pass at once, which re-injects the message" \
    wait_for "select r.trigger from pepsi.reconcile_findings f join pepsi.reconcile_runs r using (run_id)
               where f.webhook_event_id = $ev2" notify 20
ok "W-21: and the event is processed, exactly once" \
    wait_for "select (select processed_at is not null from pepsi.webhook_events where webhook_event_id = $ev2)
                     and (select count(*) from e2e_done where state->>'external_id' = 'evt_lost2') = 1" t 20
ok "W-41: the signal clears at a later run" \
    wait_for "select cleared_at is not null from pepsi.anomaly_signal where check_name = 'unprocessed_events_without_message'" t 20
stop_runner
is "$?" 0 "the runner stops cleanly"
done_testing
