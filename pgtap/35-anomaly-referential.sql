-- Anomaly checks, referential family (W-40): orphaned and contradictory
-- records. Each is silent on a healthy state and fires on a crafted one.

begin;
select plan(19);

create function pg_temp.state_of(p_name text)
returns text language sql as $$ select e.state from pepsi.anomaly_evaluate(p_name, now()) e $$;

-- A healthy state: an event with its message, a processed event, a
-- tombstone for an id never stored, a fresh orphan body (GC's business).
select pepsi.webhook_provider_add('acme', 'github', '{s}', 'deliver');
select webhook_event_id as ev1 from pepsi.webhook_event_ingest('acme', 'e1', 'one'::bytea, '{}', now() - interval '1 hour') \gset
select workqueue_id as done_msg from pepsi.webhook_event_ingest('acme', 'e2', 'two'::bytea, '{}', now() - interval '1 hour') \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :done_msg;
select pepsi.workqueue_finish(:done_msg, 'deliver');
select pepsi.webhook_tombstone_add('acme', 'e3', 'never sent');
insert into pepsi.workqueue_body (body) values ('fresh orphan');
select pepsi.anomaly_refresh();

select is(pg_temp.state_of('messages_missing_body'), 'ok', 'W-40: messages_missing_body is silent');
select is(pg_temp.state_of('messages_missing_event'), 'ok', 'W-40: messages_missing_event is silent');
select is(pg_temp.state_of('bodies_without_message'), 'ok', 'W-40: bodies_without_message is silent');
select is(pg_temp.state_of('unprocessed_events_without_message'), 'ok', 'W-40: unprocessed_events_without_message is silent');
select is(pg_temp.state_of('processed_events_with_live_message'), 'ok', 'W-40: processed_events_with_live_message is silent');
select is(pg_temp.state_of('tombstones_for_existing_events'), 'ok', 'W-40: tombstones_for_existing_events is silent');
select is(pg_temp.state_of('events_of_unknown_provider'), 'ok', 'W-40: events_of_unknown_provider is silent');
select is(pg_temp.state_of('message_event_mismatch'), 'ok', 'W-40: message_event_mismatch is silent');
select is(pg_temp.state_of('reconcile_findings_open'), 'ok', 'reconcile_findings_open is silent');

-- Bad states.
set local session_replication_role = replica;   -- lets a row break the foreign key, as a bug would
insert into pepsi.workqueue (stage, body_id) values ('deliver', 999999999);
set local session_replication_role = origin;
select pepsi.workqueue_inject('deliver', p_state => '{"webhook_event": 888888888}') as orphan \gset
update pepsi.workqueue set webhook_event_id = 888888888 where workqueue_id = :orphan;   -- the link (issue 13), to no event
select pepsi.reconcile();   -- flags that message (before the lost event below exists, which it would repair)
insert into pepsi.workqueue_body (body, created_at) select 'old orphan', now() - interval '1 hour' from generate_series(1, 101);
select webhook_event_id as lost from pepsi.webhook_event_ingest('acme', 'e4', 'four'::bytea, '{}', now() - interval '1 hour') \gset
delete from pepsi.workqueue where state->>'external_id' = 'e4';
select webhook_event_id as marked from pepsi.webhook_event_ingest('acme', 'e5', 'five'::bytea) \gset
select pepsi.webhook_events_mark_processed(array[:marked]::bigint[]);
insert into pepsi.webhook_tombstones (provider, external_id, reason, source) values ('acme', 'e1', 'mistaken', 'operator');
insert into pepsi.webhook_events (provider, external_id, payload) values ('ghost', 'g1', 'x');
update pepsi.workqueue set state = state || '{"external_id": "e-other"}' where state->>'external_id' = 'e1';
select pepsi.anomaly_refresh();

select is(pg_temp.state_of('messages_missing_body'), 'firing', 'W-40: messages_missing_body fires for a message whose body is gone');
select is(pg_temp.state_of('messages_missing_event'), 'firing', 'W-40: messages_missing_event fires for a message naming no event');
select is(pg_temp.state_of('bodies_without_message'), 'firing', 'W-40: bodies_without_message fires past 100 old orphans');
select is(pg_temp.state_of('unprocessed_events_without_message'), 'firing',
          'W-40: unprocessed_events_without_message fires for an event whose message was deleted');
select is(pg_temp.state_of('processed_events_with_live_message'), 'firing',
          'W-40: processed_events_with_live_message fires for an event marked processed under its pending message');
select is(pg_temp.state_of('tombstones_for_existing_events'), 'firing', 'W-40: tombstones_for_existing_events fires');
select is(pg_temp.state_of('events_of_unknown_provider'), 'firing', 'W-40: events_of_unknown_provider fires for provider ghost');
select is((select subject from pepsi.anomaly_evaluate('events_of_unknown_provider')), 'ghost', 'and names it');
select is(pg_temp.state_of('message_event_mismatch'), 'firing', 'W-40: message_event_mismatch fires for a message naming another id');
select is(pg_temp.state_of('reconcile_findings_open'), 'firing', 'reconcile_findings_open fires once a pass flagged something');

select * from finish();
rollback;
