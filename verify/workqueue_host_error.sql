-- Verify pepsi:workqueue_host_error on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker',
    'pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz)', 'execute');

rollback;
