-- Verify pepsi:workqueue_move on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_move(bigint, text, text, text[], int)', 'execute');

rollback;
