-- Verify pepsi:webhook_events on pg

begin;

select webhook_event_id, provider, external_id, payload, headers, received_at, processed_at
  from pepsi.webhook_events where false;
select 1 / count(*) from pg_catalog.pg_trigger
 where tgrelid = 'pepsi.workqueue'::regclass and tgname = 'workqueue_webhook_finished';

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.webhook_event_finished()'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.webhook_events_pkey'::regclass;
select 'pepsi.webhook_events_provider_external_id_key'::regclass;
select 'pepsi.webhook_events_unprocessed_idx'::regclass;

rollback;
