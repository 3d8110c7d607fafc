-- Verify pepsi:workqueue_claim_fair on pg

begin;

select 1 / pg_catalog.has_function_privilege('pepsi_runner',
    'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)',
    'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('public',
    'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)',
    'execute'))::int;
select workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost
  from pepsi.workqueue_claim_fair('{}', '{}', '{}', '{}', '{}', '{}');
-- The probe by name: claim_mark (issue 19) gives it two more parameters.
select 1 / count(*) from pg_catalog.pg_proc
 where proname = 'workqueue_sender_probe' and pronamespace = 'pepsi'::regnamespace;
-- The kept leads: UNLOGGED, the owner's only.
select stage, sender_key, incarnation, v from pepsi.fair_lead where false;
select stage, incarnation from pepsi.fair_stage where false;
select 1 / ((select count(*) from pg_catalog.pg_class
             where oid in ('pepsi.fair_lead'::regclass, 'pepsi.fair_stage'::regclass) and relpersistence = 'u') = 2)::int;
select 1 / (not pg_catalog.has_table_privilege('public', 'pepsi.fair_lead', 'select'))::int;
select 1 / (not pg_catalog.has_table_privilege('public', 'pepsi.fair_stage', 'select'))::int;
select 1 / (not pg_catalog.has_table_privilege('pepsi_runner', 'pepsi.fair_lead', 'select'))::int;

-- issue 13: every index of the change, by name.
select 'pepsi.fair_lead_pkey'::regclass;
select 'pepsi.fair_stage_pkey'::regclass;

rollback;
