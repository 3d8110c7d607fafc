-- Verify pepsi:workqueue_inject on pg

begin;

select pg_catalog.has_function_privilege(
    'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz)', 'execute');
select pg_catalog.has_function_privilege('pepsi.workqueue_inject_batch(jsonb)', 'execute');

rollback;
