-- Verify pepsi:workqueue_resume on pg

begin;

select pg_catalog.has_function_privilege(
    'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])', 'execute');

rollback;
