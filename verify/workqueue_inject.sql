-- Verify pepsi:workqueue_inject on pg

begin;

-- By name: workqueue_enqueue_options (issue 16) replaces this signature
-- with a longer one, and its verify names that.
select 1 / count(*)::int from pg_catalog.pg_proc p
 where p.proname = 'workqueue_inject' and p.pronamespace = 'pepsi'::regnamespace;
select pg_catalog.has_function_privilege('pepsi.workqueue_inject_batch(jsonb)', 'execute');
select pg_catalog.has_function_privilege('pepsi.workqueue_item_check(pepsi.workqueue_item, text)', 'execute');
select 'pepsi.workqueue_create(pepsi.workqueue_item[], bigint[])'::regprocedure;
-- issue 11: the door refuses a field over its limit.
do $$
begin
    perform pepsi.workqueue_inject('verify', p_subject => repeat('s', 999));
    raise exception 'workqueue_inject accepted a 999-byte subject';
exception when sqlstate 'PX003' then
    null;
end
$$;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.workqueue_batch_casts(jsonb)'::regprocedure;

rollback;
