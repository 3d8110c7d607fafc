-- The claim's plan on a deep backlog (DESIGN.md, "Keeping the queue table
-- healthy"; D-38, D-41). After ANALYZE of 1,000,000 pending rows that all
-- sit in one stage, the planner once walked workqueue_pkey with a filter
-- instead of the partial index workqueue_pending_idx, so one claim that
-- included an empty stage read the whole table (369-503 ms instead of
-- 0.4 ms). This file builds exactly that table and checks
--   (a) the plan of the claim's UPDATE (EXPLAIN ANALYZE, rolled back),
--   (b) the real pepsi.workqueue_claim, through this transaction's
--       statistics counters (custom plan, generic plan, empty stage alone),
--   (c) the plan with a larger cap,
--   (d) the claim's answer: exactly the 16 oldest rows.
-- Slow by design: 1M inserts take tens of seconds.

begin;
select plan(40);

insert into pepsi.workqueue (stage) select 'big' from generate_series(1, 1000000);
analyze pepsi.workqueue;

select is((select count(*) from pepsi.workqueue where stage = 'big' and status = 'pending'), 1000000::bigint,
          'setup: 1,000,000 pending rows in stage big');
select is((select count(*) from pepsi.workqueue where stage = 'empty'), 0::bigint,
          'setup: stage empty has no rows');
select ok((select reltuples >= 900000 from pg_class where oid = 'pepsi.workqueue'::regclass),
          'setup: ANALYZE has told the planner about the backlog');

-- EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of a statement in a subtransaction
-- that is then rolled back, so the UPDATE it ran leaves no trace. plpgsql
-- variables survive the rollback of their block.
create function pg_temp.explain_rolled_back(p_sql text)
returns jsonb language plpgsql as $$
declare
    v_plan jsonb;
begin
    begin
        execute 'explain (analyze, buffers, format json) ' || p_sql into v_plan;
        raise exception 'roll back the explained statement' using errcode = 'PXZZZ';
    exception when sqlstate 'PXZZZ' then
        null;
    end;
    return v_plan;
end $$;

-- Every node of a JSON plan: the root, then its "Plans", recursively.
create function pg_temp.plan_nodes(p_explain jsonb)
returns setof jsonb language sql as $$
    with recursive n(node) as (
        select p_explain->0->'Plan'
        union all
        select c.node from n, jsonb_array_elements(n.node->'Plans') as c(node)
    )
    select node from n
$$;

-- The scans that read workqueue for the per-stage subqueries: every node on
-- relation workqueue except the UPDATE's own join back to its target w,
-- plus any index-only node of the pending index.
create function pg_temp.stage_scans(p_explain jsonb)
returns setof jsonb language sql as $$
    select node from pg_temp.plan_nodes(p_explain) node
     where (node->>'Relation Name' = 'workqueue' and node->>'Alias' is distinct from 'w'
            and node->>'Node Type' <> 'ModifyTable')
        or node->>'Index Name' = 'workqueue_pending_idx'
$$;

-- The UPDATE of workqueue_claim as deploy/workqueue_enqueue_options.sql defines it (issue 16), word for word, with the
-- parameters as literals: p_stages '{big,empty}', p_caps '{16,16}', p_now now(),
-- p_owner_slot 0 (no topology: every row is slot 0's, issue 14).
create temp table plans as
select 16 as cap, pg_temp.explain_rolled_back($sql$
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = now()
      from (select q.workqueue_id as id
              from unnest('{big,empty}'::text[], '{16,16}'::int[]) as s(stage, cap)
                   cross join lateral (
                       select q.workqueue_id from pepsi.workqueue q
                        where q.stage = s.stage and q.owner_slot = 0 and q.status = 'pending'
                        order by q.priority, q.workqueue_id
                        limit s.cap) q) picked
     where w.workqueue_id = picked.id and w.status = 'pending'
    returning w.workqueue_id, w.stage, w.sender_key
$sql$) as explain;

insert into plans
select 256, pg_temp.explain_rolled_back($sql$
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = now()
      from (select q.workqueue_id as id
              from unnest('{big,empty}'::text[], '{256,256}'::int[]) as s(stage, cap)
                   cross join lateral (
                       select q.workqueue_id from pepsi.workqueue q
                        where q.stage = s.stage and q.owner_slot = 0 and q.status = 'pending'
                        order by q.priority, q.workqueue_id
                        limit s.cap) q) picked
     where w.workqueue_id = picked.id and w.status = 'pending'
    returning w.workqueue_id, w.stage, w.sender_key
$sql$);

-- (a) The plan at cap 16 ---------------------------------------------------------------

select is((select (explain->0->'Plan'->>'Actual Rows')::int from plans where cap = 16), 16,
          'D-38: the explained claim updated 16 rows (then rolled back)');
select is((select count(*) from pepsi.workqueue where status <> 'pending'), 0::bigint,
          'the explained claims were rolled back: every row is still pending');
select is((select count(*)::int from plans p, pg_temp.plan_nodes(p.explain) n
            where p.cap = 16 and n->>'Node Type' = 'Seq Scan'), 0,
          'D-41: no Seq Scan anywhere in the claim''s plan');
select ok((select count(*) >= 1 from plans p, pg_temp.stage_scans(p.explain) n where p.cap = 16),
          'D-41: the plan has a per-stage scan of workqueue');
select is((select array_agg(distinct coalesce(n->>'Index Name', n->>'Node Type')) from plans p, pg_temp.stage_scans(p.explain) n
            where p.cap = 16),
          '{workqueue_pending_idx}'::text[], 'D-41: the per-stage scan uses index workqueue_pending_idx');
select ok((select bool_and(n->>'Node Type' in ('Index Scan', 'Index Only Scan')) from plans p, pg_temp.stage_scans(p.explain) n
            where p.cap = 16),
          'D-41: the per-stage scan is an ordered index scan (no bitmap scan, no sort)');
select is((select count(*)::int from plans p, pg_temp.stage_scans(p.explain) n
            where p.cap = 16 and n->>'Index Name' = 'workqueue_pkey'), 0,
          'D-41: the per-stage scan does not walk workqueue_pkey (the planner trap)');
select is((select sum((n->>'Actual Rows')::numeric * (n->>'Actual Loops')::numeric)::int
             from plans p, pg_temp.stage_scans(p.explain) n where p.cap = 16),
          16, 'D-41: the per-stage scans read 16 index entries in all (cap 16 of big, none of empty)');
select is((select count(*)::int from plans p, pg_temp.plan_nodes(p.explain) n
            where p.cap = 16 and n->>'Node Type' = 'Sort'), 0,
          'D-41, issue 14: no Sort in the claim''s plan (the index gives (priority, workqueue_id) order within the slot, issue 16)');
select cmp_ok((select (explain->0->'Plan'->>'Shared Hit Blocks')::int + (explain->0->'Plan'->>'Shared Read Blocks')::int
                 from plans where cap = 16),
              '<', 500, 'the claim of 16 rows touches fewer than 500 shared buffers (hit + read)');

-- (c) The plan at cap 256 ----------------------------------------------------------------

select is((select (explain->0->'Plan'->>'Actual Rows')::int from plans where cap = 256), 256,
          'D-38: the explained claim with cap 256 updated 256 rows');
select is((select count(*)::int from plans p, pg_temp.plan_nodes(p.explain) n
            where p.cap = 256 and n->>'Node Type' = 'Seq Scan'), 0,
          'D-41: cap 256: no Seq Scan anywhere in the plan');
select is((select array_agg(distinct coalesce(n->>'Index Name', n->>'Node Type')) from plans p, pg_temp.stage_scans(p.explain) n
            where p.cap = 256),
          '{workqueue_pending_idx}'::text[], 'D-41: cap 256: the per-stage scan still uses workqueue_pending_idx');
select is((select sum((n->>'Actual Rows')::numeric * (n->>'Actual Loops')::numeric)::int
             from plans p, pg_temp.stage_scans(p.explain) n where p.cap = 256),
          256, 'D-41: cap 256: the per-stage scans read 256 index entries in all');
select cmp_ok((select (explain->0->'Plan'->>'Shared Hit Blocks')::int + (explain->0->'Plan'->>'Shared Read Blocks')::int
                 from plans where cap = 256),
              '<', 5000, 'cap 256: the claim touches fewer than 5000 shared buffers');

-- (b) The real function, through this transaction's statistics -----------------------------
--
-- pg_stat_get_xact_numscans/tuples_returned/tuples_fetched/blocks_fetched
-- read this backend's pending (not yet flushed) counters, which PostgreSQL
-- 15 increments as the scans happen and flushes only when the session is
-- idle outside a transaction; so inside this one transaction they count
-- exactly this transaction's work (checked below with a forced Seq Scan).
-- The counters are not transactional (the rolled-back EXPLAINs above still
-- count), hence before/after differences around each call. For a table,
-- numscans counts sequential scans and tuples_returned the rows they read;
-- for an index, numscans counts index scans (each rescan too),
-- tuples_returned the index entries it returned, blocks_fetched every
-- buffer requested (hit or read).

create temp table xstats (tag text, rel regclass, scans bigint, returned bigint, fetched bigint, blocks bigint);

create function pg_temp.counters(p_tag text)
returns setof xstats language sql as $$
    select p_tag, r, pg_stat_get_xact_numscans(r), pg_stat_get_xact_tuples_returned(r),
           pg_stat_get_xact_tuples_fetched(r), pg_stat_get_xact_blocks_fetched(r)
      from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx'::regclass,
                        'pepsi.workqueue_pkey'::regclass]) r
$$;

create function pg_temp.delta(p_from text, p_to text, p_rel regclass)
returns xstats language sql as $$
    select p_to, p_rel, b.scans - a.scans, b.returned - a.returned, b.fetched - a.fetched, b.blocks - a.blocks
      from xstats a join xstats b on b.rel = a.rel
     where a.tag = p_from and b.tag = p_to and a.rel = p_rel
$$;

-- Sanity: the counters see this transaction's own sequential scan.
insert into xstats select * from pg_temp.counters('seq0');
set local enable_indexscan = off;
set local enable_indexonlyscan = off;
set local enable_bitmapscan = off;
set local max_parallel_workers_per_gather = 0;  -- a parallel worker's scans count in its own backend
create temp table seqcount as select count(*) as n from pepsi.workqueue where status = 'failed';
reset enable_indexscan;
reset enable_indexonlyscan;
reset enable_bitmapscan;
reset max_parallel_workers_per_gather;
insert into xstats select * from pg_temp.counters('seq1');
select is((pg_temp.delta('seq0', 'seq1', 'pepsi.workqueue')).scans, 1::bigint,
          'sanity: pg_stat_get_xact_numscans counts a sequential scan of this transaction');
select ok((pg_temp.delta('seq0', 'seq1', 'pepsi.workqueue')).returned >= 1000000,
          'sanity: pg_stat_get_xact_tuples_returned counts the rows that scan read');

-- The claim, as the dispatcher calls it (custom plan: the first call).
create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text);
create temp table expected as
select workqueue_id from pepsi.workqueue where stage = 'big' order by workqueue_id limit 32;

insert into xstats select * from pg_temp.counters('c0');
insert into claimed select 1, * from pepsi.workqueue_claim('{big,empty}', '{16,16}');
insert into xstats select * from pg_temp.counters('c1');

select is((pg_temp.delta('c0', 'c1', 'pepsi.workqueue')).scans, 0::bigint,
          'D-41: workqueue_claim does no sequential scan of workqueue');
select is((pg_temp.delta('c0', 'c1', 'pepsi.workqueue')).returned, 0::bigint,
          'D-41: workqueue_claim reads no rows through a sequential scan');
-- Issue 19: and once per stage to refresh its mark (pepsi.claim_mark, once
-- a second; this is the first call).
select ok((pg_temp.delta('c0', 'c1', 'pepsi.workqueue_pending_idx')).scans between 1 and 4,
          'D-41: workqueue_claim scans workqueue_pending_idx (once per stage, and once per stage for its mark, issue 19)');
select cmp_ok((pg_temp.delta('c0', 'c1', 'pepsi.workqueue_pending_idx')).returned, '<=', 20::bigint,
              'D-41: the pending index returned at most 16 + a few entries');
select cmp_ok((pg_temp.delta('c0', 'c1', 'pepsi.workqueue_pending_idx')).fetched, '<=', 20::bigint,
              'D-41: at most 16 + a few heap rows were fetched through the pending index');
select cmp_ok((pg_temp.delta('c0', 'c1', 'pepsi.workqueue_pkey')).returned, '<=', 64::bigint,
              'D-41: workqueue_pkey is only used to look up the claimed rows, never walked');
select cmp_ok((select sum(d.blocks) from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx',
                                                       'pepsi.workqueue_pkey']) r,
                                          pg_temp.delta('c0', 'c1', r) d),
              '<', 500::numeric, 'the claim fetched fewer than 500 blocks of workqueue and its two indexes');

-- (d) The answer: exactly the 16 oldest.
select is((select count(*) from claimed where call = 1), 16::bigint, 'D-38: the claim returns exactly 16 rows');
select set_eq($$select workqueue_id from claimed where call = 1$$,
              $$select workqueue_id from expected order by workqueue_id limit 16$$,
              'D-41: the claim returns the 16 oldest rows of stage big');
select is((select count(*) from pepsi.workqueue where status = 'running'), 16::bigint,
          'D-38: exactly those 16 rows are running');

-- The same with the generic plan, which the plan cache may switch to after
-- five calls: the stage and cap are then parameters the planner cannot see.
set local plan_cache_mode = force_generic_plan;
insert into xstats select * from pg_temp.counters('g0');
insert into claimed select 2, * from pepsi.workqueue_claim('{big,empty}', '{16,16}');
insert into xstats select * from pg_temp.counters('g1');
reset plan_cache_mode;

select is((pg_temp.delta('g0', 'g1', 'pepsi.workqueue')).scans, 0::bigint,
          'D-41: generic plan: no sequential scan of workqueue');
select ok((pg_temp.delta('g0', 'g1', 'pepsi.workqueue_pending_idx')).scans >= 1,
          'D-41: generic plan: workqueue_pending_idx is scanned');
select cmp_ok((pg_temp.delta('g0', 'g1', 'pepsi.workqueue_pending_idx')).returned, '<=', 40::bigint,
              'D-41: generic plan: the pending index returned at most 16 + the 16 dead entries of the first claim + a few');
select cmp_ok((pg_temp.delta('g0', 'g1', 'pepsi.workqueue_pkey')).returned, '<=', 64::bigint,
              'D-41: generic plan: workqueue_pkey is not walked');
select cmp_ok((select sum(d.blocks) from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx',
                                                       'pepsi.workqueue_pkey']) r,
                                          pg_temp.delta('g0', 'g1', r) d),
              '<', 500::numeric, 'generic plan: fewer than 500 blocks fetched');
select set_eq($$select workqueue_id from claimed where call = 2$$,
              $$select workqueue_id from expected order by workqueue_id offset 16$$,
              'D-41: generic plan: the next claim returns the next 16 oldest rows');

-- The empty stage alone: the case that used to read the whole table.
insert into xstats select * from pg_temp.counters('e0');
insert into claimed select 3, * from pepsi.workqueue_claim('{empty}', '{16}');
insert into xstats select * from pg_temp.counters('e1');

select is((select count(*) from claimed where call = 3), 0::bigint, 'a claim of the empty stage alone returns nothing');
select is((pg_temp.delta('e0', 'e1', 'pepsi.workqueue')).scans, 0::bigint,
          'D-41: empty stage alone: no sequential scan');
select is((pg_temp.delta('e0', 'e1', 'pepsi.workqueue_pending_idx')).returned, 0::bigint,
          'D-41: empty stage alone: the pending index returns nothing');
select cmp_ok((select sum(d.blocks) from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx',
                                                       'pepsi.workqueue_pkey']) r,
                                          pg_temp.delta('e0', 'e1', r) d),
              '<', 50::numeric, 'empty stage alone: fewer than 50 blocks fetched (not the whole table)');

select * from finish();
rollback;
