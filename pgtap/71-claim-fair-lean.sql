-- Issue 19, sqitch change claim_fair_lean: the fair claim's list walk is
-- a PL/pgSQL function (not inlined into the claim's plan, which is
-- started at every claim), and its result is sorted once and aggregated
-- without ten ordered aggregates. What must not change: the rows a claim
-- takes and the order it returns them in (grouped by stage in p_stages
-- order, FIFO rows first, then by rank, then id), and each stage's values
-- on each of its rows. The same claims with a mark: pgTAP 70; the cost:
-- bench/run (the pipeline), bench/claim-fair.

begin;
select plan(9);

select is((select l.lanname::text from pg_catalog.pg_proc p join pg_catalog.pg_language l on l.oid = p.prolang
            where p.oid = 'pepsi.workqueue_sender_listed(text, text, text, int, int, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure),
          'plpgsql', 'issue 19: the list walk is a PL/pgSQL function, not inlined into the fair claim''s plan');
select is((select p.provolatile::text || ' ' || p.prorows from pg_catalog.pg_proc p
            where p.oid = 'pepsi.workqueue_sender_listed(text, text, text, int, int, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure),
          's 16', 'issue 19: the list walk is stable (it reads with the claim''s snapshot) and planned at 16 rows a call, not 1,000');

-- lean_a: twelve rows of three senders, u1, u2, u0, u1, u2, u0, ...;
-- lean_b: five rows of one sender.
insert into pepsi.workqueue (stage, origin_user) select 'lean_a', 'u' || (i % 3) from generate_series(1, 12) i;
insert into pepsi.workqueue (stage, origin_user) select 'lean_b', 'v' from generate_series(1, 5) i;
-- k: each row's place in its stage, oldest first.
create temp table k as
select w.workqueue_id, w.stage, row_number() over (partition by w.stage order by w.workqueue_id)::int as k
  from pepsi.workqueue w where w.stage in ('lean_a', 'lean_b');

-- u0 leads by five average messages: u1 and u2 rank first. 50 % FIFO,
-- no credit: lean_a's share is 3 of 6 slots, lean_b's 2 of 3.
create temp table got as
select row_number() over () as n, c.*
  from pepsi.workqueue_claim_fair('{lean_b,lean_a}', '{3,6}', '{1000,1000}', '{lean_a}', '{user:u0}', '{5000}',
                                  p_fifo_percent => 50) c;

select is((select string_agg(g.stage, ',' order by g.n) from got g),
          'lean_b,lean_b,lean_b,lean_a,lean_a,lean_a,lean_a,lean_a,lean_a',
          'issue 19: the claimed rows come grouped by stage, in p_stages order');
select is((select array_agg(k.k order by g.n) from got g join k on k.workqueue_id = g.workqueue_id where g.stage = 'lean_a'),
          '{1,2,3,4,5,7}'::int[],
          'issue 19: lean_a: the three oldest (FIFO), then by rank: u1''s and u2''s second rows, then u1''s third (ties by id); u0 (leading) none');
select is((select array_agg(g.fifo order by g.n) from got g where g.stage = 'lean_a'),
          '{t,t,t,f,f,f}'::boolean[], 'issue 19: lean_a: the FIFO rows first');
select is((select array_agg(k.k order by g.n) from got g join k on k.workqueue_id = g.workqueue_id where g.stage = 'lean_b'),
          '{1,2,3}'::int[], 'issue 19: lean_b: its three oldest, in order');
select is((select array_agg(distinct g.fifo_credit order by g.fifo_credit) from got g where g.stage = 'lean_a')
          || (select array_agg(distinct g.fifo_credit order by g.fifo_credit) from got g where g.stage = 'lean_b'),
          '{99,49}'::int[], 'issue 19: each stage''s FIFO credit on each of its rows: (99 + 6 x 50) % 100, (99 + 3 x 50) % 100');
select is((select count(distinct (g.window_next, g.window_lap, g.lead_floor, g.leads_lost))::int from got g where g.stage = 'lean_a'),
          1, 'issue 19: lean_a''s window values are the same on each of its rows');
select set_eq($$select workqueue_id from got$$,
              $$select workqueue_id from pepsi.workqueue where stage in ('lean_a', 'lean_b') and status = 'running'$$,
              'issue 19: the rows returned are the rows the claim made running');

select * from finish();
rollback;
