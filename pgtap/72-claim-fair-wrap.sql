-- Issue 19, sqitch change claim_fair_wrap: the wrap-around of the fair
-- claim's window (D-60: from the first sender up to where the window
-- started) is a PL/pgSQL function, workqueue_sender_wrap, called from the
-- claim's statement instead of three branches inlined into its plan,
-- which is started at every claim. What must not change: the window's
-- senders and their order, window_next and window_lap (pgTAP 13 has the
-- wrap-around at 200 senders; pgTAP 70 the marked stage's, from its list).
-- The cost: bench/claim-fair (instructions a call).

begin;
select plan(8);

select is((select l.lanname::text || ' ' || p.provolatile::text || ' ' || p.prorows
             from pg_catalog.pg_proc p join pg_catalog.pg_language l on l.oid = p.prolang
            where p.oid = 'pepsi.workqueue_sender_wrap(text, text, int, int, int, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure),
          'plpgsql s 16',
          'issue 19: the wrap-around is a PL/pgSQL function (stable: the claim''s snapshot; planned at 16 rows a call)');
select ok((select p.prosrc ~ 'pepsi\.workqueue_sender_wrap\(' and p.prosrc !~ 'from win2 w cross join lateral'
             from pg_catalog.pg_proc p
            where p.oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure),
          'issue 19: the fair claim calls it; its statement has no recursive wrap-around of its own');

-- wrap_a: ten senders w0..w9, two rows each, arriving interleaved.
insert into pepsi.workqueue (stage, origin_user)
select 'wrap_a', 'w' || (i % 10) from generate_series(1, 20) i;

-- The function alone: after the 3 senders the window holds, the senders
-- from the first up to w6 (inclusive), numbered from 4. A probe reads 16
-- entries, so it yields w0..w6 at once (the claim keeps those numbered up
-- to the window's size).
select is((select array_agg(w.n::text || ':' || w.sender_key order by w.n)
             from pepsi.workqueue_sender_wrap('wrap_a', 'user:w6', 3, 5, 0, null, null, null, null,
                                              (-32768)::smallint, (-9223372036854775808)::bigint) w),
          '{4:user:w0,5:user:w1,6:user:w2,7:user:w3,8:user:w4,9:user:w5,10:user:w6}'::text[],
          'D-60: the wrap-around yields the senders from the first up to p_after, numbered after the window''s own');
select is((select array_agg(cardinality(w.ids) order by w.n)
             from pepsi.workqueue_sender_wrap('wrap_a', 'user:w6', 3, 5, 0, null, null, null, null,
                                              (-32768)::smallint, (-9223372036854775808)::bigint) w),
          '{2,2,2,2,2,2,2}'::int[], 'D-60: ... each with its rows read');
select is((select count(*)::int
             from pepsi.workqueue_sender_wrap('wrap_a', '', 0, 5, 0, null, null, null, null,
                                              (-32768)::smallint, (-9223372036854775808)::bigint) w),
          0, 'D-60: a window that started at the first sender has nothing to wrap to');

-- The claim: a window of 5 after w6 holds w7, w8, w9, then wraps to w0,
-- w1. No FIFO share, no leads: every sender of the window ranks its first
-- row at 0, so cap 5 takes one row of each.
create temp table got as
select c.*
  from pepsi.workqueue_claim_fair('{wrap_a}', '{5}', '{1000}', null, null, null, p_fifo_percent => 0,
                                  p_window_after => '{user:w6}', p_window_size => 5) c;
select is((select array_agg(g.sender_key order by g.sender_key) from got g),
          '{user:w0,user:w1,user:w7,user:w8,user:w9}'::text[],
          'D-60: the fair claim''s window after w6 is w7, w8, w9, then w0, w1 (wrapped)');
select is((select array_agg(distinct g.window_next) from got g), '{user:w1}'::text[],
          'D-60: ... window_next is the window''s last sender, the one it wrapped to');
select is((select array_agg(distinct g.window_lap) from got g), '{t}'::boolean[],
          'D-60: ... and window_lap is true: the window passed the end of the sender order');

select * from finish();
rollback;
