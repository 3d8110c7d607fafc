-- Verify pepsi:webhook_ingest on pg

begin;

select pg_catalog.has_function_privilege('pepsi.webhook_events_ingest(jsonb, bytea)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz)', 'execute');
select refresh_id, webhook_event_id, payload, headers, received_at, recorded_at
  from pepsi.webhook_event_refresh where false;
select 'pepsi.webhook_event_refresh_apply(bigint[], int)'::regprocedure;
select 'pepsi.webhook_event_item(bigint, text, text, bytea, jsonb, timestamptz, text, text, jsonb)'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.webhook_event_refresh_event_idx'::regclass;
select 'pepsi.webhook_event_refresh_pkey'::regclass;

rollback;
