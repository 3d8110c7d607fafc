-- Verify pepsi:workqueue_results on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_advance(bigint, text, text, jsonb)', 'execute');
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_finish(bigint, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb)', 'execute');
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_fail(bigint, text, text, text, jsonb)', 'execute');

rollback;
