-- Revert pepsi:tubes from pg

begin;

drop function pepsi.tube_pause(text, int, timestamptz);
drop function pepsi.tube_stats(text, timestamptz);
drop view pepsi.tubes;
drop function pepsi.tube_locate(text);
drop function pepsi.tube_pause_current(timestamptz, boolean);
drop index pepsi.workqueue_tube_idx;
drop table pepsi.tube_pause;

commit;
