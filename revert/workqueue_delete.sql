-- Revert pepsi:workqueue_delete from pg

begin;

drop function pepsi.workqueue_delete(bigint[], text, timestamptz);
drop table pepsi.workqueue_tombstones;

commit;
