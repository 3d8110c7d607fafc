-- What workqueue_claim_fair reads on a deep backlog (D-59..D-61; DESIGN.md,
-- "Keeping the queue table healthy"). Stage deep holds 1,000,000 pending
-- rows of one sender (user:u1, the oldest rows) and a few rows of six
-- others; stage empty has none; after ANALYZE (the planner trap: one stage,
-- one sender). Stage many holds 100 senders of 100 rows each. (Not stage
-- big: 05-claim-plan.sql leaves 1,000,000 dead index entries of its rolled
-- back rows there, which the first scan after it would have to step over.)
-- From EXPLAIN of the function's own statement and from this transaction's
-- statistics counters around real calls (as in 05-claim-plan.sql), the
-- tests check that the claim reads O(senders in window x cap) index
-- entries, not the backlog: no sequential scan, the sender index for the
-- window and the rows, the pending index only for the FIFO share, the
-- primary key only to update the claimed rows. Slow by design: 1M inserts.

begin;
select plan(48);

-- Stage names of this run only: a run rolled back earlier in the same
-- database leaves dead index entries under its names until a vacuum.
select 'deep_' || txid_current() as deep, 'many_' || txid_current() as many \gset

insert into pepsi.workqueue (stage, origin_user) select :'deep', 'u1' from generate_series(1, 1000000);
insert into pepsi.workqueue (stage, origin_user)
select :'deep', u from unnest('{a1,a2,a3,a4,a5}'::text[]) u, generate_series(1, 3);
insert into pepsi.workqueue (stage, origin_user) select :'deep', 'z9' from generate_series(1, 2);
insert into pepsi.workqueue (stage, origin_user)
select :'many', 'm' || lpad(s::text, 3, '0') from generate_series(1, 100) r, generate_series(1, 100) s;
analyze pepsi.workqueue;

select is((select count(*) from pepsi.workqueue where stage = :'deep' and sender_key = 'user:u1'), 1000000::bigint,
          'setup: 1,000,000 pending rows of user:u1 in stage deep');
select is((select count(distinct sender_key) from pepsi.workqueue where stage = :'deep'), 7::bigint,
          'setup: 7 senders wait in stage deep (u1 and six with 2 or 3 rows)');
select ok((select reltuples >= 900000 from pg_class where oid = 'pepsi.workqueue'::regclass),
          'setup: ANALYZE has told the planner about the backlog');

create temp table xstats (tag text, rel regclass, scans bigint, returned bigint, fetched bigint, blocks bigint);

create function pg_temp.counters(p_tag text)
returns setof xstats language sql as $$
    select p_tag, r, pg_stat_get_xact_numscans(r), pg_stat_get_xact_tuples_returned(r),
           pg_stat_get_xact_tuples_fetched(r), pg_stat_get_xact_blocks_fetched(r)
      from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx'::regclass,
                        'pepsi.workqueue_pending_sender_idx'::regclass, 'pepsi.workqueue_pkey'::regclass]) r
$$;

create function pg_temp.delta(p_from text, p_to text, p_rel regclass)
returns xstats language sql as $$
    select p_to, p_rel, b.scans - a.scans, b.returned - a.returned, b.fetched - a.fetched, b.blocks - a.blocks
      from xstats a join xstats b on b.rel = a.rel
     where a.tag = p_from and b.tag = p_to and a.rel = p_rel
$$;

create function pg_temp.blocks(p_from text, p_to text)
returns numeric language sql as $$
    select sum(d.blocks)
      from unnest(array['pepsi.workqueue'::regclass, 'pepsi.workqueue_pending_idx', 'pepsi.workqueue_pending_sender_idx',
                        'pepsi.workqueue_pkey']) r,
           pg_temp.delta(p_from, p_to, r) d
$$;

create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text, fifo boolean,
                           window_next text, window_lap boolean, fifo_credit int, lead_floor float8, leads_lost boolean);

-- EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of the function's own statement,
-- taken from pg_proc with the parameters written in as literals, run in a
-- subtransaction that is rolled back.
-- The fair claim's statement from its source (issue 19: it collects its
-- rows into arrays, and the claim then moves the marks): from WITH
-- RECURSIVE to the statement's end, with the rows it collects selected
-- instead (the projection of the statement before issue 19).
create function pg_temp.claim_statement(p_src text) returns text language sql as $$
    select regexp_replace(substring(p_src from '(?s)\n\s*(with recursive.*?);\s*(?:--[^\n]*\n\s*)*if cardinality'),
                          '(?s)select array_agg\(c\.workqueue_id.*$',
                          'select c.workqueue_id, c.stage, c.sender_key, c.fifo, share.window_next, share.window_lap,
                                  share.credit_next, share.lead_floor, share.lost
                             from claimed c join share on share.ord = c.ord order by c.ord, c.pos')
$$;
-- The marks (pepsi.claim_mark, issue 19) are refreshed by the first claim
-- of a stage in a second, with a read of the pending index: made fresh
-- before each measured claim, so that only the claim's own reads count.
create function pg_temp.marks_fresh(p_stages text[]) returns void language sql as $$
    select pepsi.claim_mark_get(p_stages, 0);
    update pepsi.claim_mark set refreshed_at = clock_timestamp();
$$;
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

create function pg_temp.plan_nodes(p_explain jsonb)
returns setof jsonb language sql as $$
    with recursive n(node) as (
        select p_explain->0->'Plan'
        union all
        select c.node from n, jsonb_array_elements(n.node->'Plans') as c(node)
    )
    select node from n
$$;

-- The statement reads the session's kept leads (issue 19,
-- fair_lead_session): their tables, as the session's first fair claim
-- makes them.
select pepsi.fair_lead_open();

create temp table fair_sql as
select regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
       regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
       regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
           pg_temp.claim_statement(p.prosrc),
           '\mp_stages\M', format('array[%L, %L]', :'deep', 'empty'), 'g'),
           '\mp_caps\M', $$'{16,16}'::int[]$$, 'g'),
           '\mp_avg_usec\M', $$'{1000,1000}'::float8[]$$, 'g'),
           '\mp_lead_stages\M', format('array[%L]', :'deep'), 'g'),
           '\mp_lead_senders\M', $$'{user:u1}'::text[]$$, 'g'),
           '\mp_lead_usec\M', $$'{5000}'::float8[]$$, 'g'),
           '\mp_fifo_percent\M', '10', 'g'),
           '\mp_window_after\M', 'null::text[]', 'g'),
           '\mp_fifo_credit\M', 'null::int[]', 'g'),
           '\mp_now\M', 'now()', 'g'),
           '\mp_window_size\M', '64', 'g'),
           '\mp_claim_id\M', '1', 'g'),
           '\mp_lead_base\M', 'null::float8[]', 'g'),
           '\mp_lead_scale\M', 'null::float8[]', 'g'),
           '\mp_lead_sync\M', 'null::boolean[]', 'g'),
           '\mv_inc\M', 'null::bigint', 'g'),
           '\mp_owner_slot\M', '0', 'g'),
           '\mv_paused\M', 'null::text[]', 'g'),
           '\mv_mark_p\M', 'null::smallint[]', 'g'),
           '\mv_mark_id\M', 'null::bigint[]', 'g') as stmt
  from pg_proc p
 where p.oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure;
create temp table fair_plan as select pg_temp.explain_rolled_back(stmt) as explain from fair_sql;

select ok((select stmt is not null and stmt !~ '\mp_[a-z]' from fair_sql),
          'setup: the claim''s statement, taken from the function with literal parameters');
select is((select (explain->0->'Plan'->>'Actual Rows')::int from fair_plan), 16,
          'D-38: the explained fair claim returned 16 rows (then rolled back)');
select is((select count(*)::int from fair_plan, pg_temp.plan_nodes(explain) n where n->>'Node Type' ~ 'Seq Scan|Bitmap'),
          0, 'D-61: no sequential or bitmap scan anywhere in the fair claim''s plan (the planner trap)');
select is((select array_agg(distinct n->>'Index Name' order by n->>'Index Name')
             from fair_plan, pg_temp.plan_nodes(explain) n where n->>'Relation Name' = 'workqueue' and n ? 'Index Name'),
          '{workqueue_pending_idx,workqueue_pending_sender_idx,workqueue_pkey}'::text[],
          'D-59: workqueue is read through the sender index (window, rows), the pending index (FIFO), the primary key (update)');
select is((select sum((n->>'Actual Rows')::numeric * (n->>'Actual Loops')::numeric)::int
             from fair_plan, pg_temp.plan_nodes(explain) n where n->>'Index Name' = 'workqueue_pkey'),
          16, 'D-61: the primary key is only probed for the 16 claimed rows');
select cmp_ok((select sum((n->>'Actual Rows')::numeric * (n->>'Actual Loops')::numeric)
                 from fair_plan, pg_temp.plan_nodes(explain) n where n->>'Index Name' = 'workqueue_pending_sender_idx'),
              '<=', 7 * 16::numeric, 'D-61: the sender index scans returned at most senders x cap entries in all');
select cmp_ok((select (explain->0->'Plan'->>'Shared Hit Blocks')::int + (explain->0->'Plan'->>'Shared Read Blocks')::int
                 from fair_plan),
              '<', 500, 'the explained fair claim touched fewer than 500 shared buffers');
select is((select count(*) from pepsi.workqueue where status <> 'pending'), 0::bigint,
          'the explained claim was rolled back: every row is still pending');

-- The planner cannot take the sender's rows through the pending index:
-- a sender whose rows sit behind the whole backlog (z9) is read from the
-- sender index, not by filtering 1,000,000 entries of (stage, workqueue_id).
savepoint z;
select pg_temp.marks_fresh(array[:'deep']);
insert into xstats select * from pg_temp.counters('z0');
insert into claimed select 4, * from pepsi.workqueue_claim_fair(array[:'deep'], '{16}', '{1000}', array_fill(:'deep'::text, array[6]),
                                                                '{user:u1,user:a1,user:a2,user:a3,user:a4,user:a5}',
                                                                '{1e9,1e9,1e9,1e9,1e9,1e9}', 0);
insert into xstats select * from pg_temp.counters('z1');
select is((select array_agg(sender_key order by workqueue_id) from claimed where call = 4 and sender_key = 'user:z9'),
          '{user:z9,user:z9}'::text[], 'D-53: the only sender without a lead gets both its rows first');
select cmp_ok((pg_temp.delta('z0', 'z1', 'pepsi.workqueue_pending_idx')).returned, '=', 0::bigint,
              'D-61: ... without reading the pending index (no FIFO share at 0 %)');
select cmp_ok((pg_temp.delta('z0', 'z1', 'pepsi.workqueue_pending_sender_idx')).returned, '<=', 7 * 16::bigint,
              'D-61: ... at most senders x cap entries of the sender index');
rollback to savepoint z;

-- The fair claim of deep and empty, caps 16 -------------------------------------------------------

select pg_temp.marks_fresh(array[:'deep', 'empty']);
insert into xstats select * from pg_temp.counters('f0');
insert into claimed
select 1, * from pepsi.workqueue_claim_fair(array[:'deep', 'empty'], '{16,16}', '{1000,1000}', '{}', '{}', '{}');
insert into xstats select * from pg_temp.counters('f1');

select is((pg_temp.delta('f0', 'f1', 'pepsi.workqueue')).scans, 0::bigint,
          'D-61: the fair claim does no sequential scan of workqueue');
select cmp_ok((pg_temp.delta('f0', 'f1', 'pepsi.workqueue_pending_sender_idx')).returned, '<=', 7 * 16::bigint,
              'D-59, D-61: the sender index returned at most senders x cap entries (7 x 16), not the backlog');
select cmp_ok((pg_temp.delta('f0', 'f1', 'pepsi.workqueue_pending_sender_idx')).scans, '<=', 8::bigint,
              'D-59: the loose index scan probed the sender index a few times (batches of entries), not once per row');
select cmp_ok((pg_temp.delta('f0', 'f1', 'pepsi.workqueue_pending_idx')).returned, '<=', 2::bigint,
              'D-57: the pending index is read only for the FIFO share (2 oldest rows)');
select cmp_ok((pg_temp.delta('f0', 'f1', 'pepsi.workqueue_pkey')).returned, '<=', 32::bigint,
              'D-61: workqueue_pkey only looks up the claimed rows, never walked');
select cmp_ok(pg_temp.blocks('f0', 'f1'), '<', 500::numeric,
              'the fair claim fetched fewer than 500 blocks of workqueue and its indexes');

select is((select count(*) from claimed where call = 1), 16::bigint, 'D-38: the fair claim takes cap (16) rows');
select is((select count(distinct sender_key) from claimed where call = 1), 7::bigint,
          'D-53: every one of the 7 waiting senders is served, the one with 1,000,000 rows too');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 1 and fifo),
          (select array_agg(workqueue_id) from (select workqueue_id from pepsi.workqueue
                                                 where stage = :'deep' and sender_key = 'user:u1'
                                                 order by workqueue_id limit 2) o),
          'D-57: the FIFO share (2 of 16, rounded up) took the 2 oldest rows of the stage');
select is((select count(*) from claimed where call = 1 and sender_key = 'user:u1'), 3::bigint,
          'D-53: the deep sender got 3 of the 16 slots (2 FIFO + 1 by rank), no more than its turn');
select is((select count(*) from claimed where call = 1 and stage = 'empty'), 0::bigint, 'the empty stage gives nothing');
select ok((select bool_and(window_next is null and window_lap and lead_floor = 0) from claimed where call = 1),
          'D-60: 7 senders fit the window: window_next NULL, a lap');

-- The empty stage alone.
insert into xstats select * from pg_temp.counters('e0');
insert into claimed select 2, * from pepsi.workqueue_claim_fair('{empty}', '{16}', '{1000}', '{}', '{}', '{}');
insert into xstats select * from pg_temp.counters('e1');
select is((select count(*) from claimed where call = 2), 0::bigint, 'a fair claim of the empty stage alone returns nothing');
select is((pg_temp.delta('e0', 'e1', 'pepsi.workqueue')).scans, 0::bigint, 'empty stage: no sequential scan');
select is((pg_temp.delta('e0', 'e1', 'pepsi.workqueue_pending_sender_idx')).returned, 0::bigint,
          'empty stage: the sender index returns nothing');
select cmp_ok(pg_temp.blocks('e0', 'e1'), '<', 50::numeric, 'empty stage: fewer than 50 blocks (not the whole table)');

-- One sender: the same rows as the plain claim ---------------------------------------------------

savepoint one;
delete from pepsi.workqueue where stage = :'deep' and sender_key <> 'user:u1';
select array_agg(workqueue_id order by workqueue_id) as plain_ids
  from pepsi.workqueue_claim(array[:'deep', 'empty'], '{16,16}') \gset
rollback to savepoint one;
savepoint one;
delete from pepsi.workqueue where stage = :'deep' and sender_key <> 'user:u1';
insert into xstats select * from pg_temp.counters('o0');
insert into claimed
select 3, * from pepsi.workqueue_claim_fair(array[:'deep', 'empty'], '{16,16}', '{1000,1000}', array[:'deep'], '{user:u1}', '{123456}');
insert into xstats select * from pg_temp.counters('o1');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 3), :'plain_ids'::bigint[],
          'D-53: with one sender (1,000,000 rows) the fair claim takes exactly the plain claim''s rows, oldest first');
select cmp_ok((pg_temp.delta('o0', 'o1', 'pepsi.workqueue_pending_sender_idx')).returned, '<=', 2 * 16 + 17::bigint,
              'D-61: one deep sender: the sender index returned at most 2 x cap entries (+ the 17 just deleted)');
select is((pg_temp.delta('o0', 'o1', 'pepsi.workqueue')).scans, 0::bigint, 'one deep sender: no sequential scan');
select cmp_ok(pg_temp.blocks('o0', 'o1'), '<', 500::numeric, 'one deep sender: fewer than 500 blocks');
rollback to savepoint one;

-- 100 senders of 100 rows: a full window ----------------------------------------------------------

insert into xstats select * from pg_temp.counters('m0');
insert into claimed select 5, * from pepsi.workqueue_claim_fair(array[:'many'], '{16}', '{1000}', '{}', '{}', '{}');
insert into xstats select * from pg_temp.counters('m1');
select is((select count(distinct sender_key) from claimed where call = 5), 16::bigint,
          'D-53: 100 level senders, cap 16: 16 different senders get one row each');
select is((select distinct window_next from claimed where call = 5), 'user:m064'::text,
          'D-60: the window stopped at its 64th sender');
select cmp_ok((pg_temp.delta('m0', 'm1', 'pepsi.workqueue_pending_sender_idx')).returned, '<=', 64 * 16::bigint,
              'D-61: a full window reads at most 64 x cap entries');
select cmp_ok((pg_temp.delta('m0', 'm1', 'pepsi.workqueue_pending_sender_idx')).returned, '<=', 16 + 63 * 4 + 8::bigint,
              'D-59: ... in fact about one batch per deep sender (16, then 4 entries each)');
select cmp_ok((pg_temp.delta('m0', 'm1', 'pepsi.workqueue_pending_sender_idx')).scans, '<=', 64::bigint,
              'D-59: at most one probe per sender of the window');
select is((pg_temp.delta('m0', 'm1', 'pepsi.workqueue')).scans, 0::bigint, 'full window: no sequential scan');

-- Kept leads (issue 12): 10,100 leads kept for incarnation 1, the 100 of
-- stage many's waiting senders (m001 1001 µs .. m100 1100 µs) and 10,000
-- of senders that wait no more. The claim reads the lead of each sender of
-- its window by one probe of fair_lead_pkey: 64, however many are kept.

insert into pg_temp.fair_lead select :'many', 'user:m' || lpad(s::text, 3, '0'), 1, 1000 + s from generate_series(1, 100) s;
insert into pg_temp.fair_lead select :'many', 'user:gone' || i, 1, 5000 from generate_series(1, 10000) i;
insert into pg_temp.fair_stage values (:'many', 1);

create function pg_temp.bind(p_sql text, p_args jsonb)
returns text language plpgsql as $$
declare
    v_key text;
begin
    for v_key in select jsonb_object_keys(p_args) loop
        p_sql := regexp_replace(p_sql, '\m' || v_key || '\M', p_args->>v_key, 'g');
    end loop;
    return p_sql;
end $$;

create temp table kept_sql as
select pg_temp.bind(pg_temp.claim_statement(p.prosrc),
                    jsonb_build_object('p_stages', format('array[%L]', :'many'), 'p_caps', $$'{16}'::int[]$$,
                                       'p_avg_usec', $$'{1000}'::float8[]$$, 'p_lead_stages', 'null::text[]',
                                       'p_lead_senders', 'null::text[]', 'p_lead_usec', 'null::float8[]',
                                       'p_fifo_percent', '10', 'p_window_after', 'null::text[]',
                                       'p_fifo_credit', 'null::int[]', 'p_now', 'now()', 'p_window_size', '64',
                                       'p_claim_id', ((1::bigint << 40) + 1)::text, 'p_lead_base', 'null::float8[]',
                                       'p_lead_scale', 'null::float8[]', 'p_lead_sync', 'null::boolean[]',
                                       'v_inc', '1::bigint', 'p_owner_slot', '0', 'v_paused', 'null::text[]',
                                       'v_mark_p', 'null::smallint[]', 'v_mark_id', 'null::bigint[]')) as stmt
  from pg_proc p
 where p.oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure;
create temp table kept_plan as select pg_temp.explain_rolled_back(stmt) as explain from kept_sql;

select ok((select stmt is not null and stmt !~ '\m[pv]_[a-z]' from kept_sql),
          'setup: the claim''s statement with kept leads of incarnation 1 (v_inc = 1)');
select is((select (explain->0->'Plan'->>'Actual Rows')::int from kept_plan), 16,
          'issue 12: the explained claim with kept leads returned 16 rows (then rolled back)');
select is((select count(*)::int from kept_plan, pg_temp.plan_nodes(explain) n
            where n->>'Node Type' ~ 'Seq Scan|Bitmap' and n->>'Relation Name' is distinct from 'fair_stage'),
          0, 'issue 12: no sequential or bitmap scan with kept leads either (but of fair_stage, one row per stage)');
select is((select array_agg(distinct n->>'Index Name') from kept_plan, pg_temp.plan_nodes(explain) n
            where n->>'Relation Name' = 'fair_lead'),
          '{fair_lead_pkey}'::text[], 'issue 12: the kept leads are read through fair_lead_pkey only');
select cmp_ok((select sum((n->>'Actual Loops')::numeric) from kept_plan, pg_temp.plan_nodes(explain) n
                where n->>'Index Name' = 'fair_lead_pkey'),
              '<=', 64::numeric, 'issue 12, D-61: at most one probe of fair_lead_pkey per window sender (64), not 10,100 leads read');
select cmp_ok((select sum((n->>'Actual Loops')::numeric) from kept_plan, pg_temp.plan_nodes(explain) n
                where n->>'Relation Name' = 'fair_stage'),
              '<=', 1::numeric, 'issue 12: fair_stage is read once per stage (is the copy held in full?)');
select cmp_ok((select (explain->0->'Plan'->>'Shared Hit Blocks')::int + (explain->0->'Plan'->>'Shared Read Blocks')::int
                 from kept_plan),
              '<', 1500, 'issue 12: the explained claim with kept leads touched fewer than 1,500 shared buffers');

insert into claimed select 6, * from pepsi.workqueue_claim_fair(array[:'many'], '{16}', '{1000}', '{}', '{}', '{}', 0, null, null,
                                                                now(), false, 64, (1::bigint << 40) + 1);
select row_eq($$select count(distinct sender_key), min(sender_key), max(sender_key), bool_or(leads_lost) from claimed where call = 6$$,
              row(16::bigint, 'user:m001'::text, 'user:m016'::text, false),
              'issue 12, D-53: ranked by their kept leads (m001 1001 µs .. m100 1100 µs), the 16 slots go to m001..m016');

select * from finish();
rollback;
