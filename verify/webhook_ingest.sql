-- Verify pepsi:webhook_ingest on pg

begin;

select pg_catalog.has_function_privilege('pepsi.webhook_events_ingest(jsonb, bytea)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz)', 'execute');

rollback;
