-- Issue 19, sqitch change claim_plain_generic: the plain claim is planned
-- once per session (a generic plan, as the fair claim's), not at every
-- call: 4.26M -> 2.85M instructions a call (bench/claim-fair). A generic
-- plan does not know the caps: made on a queue of 1,000 analyzed rows it
-- joined the picked ids to workqueue by a sequential scan and a hash join,
-- and kept that plan for the session (until the next ANALYZE). What is
-- tested: the settings, that the plan kept after six claims reads no row
-- of workqueue sequentially (test 2 fails with plan_cache_mode alone),
-- and that it claims what the plain claim always claimed.

begin;
select plan(4);

select ok((select proconfig @> array['plan_cache_mode=force_generic_plan', 'enable_hashjoin=off', 'enable_mergejoin=off']
             from pg_catalog.pg_proc
            where oid = 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)'::regprocedure),
          'issue 19: the plain claim runs with a generic plan, without hash or merge joins (its settings)');

-- 1,000 rows, analyzed: with plan_cache_mode alone the generic plan
-- joined by a hash join over a sequential scan (auto_explain, by hand:
-- 1,000 rows analyzed in this transaction or vacuumed and analyzed
-- before it; 300 rows vacuumed and analyzed).
insert into pepsi.workqueue (stage, origin_user) select 'pg_a', 's' || (i % 3) from generate_series(1, 1000) i;
analyze pepsi.workqueue;

-- Six claims of one row: the session's plan is made and reused.
do $$
begin
    for i in 1 .. 6 loop
        perform count(*) from pepsi.workqueue_claim('{pg_a,pg_empty}', '{1,1}');
    end loop;
end
$$;

create temp table seen as select pg_stat_get_xact_numscans('pepsi.workqueue'::regclass) as seq_scans;
create temp table got as select * from pepsi.workqueue_claim('{pg_a,pg_empty}', '{16,16}');
select is(pg_stat_get_xact_numscans('pepsi.workqueue'::regclass) - (select seq_scans from seen), 0::bigint,
          'issue 19: the claim''s kept plan finds the picked rows by key: no sequential scan of workqueue');
select is((select count(*)::int from got), 16, 'issue 19: ... and it claims its cap');
select is((select array_agg(workqueue_id order by workqueue_id) from got),
          (select array_agg(workqueue_id order by workqueue_id)
             from (select workqueue_id from pepsi.workqueue where stage = 'pg_a' order by workqueue_id offset 6 limit 16) x),
          'issue 19: ... the oldest pending rows, as before');

select * from finish();
rollback;
