-- Verify pepsi:workqueue_claim_fair on pg

begin;

select 1 / pg_catalog.has_function_privilege('pepsi_runner',
    'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint)',
    'execute')::int;
select 1 / (not pg_catalog.has_function_privilege('public',
    'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint)',
    'execute'))::int;
select workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor
  from pepsi.workqueue_claim_fair('{}', '{}', '{}', '{}', '{}', '{}');

rollback;
