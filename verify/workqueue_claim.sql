-- Verify pepsi:workqueue_claim on pg

begin;

select pg_catalog.has_function_privilege('pepsi.workqueue_claim(text[], int[], timestamptz, boolean)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean)', 'execute');

rollback;
