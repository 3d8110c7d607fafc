-- Revert pepsi:stats from pg

begin;

drop function pepsi.stats_flush(int, jsonb, jsonb, timestamptz);
drop table pepsi.dispatch_stats;
drop table pepsi.stage_stats;

commit;
