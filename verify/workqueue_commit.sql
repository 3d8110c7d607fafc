-- Verify pepsi:workqueue_commit on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_commit(text, jsonb, int)', 'execute');

rollback;
