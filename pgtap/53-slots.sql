-- Owner slots on rows (issue 14, second slice): every row carries its
-- tube's partition (set by pepsi.workqueue_create), and the dispatcher's
-- claims and running-row operations given p_partitions (its slot's) see
-- only rows of those partitions: a runner never claims, resets, gives
-- back, requeues, defers or strikes another slot's row. And the plain
-- claim of a slot stays an index scan bounded by its caps while another
-- slot holds 100,000 pending rows of the same stage.
--
-- The topology: 8 partitions; slot 0 owns 0..3, slot 1 owns 4..7.

begin;
select plan(43);

-- Tubes t1..t400 and their partitions of 8; the first 3 tubes of each slot.
create temp table tubes as
select 't' || g as tube, pepsi.tube_partition('t' || g, 8) as p, g from generate_series(1, 400) g;
create temp table slot_tubes as
select * from (select t.*, case when t.p < 4 then 0 else 1 end as slot,
                      row_number() over (partition by t.p < 4 order by t.g) as k
                 from tubes t) x
 where x.k <= 3;
select is((select count(*)::int from slot_tubes), 6, 'setup: three tubes of each slot');

-- Without a topology every row is in partition 0 (slot 0 owns all).
select pepsi.workqueue_inject('a', p_tube => s.tube) is not null as x from slot_tubes s, generate_series(1, 2);
select is((select array_agg(distinct partition) from pepsi.workqueue), '{0}'::int[],
          'issue 14: without a topology workqueue_create puts every row in partition 0');

-- The first topology over messages (one slot) gives each row its tube's
-- partition; the operator's partition_map_set then moves 4..7 to slot 1.
select isnt(pepsi.topology_set(8, 1), null, 'setup: topology of 8 partitions, one slot, over 12 messages');
select is((select count(*)::int from pepsi.workqueue w where w.partition <> pepsi.tube_partition(w.tube, 8)), 0,
          'issue 14: topology_set over messages without a topology re-partitions them by tube (T-01)');
select isnt(pepsi.partition_map_set('{0,0,0,0,1,1,1,1}'), null, 'setup: partition_map_set gives 4..7 to slot 1');
select is((select t.partitions from pepsi.topology_check(1) t), '{4,5,6,7}'::int[],
          'issue 14: topology_check lists the partitions slot 1 owns');
select is((select t.partitions from pepsi.topology_check(0) t), '{0,1,2,3}'::int[],
          'issue 14: ... and those of slot 0');

-- With the topology, workqueue_create derives the partition from the tube.
select pepsi.workqueue_inject('a', p_tube => s.tube) is not null as x from slot_tubes s, generate_series(1, 3);
select pepsi.workqueue_inject('f', p_tube => s.tube, p_origin_user => 'u' || s.k) is not null as x
  from slot_tubes s, generate_series(1, 2);
select is((select count(*)::int from pepsi.workqueue w where w.partition <> pepsi.tube_partition(w.tube, 8)), 0,
          'issue 14: workqueue_create sets each row''s partition to tube_partition(tube, 8)');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition >= 4), 15,
          'setup: stage a holds 15 rows of slot 1');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition < 4), 15,
          'setup: ... and 15 of slot 0');

-- The plain claim ------------------------------------------------------------------------

create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text);
insert into claimed select 1, * from pepsi.workqueue_claim('{a}', '{1000}', p_claim_id => 111,
                                                           p_partitions => '{4,5,6,7}');
select is((select count(*)::int from claimed where call = 1), 15, 'issue 14: slot 1''s claim takes its 15 rows');
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 1 and w.partition < 4), 0,
          'issue 14: a claim with partitions {4..7} never returns a row of another partition');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition < 4 and w.status = 'pending'),
          15, 'issue 14: slot 0''s rows are all still pending');

insert into claimed select 2, * from pepsi.workqueue_claim('{a}', '{4}', p_claim_id => 222, p_partitions => '{0,1,2,3}');
select results_eq($$select workqueue_id from claimed where call = 2 order by workqueue_id$$,
                  $$select workqueue_id from pepsi.workqueue where stage = 'a' and partition < 4
                     order by workqueue_id limit 4$$,
                  'issue 14, D-41: slot 0''s claim takes the 4 oldest rows of its partitions, over all of them');

-- The fair claim -------------------------------------------------------------------------

insert into claimed select 3, c.workqueue_id, c.stage, c.sender_key
  from pepsi.workqueue_claim_fair('{f}', '{1000}', '{1000}', '{}', '{}', '{}', p_partitions => '{0,1,2,3}') c;
select is((select count(*)::int from claimed where call = 3), 6, 'issue 14: slot 0''s fair claim takes its 6 rows of f');
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 3 and w.partition >= 4), 0,
          'issue 14: a fair claim with partitions {0..3} never returns a row of another partition');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'f' and w.partition >= 4 and w.status = 'pending'),
          6, 'issue 14: slot 1''s rows of f are all still pending');
select is((select count(*)::int from pepsi.workqueue_sender_probe('f', '', null, 64, '{0,1,2,3}')), 0,
          'issue 14: the sender probe with slot 0''s partitions sees none of slot 1''s pending senders');
select is((select count(*)::int from pepsi.workqueue_sender_probe('f', '', null, 64, '{4,5,6,7}')), 3,
          'issue 14: ... and slot 1''s sees its three');

-- Running-row operations leave other slots' rows alone ----------------------------------

create temp table slot1_running as
select workqueue_id, stage, claim_id, state from pepsi.workqueue where status = 'running' and partition >= 4;
select is((select count(*)::int from slot1_running), 15, 'setup: slot 1 has 15 running rows of claim 111');

select is(pepsi.workqueue_reset_running('{0,1,2,3}'), 10,
          'issue 14, D-18: slot 0''s start-up reset gives back its 10 running rows (4 plain, 6 fair)');
select is((select count(*)::int from pepsi.workqueue w join slot1_running s using (workqueue_id)
            where w.status = 'running' and w.claim_id = 111), 15,
          'issue 14: ... and leaves slot 1''s running rows running, their claim kept');

select is(pepsi.workqueue_unclaim('{111}', '{0,1,2,3}'), 0,
          'issue 14: an unclaim with slot 0''s partitions gives back nothing of slot 1''s claim');
select is((select count(*)::int from pepsi.workqueue where status = 'running' and claim_id = 111), 15,
          'issue 14: ... slot 1''s rows are still running');

select is(pepsi.workqueue_requeue(array(select workqueue_id from slot1_running),
                                  array(select stage from slot1_running), '{0,1,2,3}'), 0,
          'issue 14: a requeue with slot 0''s partitions moves none of slot 1''s rows');
select is(pepsi.workqueue_defer(array(select workqueue_id from slot1_running), array(select stage from slot1_running),
                                now() + interval '1 minute', 'lost connection', '{0,1,2,3}'), 0,
          'issue 14: a defer with slot 0''s partitions pauses none of slot 1''s rows');
select is(pepsi.workqueue_strike((select min(workqueue_id) from slot1_running), 'a', 'crash', 'died', now(),
                                 '{0,1,2,3}'), null::pepsi.workqueue_status,
          'issue 14: a strike with slot 0''s partitions on slot 1''s row returns NULL');
select is((select count(*)::int from pepsi.workqueue w join slot1_running s using (workqueue_id)
            where w.status = 'running' and w.claim_id = 111 and w.state = s.state), 15,
          'issue 14: after reset, unclaim, requeue, defer and strike of slot 0: slot 1''s rows are untouched');

-- With slot 1's partitions they work.
select is(pepsi.workqueue_strike((select min(workqueue_id) from slot1_running), 'a', 'crash', 'died', now(),
                                 '{4,5,6,7}'), 'paused'::pepsi.workqueue_status,
          'issue 14: a strike with the row''s own partitions pauses it (first strike)');
select is(pepsi.workqueue_unclaim('{111}', '{4,5,6,7}'), 14,
          'issue 14: an unclaim with slot 1''s partitions gives back its other 14 rows');

-- The paused sweep: slot 0 releases only its own due rows.
insert into claimed select 4, * from pepsi.workqueue_claim('{a}', '{1}', p_partitions => '{0,1,2,3}');
select is(pepsi.workqueue_strike((select workqueue_id from claimed where call = 4), 'a', 'crash', 'died', now(),
                                 '{0,1,2,3}'), 'paused'::pepsi.workqueue_status, 'setup: one paused row of slot 0');
select is((select released from pepsi.workqueue_release_paused(now() + interval '2 minutes', '{0,1,2,3}')), 1,
          'issue 14, D-93: slot 0''s paused sweep releases its one due row');
select is((select count(*)::int from pepsi.workqueue where status = 'paused' and partition >= 4), 1,
          'issue 14: ... and leaves slot 1''s due paused row paused');
select is(pepsi.workqueue_release_due(now() + interval '2 minutes', '{4,5,6,7}'), 1,
          'issue 14: release_due with slot 1''s partitions releases it');
select is(pepsi.workqueue_reset_running(), 0, 'NULL partitions: every slot (nothing running now)');

-- The claim's cost when another slot holds 100,000 pending rows --------------------------

insert into pepsi.workqueue (stage, tube, partition)
select 'big', t.tube, t.p
  from generate_series(1, 100000) g
       join (select tube, p, row_number() over (order by g) - 1 as i from tubes where p >= 4) t
         on t.i = g % (select count(*) from tubes where p >= 4);
insert into pepsi.workqueue (stage, tube, partition)
select 'big', s.tube, s.p from slot_tubes s, generate_series(1, 3) where s.slot = 0;
analyze pepsi.workqueue;
select is((select count(*)::int from pepsi.workqueue where stage = 'big' and partition >= 4), 100000,
          'setup: slot 1 holds 100,000 pending rows of stage big');

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

-- The UPDATE of deploy/workqueue_claim.sql, word for word, with slot 0's
-- partitions as v_parts.
create temp table plans as
select pg_temp.explain_rolled_back($sql$
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = now()
      from (select q.workqueue_id as id
              from unnest('{big}'::text[], '{16}'::int[]) as s(stage, cap)
                   cross join lateral (
                       select q.workqueue_id
                         from unnest('{0,1,2,3}'::int[]) as p(partition)
                              cross join lateral (
                                  select q.workqueue_id from pepsi.workqueue q
                                   where q.stage = s.stage and q.partition = p.partition and q.status = 'pending'
                                   order by q.workqueue_id
                                   limit s.cap) q
                        order by q.workqueue_id
                        limit s.cap) q) picked
     where w.workqueue_id = picked.id and w.status = 'pending'
    returning w.workqueue_id, w.stage, w.sender_key
$sql$) as explain;

select is((select (explain->0->'Plan'->>'Actual Rows')::int from plans), 9,
          'issue 14: the explained claim of slot 0 updated its 9 rows of big (then rolled back)');
select is((select count(*)::int from plans p, pg_temp.plan_nodes(p.explain) n
            where n->>'Node Type' in ('Seq Scan', 'Bitmap Heap Scan', 'Sort')
               and n->>'Relation Name' is not distinct from 'workqueue'), 0,
          'issue 14: no Seq Scan or bitmap scan of workqueue in slot 0''s claim');
select is((select array_agg(distinct n->>'Index Name') from plans p, pg_temp.plan_nodes(p.explain) n
            where n->>'Relation Name' = 'workqueue' and n->>'Alias' <> 'w'),
          '{workqueue_pending_idx}'::text[], 'issue 14: the per-partition scans use workqueue_pending_idx');
select cmp_ok((select sum((n->>'Actual Rows')::numeric * (n->>'Actual Loops')::numeric)::int
                 from plans p, pg_temp.plan_nodes(p.explain) n
                where n->>'Relation Name' = 'workqueue' and n->>'Alias' <> 'w'),
              '<=', 4 * 16, 'issue 14: the per-partition scans read at most cap entries each (4 x 16)');
select cmp_ok((select (explain->0->'Plan'->>'Shared Hit Blocks')::int + (explain->0->'Plan'->>'Shared Read Blocks')::int
                 from plans),
              '<', 200, 'issue 14: slot 0''s claim touches fewer than 200 buffers beside 100,000 rows of slot 1');

-- The real function: only slot 0's rows, all of them.
insert into claimed select 5, * from pepsi.workqueue_claim('{big}', '{16}', p_partitions => '{0,1,2,3}');
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 5 and w.partition < 4), 9,
          'issue 14: beside 100,000 rows of slot 1, slot 0''s claim takes its 9 rows and no other');
insert into claimed select 6, c.workqueue_id, c.stage, c.sender_key
  from pepsi.workqueue_claim_fair('{big}', '{16}', '{1000}', '{}', '{}', '{}', p_partitions => '{0,1,2,3}') c;
select is((select count(*)::int from claimed where call = 6), 0,
          'issue 14: slot 0''s fair claim, its rows running, takes none of slot 1''s 100,000');

select * from finish();
rollback;
