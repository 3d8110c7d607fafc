-- The dead_tuple_ratio check reads PostgreSQL's statistics, which only
-- count committed work: this file runs without a surrounding transaction,
-- makes committed rows and garbage in pepsi.workqueue_body and removes
-- both at the end (autovacuum is off for that table meanwhile, so it cannot clean
-- up first).

select plan(3);

create function pg_temp.dead_ratio_state() returns text language sql
as $$ select e.state from pepsi.anomaly_evaluate('dead_tuple_ratio', now()) e $$;

alter table pepsi.workqueue_body set (autovacuum_enabled = false);
insert into pepsi.workqueue_body (headers) select 'live' from generate_series(1, 2000);
vacuum pepsi.workqueue, pepsi.workqueue_body, pepsi.webhook_events;
do $$ begin perform pg_stat_force_next_flush(); end $$;
select is(pg_temp.dead_ratio_state(), 'ok', 'dead_tuple_ratio is silent right after a vacuum (2000 live rows)');

insert into pepsi.workqueue_body (headers) select 'garbage' from generate_series(1, 5000);
delete from pepsi.workqueue_body where headers = 'garbage';
do $$ begin perform pg_stat_force_next_flush(); end $$;
select is(pg_temp.dead_ratio_state(), 'firing', 'dead_tuple_ratio fires when most of a queue table is dead rows');
select is((select subject from pepsi.anomaly_evaluate('dead_tuple_ratio', now())), 'workqueue_body', 'and names the table');

delete from pepsi.workqueue_body where headers = 'live';
vacuum pepsi.workqueue_body;
alter table pepsi.workqueue_body reset (autovacuum_enabled);
select * from finish();
