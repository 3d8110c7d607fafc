-- Verify pepsi:reconcile on pg

begin;

select processed_digest from pepsi.webhook_events where false;
select 1 / count(*) from pg_catalog.pg_trigger
 where tgrelid = 'pepsi.workqueue'::regclass and tgname = 'workqueue_webhook_delivered';
select 1 / count(*) from pg_catalog.pg_trigger
 where tgrelid = 'pepsi.webhook_events'::regclass and tgname = 'webhook_events_processed_digest';
select 1 / count(*) from pepsi.reconcile_settings;
select run_id, trigger, started_at, finished_at, duration_ms, findings, stamp from pepsi.reconcile_runs where false;
select finding_id, run_id, kind, object, provider, external_id, webhook_event_id, workqueue_id, action, detail,
       found_at, resolved_at, resolution
  from pepsi.reconcile_findings where false;
select finding_id from pepsi.reconcile_open where false;
select 1 / pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.reconcile(timestamptz, text, jsonb, boolean)', 'execute')::int;
select 'pepsi.reconcile_stamp()'::regprocedure, 'pepsi.reconcile_unchanged(bigint)'::regprocedure;
select 'pepsi.reconcile_configure(jsonb)'::regprocedure;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.reconcile_digests(bigint, timestamptz, pepsi.reconcile_settings)'::regprocedure;
select 'pepsi.reconcile_flag(bigint, timestamptz, text[], jsonb, boolean)'::regprocedure;
select 'pepsi.reconcile_gaps(bigint, timestamptz, pepsi.reconcile_settings)'::regprocedure;
select 'pepsi.reconcile_links(bigint, timestamptz, pepsi.reconcile_settings)'::regprocedure;
select 'pepsi.reconcile_lost(bigint, timestamptz, pepsi.reconcile_settings)'::regprocedure;
select 'pepsi.reconcile_retention(timestamptz, pepsi.reconcile_settings)'::regprocedure;
select 'pepsi.reconcile_stuck(bigint, timestamptz, pepsi.reconcile_settings, jsonb)'::regprocedure;
select 'pepsi.webhook_event_delivered()'::regprocedure;
select 'pepsi.webhook_event_digest()'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.reconcile_findings_open_key'::regclass;
select 'pepsi.reconcile_findings_pkey'::regclass;
select 'pepsi.reconcile_findings_run_id_idx'::regclass;
select 'pepsi.reconcile_runs_pkey'::regclass;
select 'pepsi.reconcile_settings_pkey'::regclass;

rollback;
