-- Verify pepsi:workqueue_commit on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_commit(text, jsonb, int)', 'execute');

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.workqueue_commit_casts(jsonb)'::regprocedure;

rollback;
