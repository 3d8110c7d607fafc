-- The dead_tuple_ratio check (issue 12) counts dead rows that survived a
-- vacuum, not dead rows waiting for the next one: at full speed most of a
-- queue table is dead rows between two autovacuums, and the old ratio
-- (n_dead_tup over all rows) fired at 0.958 in a healthy steady run.
--
-- It reads PostgreSQL's statistics, which only count committed work, and
-- needs VACUUM, which cannot run in a transaction: this file runs without
-- a surrounding transaction, makes committed rows and garbage in
-- pepsi.workqueue_body (autovacuum off for that table meanwhile, so that
-- only the test's own vacuums run) and removes both at the end. Each
-- vacuum reads every page (disable_page_skipping): one that skips the
-- all-visible pages estimates n_live_tup from the table's old density
-- instead of counting it, and the ratio checked below is over live rows. The xmin
-- horizon is held for real by a second session (dblink) in a repeatable
-- read transaction, as a forgotten session or a long report would.

select plan(10);

create extension if not exists dblink;

-- The check's rows. CI saw the workqueue_body row missing now and then on
-- a loaded machine (tests 5 and 9, or 8 and 9; never reproduced alone):
-- when it is, the statistics are read again (a fresh snapshot) for up to
-- 5 s before giving up, and what the check read is printed. p_wait false:
-- the row is expected to be missing (test 10).
create function pg_temp.dead(p_wait boolean default true)
returns table (state text, value numeric, subject text) language plpgsql
as $$
declare
    v_try int := 0;
begin
    loop
        perform pg_stat_clear_snapshot();
        return query select e.state, round(e.value, 3), e.subject
                       from pepsi.anomaly_evaluate('dead_tuple_ratio', clock_timestamp()) e;
        if not p_wait or found and exists (select 1 from pepsi.anomaly_evaluate('dead_tuple_ratio', clock_timestamp()) e
                                            where e.subject = 'workqueue_body') then
            return;
        end if;
        v_try := v_try + 1;
        if v_try > 25 then
            raise notice 'dead_tuple_ratio has no workqueue_body row; inputs: %',
                (select format('live %s dead %s modified %s vacuumed %s autovacuumed %s; samples %s',
                               t.n_live_tup, t.n_dead_tup, t.n_tup_ins + t.n_tup_upd + t.n_tup_del, t.last_vacuum,
                               t.last_autovacuum,
                               (select string_agg(a.sampled_at || '=' || a.value, ', ' order by a.sampled_at)
                                  from pepsi.anomaly_sample a where a.source = 'table' and a.subject = 'workqueue_body'))
                   from pg_stat_user_tables t where t.relid = 'pepsi.workqueue_body'::regclass);
            return;
        end if;
        perform pg_sleep(0.2);
    end loop;
end
$$;
-- What the check used to compute: dead rows over all rows, now.
create function pg_temp.raw_ratio() returns numeric language sql
as $$ select round(s.n_dead_tup::numeric / nullif(s.n_live_tup + s.n_dead_tup, 0), 3)
        from pg_stat_user_tables s where s.relid = 'pepsi.workqueue_body'::regclass $$;
create function pg_temp.flush() returns void language plpgsql
as $$ begin perform pg_stat_force_next_flush(); end $$;
-- A counter snapshot, as each anomaly_run takes one.
create function pg_temp.snapshot() returns void language sql
as $$ select pepsi.anomaly_sample_take(now()) $$;
create function pg_temp.churn(n int) returns void language sql
as $$ insert into pepsi.workqueue_body (headers) select 'garbage' from generate_series(1, n);
      delete from pepsi.workqueue_body where headers = 'garbage' $$;

alter table pepsi.workqueue_body set (autovacuum_enabled = false);
-- An autovacuum the earlier files' garbage started may still be running:
-- its end would move last_autovacuum under the tests below.
do $$
begin
    for i in 1..600 loop
        exit when not exists (select 1 from pg_stat_progress_vacuum where relid = 'pepsi.workqueue_body'::regclass);
        perform pg_sleep(0.1);
    end loop;
end
$$;
insert into pepsi.workqueue_body (headers) select 'live' from generate_series(1, 2000);
select pg_temp.flush();
select pg_temp.snapshot();
vacuum (disable_page_skipping) pepsi.workqueue_body;
select is((select state from pg_temp.dead() where subject = 'workqueue_body'), 'ok',
          'dead_tuple_ratio is silent right after a vacuum (2000 live rows)');

-- A healthy queue at full speed: a snapshot, a vacuum, then rows die
-- faster than the next autovacuum comes. Most of the table is dead, none
-- of it survived a vacuum.
select pg_temp.snapshot();
vacuum (disable_page_skipping) pepsi.workqueue_body;
select pg_temp.churn(5000);
select pg_temp.flush();
select cmp_ok(pg_temp.raw_ratio(), '>', 0.5::numeric,
              'issue 12: a healthy churn leaves most of the table dead between two vacuums (the old rule fired here)');
select is((select state || ' ' || value from pg_temp.dead() where subject = 'workqueue_body'), 'ok 0.000',
          'issue 12: dead rows waiting for the next vacuum are not counted: silent');
select pg_temp.snapshot();
vacuum (disable_page_skipping) pepsi.workqueue_body;
select pg_temp.churn(5000);
select pg_temp.flush();
select is((select state || ' ' || value from pg_temp.dead() where subject = 'workqueue_body'), 'ok 0.000',
          'issue 12: churn, snapshot, vacuum (that removes them), churn again: still silent');

-- A session holds the xmin horizon while the queue churns: no vacuum can
-- remove what dies after its snapshot.
do $$
begin
    perform dblink_connect('xmin_holder', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                                 split_part(current_setting('unix_socket_directories'), ',', 1)));
    perform dblink_exec('xmin_holder', 'begin isolation level repeatable read');
    perform n from dblink('xmin_holder', 'select count(*) from pepsi.workqueue_body') as t(n bigint);
end
$$;
vacuum (disable_page_skipping) pepsi.workqueue_body;
select pg_temp.churn(5000);
select pg_temp.flush();
select pg_temp.snapshot();
select is((select state from pg_temp.dead() where subject = 'workqueue_body'), 'ok',
          'issue 12: rows dead since the last vacuum, none through a vacuum yet: silent');
vacuum (disable_page_skipping) pepsi.workqueue_body;
select pg_temp.flush();
select cmp_ok((select n_dead_tup from pg_stat_user_tables where relid = 'pepsi.workqueue_body'::regclass), '>=', 5000::bigint,
              'the vacuum could not remove them: the horizon is held');
-- Seen once in CI, not reproduced: 8 and 9 failed after 7 passed. What
-- the check read, for the next time.
select diag(format('dead_tuple_ratio inputs: live %s dead %s modified %s vacuumed %s; samples %s',
                   t.n_live_tup, t.n_dead_tup, t.n_tup_ins + t.n_tup_upd + t.n_tup_del, t.last_vacuum,
                   (select string_agg(a.sampled_at || '=' || a.value, ', ' order by a.sampled_at)
                      from pepsi.anomaly_sample a where a.source = 'table' and a.subject = 'workqueue_body')))
  from pg_stat_user_tables t
 where t.relid = 'pepsi.workqueue_body'::regclass
   and (select state from pg_temp.dead() where subject = 'workqueue_body') is distinct from 'firing';
select is((select state from pg_temp.dead() where subject = 'workqueue_body'), 'firing',
          'issue 12: dead rows that survived a vacuum (the xmin horizon held): firing');
select is((select value from pg_temp.dead() where subject = 'workqueue_body'), round(5000 / 7000.0, 3),
          'its value is the survivors over all rows (5000 of 7000)');

do $$ begin perform dblink_exec('xmin_holder', 'rollback'); perform dblink_disconnect('xmin_holder'); end $$;
vacuum (disable_page_skipping) pepsi.workqueue_body;
select pg_temp.flush();
select is((select state from pg_temp.dead() where subject = 'workqueue_body'), 'ok',
          'the horizon released, the next vacuum removes them: silent again');

-- A table with no snapshot before its last vacuum has no bound yet.
delete from pepsi.anomaly_sample where source = 'table';
select is((select count(*)::int from pg_temp.dead(false) where subject = 'workqueue_body'), 0,
          'no counter snapshot before the last vacuum: no value for that table');

delete from pepsi.workqueue_body where headers = 'live';
vacuum (disable_page_skipping) pepsi.workqueue_body;
alter table pepsi.workqueue_body reset (autovacuum_enabled);
drop extension dblink;
select * from finish();
