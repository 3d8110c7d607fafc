-- Verify pepsi:workqueue_dispatch_ops on pg

begin;

select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_requeue(bigint[], text[])', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_unclaim(bigint[])', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_reset_running()', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_release_paused(timestamptz)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_defer(bigint[], text[], timestamptz, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_strike(bigint, text, text, text, timestamptz)', 'execute');

rollback;
