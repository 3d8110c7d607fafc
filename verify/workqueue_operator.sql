-- Verify pepsi:workqueue_operator on pg

begin;

select 'pepsi.workqueue_ids_check(bigint[], text)'::regprocedure;
select 'pepsi.workqueue_retry(bigint[], timestamptz)'::regprocedure;
select 'pepsi.workqueue_reroute(bigint[], text, timestamptz)'::regprocedure;
select 'pepsi.workqueue_purge(interval, timestamptz)'::regprocedure;
select 'pepsi.message_history(bigint)'::regprocedure;

rollback;
