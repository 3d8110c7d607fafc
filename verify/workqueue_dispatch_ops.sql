-- Verify pepsi:workqueue_dispatch_ops on pg

begin;

select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_requeue(bigint[], text[], int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_unclaim(bigint[], int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_reset_running(int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_release_paused(timestamptz, int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_defer(bigint[], text[], timestamptz, text, int)', 'execute');
select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int)', 'execute');

rollback;
