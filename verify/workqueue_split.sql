-- Verify pepsi:workqueue_split on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_split(bigint, text, jsonb)', 'execute');

rollback;
