-- Verify pepsi:workqueue_body_gc on pg

begin;

select pg_catalog.has_function_privilege('pepsi.workqueue_body_gc(int, timestamptz)', 'execute');
select 1 / count(*) from pg_catalog.pg_trigger
 where tgname = 'workqueue_body_release' and tgrelid = 'pepsi.workqueue'::regclass;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.workqueue_body_release()'::regprocedure;

rollback;
