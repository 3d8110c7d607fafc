-- Verify pepsi:worker_api on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.worker_load(text, bigint[], boolean)', 'execute');

rollback;
