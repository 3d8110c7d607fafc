-- Verify pepsi:webhook_pull on pg

begin;

select pg_catalog.has_function_privilege('pepsi.webhook_events_pull(text, int)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_events_mark_processed(bigint[], timestamptz)', 'execute');
select provider, events, unprocessed, oldest_unprocessed_at, last_received_at
  from pepsi.webhook_event_overview where false;

rollback;
