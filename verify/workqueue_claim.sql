-- Verify pepsi:workqueue_claim on pg

begin;

select pg_catalog.has_function_privilege('pepsi.workqueue_claim(text[], int[], timestamptz)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_claim(text[], int[], timestamptz)', 'execute');

rollback;
