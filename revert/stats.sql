-- Revert pepsi:stats from pg

begin;

drop function pepsi.stage_served_live();
drop function pepsi.stage_served_publish(int, jsonb);
drop table pepsi.stage_served;
drop function pepsi.stats_flush(int, jsonb, jsonb, timestamptz);
drop table pepsi.dispatch_stats;
drop table pepsi.stage_stats;

commit;
