-- Verify pepsi:workqueue_delete on pg

begin;

select workqueue_id, stage, status, tube, webhook_event_id, reason, deleted_by, deleted_at
  from pepsi.workqueue_tombstones where false;
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_tombstones_event_idx';
select 'pepsi.workqueue_delete(bigint[], text, timestamptz)'::regprocedure;

rollback;
