-- Revert pepsi:workqueue_body_gc from pg

begin;

drop function pepsi.workqueue_body_gc(int, timestamptz);
drop trigger workqueue_body_release on pepsi.workqueue;
drop function pepsi.workqueue_body_release();

commit;
