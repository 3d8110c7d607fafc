-- Verify pepsi:workqueue_enqueue_options on pg

begin;

select priority, dedupe_key from pepsi.workqueue where false;
select priority, dedupe_key from pepsi.messages where false;
select 'pepsi.workqueue_dedupe_key_idx'::regclass;
select 'pepsi.workqueue_pending_idx'::regclass;
select 'pepsi.workqueue_pending_sender_idx'::regclass;
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_idx'
   and indexdef like '%(stage, owner_slot, priority, workqueue_id) WHERE (status = %';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_sender_idx'
   and indexdef like '%(stage, owner_slot, sender_key, priority, workqueue_id) WHERE (status = %';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_dedupe_key_idx'
   and indexdef like 'CREATE UNIQUE INDEX %(dedupe_key) WHERE (dedupe_key IS NOT NULL)';
select pg_catalog.has_function_privilege('pepsi_worker',
    'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)',
    'execute');
select pg_catalog.has_function_privilege('pepsi_ingress',
    'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)',
    'execute');
select 'pepsi.workqueue_inject_batch(jsonb)'::regprocedure;
select 'pepsi.workqueue_batch_casts(jsonb)'::regprocedure;
select 'pepsi.workqueue_create(pepsi.workqueue_item[], bigint[])'::regprocedure;
select 'pepsi.enqueue_options_check(timestamptz, integer, text, text)'::regprocedure;
select 'pepsi.workqueue_insert(pepsi.workqueue_item[], bigint[], integer[], timestamptz[], text[])'::regprocedure;
select 'pepsi.workqueue_enqueue(pepsi.workqueue_item[], integer[], timestamptz[], text[])'::regprocedure;
select 'pepsi.workqueue_claim(text[], integer[], timestamptz, boolean, bigint, integer)'::regprocedure;
-- The probe by name: claim_mark (issue 19) gives it two more parameters.
select 1 / count(*) from pg_catalog.pg_proc
 where proname = 'workqueue_sender_probe' and pronamespace = 'pepsi'::regnamespace;
select 'pepsi.workqueue_claim_fair(text[], integer[], double precision[], text[], text[], double precision[], integer, text[], integer[], timestamptz, boolean, integer, bigint, double precision[], double precision[], boolean[], integer)'::regprocedure;
select 'pepsi.schema_api()'::regprocedure;
select 1 / (level >= 2 and oldest = 1)::int from pepsi.schema_api();
-- a priority outside the range is refused with its code
do $$
begin
    perform pepsi.workqueue_inject('verify', p_priority => 5000);
    raise exception 'workqueue_inject accepted priority 5000';
exception when sqlstate 'PX052' then
    null;
end
$$;

rollback;
