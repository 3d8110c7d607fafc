-- Revert pepsi:views from pg

begin;

drop view pepsi.stage_totals;
drop view pepsi.failed;
drop view pepsi.stuck;
drop view pepsi.queue_overview;

commit;
