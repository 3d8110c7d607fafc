-- Verify pepsi:webhook_events on pg

begin;

select webhook_event_id, provider, external_id, payload, headers, received_at, processed_at
  from pepsi.webhook_events where false;
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'webhook_events_provider_external_id_key';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'webhook_events_unprocessed_idx';
select 1 / count(*) from pg_catalog.pg_trigger
 where tgrelid = 'pepsi.workqueue'::regclass and tgname = 'workqueue_webhook_finished';

rollback;
