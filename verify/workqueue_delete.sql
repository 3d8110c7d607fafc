-- Verify pepsi:workqueue_delete on pg

begin;

select workqueue_id, stage, status, tube, webhook_event_id, reason, deleted_by, deleted_at
  from pepsi.workqueue_tombstones where false;
select 'pepsi.workqueue_delete(bigint[], text, timestamptz)'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.workqueue_tombstones_event_idx'::regclass;
select 'pepsi.workqueue_tombstones_pkey'::regclass;

rollback;
