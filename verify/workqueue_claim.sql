-- Verify pepsi:workqueue_claim on pg

begin;

select pg_catalog.has_function_privilege('pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute');

select 'pepsi.claim_incarnation()'::regprocedure;
select 1 / (pepsi.claim_incarnation() > 0)::int;
select claim_id from pepsi.workqueue where false;

rollback;
