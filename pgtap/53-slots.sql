-- Owner slots on rows (issue 14): every row carries its tube's partition
-- and that partition's owner slot (set by pepsi.workqueue_create, moved
-- with the partition by partition_map_set), and the dispatcher's claims
-- and running-row operations given p_owner_slot see only rows of that
-- slot: a runner never claims, resets, gives back, requeues, defers or
-- strikes another slot's row. And a slot's plain claim, fair claim and
-- paused sweep cost the same whether another slot holds nothing or
-- 200,000 pending and 50,000 due paused rows of the same stage, and one
-- index probe per stage however many partitions the slot owns.
--
-- The topology: 8 partitions; slot 0 owns 0..3, slot 1 owns 4..7.

begin;
select plan(59);

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
select is((select array_agg(distinct owner_slot) from pepsi.workqueue), '{0}'::int[],
          'issue 14: ... and in owner slot 0');

-- The first topology over messages (one slot) gives each row its tube's
-- partition; the operator's partition_map_set then moves 4..7 to slot 1.
select isnt(pepsi.topology_set(8, 1), null, 'setup: topology of 8 partitions, one slot, over 12 messages');
select is((select count(*)::int from pepsi.workqueue w where w.partition <> pepsi.tube_partition(w.tube, 8)), 0,
          'issue 14: topology_set over messages without a topology re-partitions them by tube (T-01)');
select is((select count(*)::int from pepsi.workqueue w where w.owner_slot <> 0), 0,
          'issue 14: ... one slot: every row stays slot 0''s');
select isnt(pepsi.partition_map_set('{0,0,0,0,1,1,1,1}'), null, 'setup: partition_map_set gives 4..7 to slot 1');
select is((select count(*)::int from pepsi.workqueue w where w.owner_slot <> case when w.partition >= 4 then 1 else 0 end), 0,
          'issue 14, T-41: partition_map_set moves the rows of partitions 4..7 to owner slot 1, the others stay slot 0''s');
select is((select count(*)::int from pepsi.workqueue w where w.owner_slot = 1), 6,
          'issue 14: ... the 6 rows of slot 1''s 3 tubes');
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
select is((select count(*)::int from pepsi.workqueue w join pepsi.partition_map m using (partition)
            where w.owner_slot <> m.owner_slot), 0,
          'issue 14: ... and its owner slot to the map''s owner of that partition');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition >= 4), 15,
          'setup: stage a holds 15 rows of slot 1');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition < 4), 15,
          'setup: ... and 15 of slot 0');

-- The plain claim ------------------------------------------------------------------------

create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text);
insert into claimed select 1, * from pepsi.workqueue_claim('{a}', '{1000}', p_claim_id => 111, p_owner_slot => 1);
select is((select count(*)::int from claimed where call = 1), 15, 'issue 14: slot 1''s claim takes its 15 rows');
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 1 and w.partition < 4), 0,
          'issue 14: slot 1''s claim never returns a row of another slot''s partition');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'a' and w.partition < 4 and w.status = 'pending'),
          15, 'issue 14: slot 0''s rows are all still pending');

insert into claimed select 2, * from pepsi.workqueue_claim('{a}', '{4}', p_claim_id => 222);
select results_eq($$select workqueue_id from claimed where call = 2 order by workqueue_id$$,
                  $$select workqueue_id from pepsi.workqueue where stage = 'a' and partition < 4
                     order by workqueue_id limit 4$$,
                  'issue 14, D-41: without p_owner_slot the claim is slot 0''s: the 4 oldest rows of its partitions, over all of them');
select throws_ok($$select * from pepsi.workqueue_claim('{a}', '{4}', p_owner_slot => null)$$, 'PX003', null,
                 'issue 14: a NULL owner slot is refused (PX003), not read as every slot');

-- The fair claim -------------------------------------------------------------------------

insert into claimed select 3, c.workqueue_id, c.stage, c.sender_key
  from pepsi.workqueue_claim_fair('{f}', '{1000}', '{1000}', '{}', '{}', '{}', p_owner_slot => 0) c;
select is((select count(*)::int from claimed where call = 3), 6, 'issue 14: slot 0''s fair claim takes its 6 rows of f');
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 3 and w.partition >= 4), 0,
          'issue 14: slot 0''s fair claim never returns a row of another slot''s partition');
select is((select count(*)::int from pepsi.workqueue w where w.stage = 'f' and w.partition >= 4 and w.status = 'pending'),
          6, 'issue 14: slot 1''s rows of f are all still pending');
select is((select count(*)::int from pepsi.workqueue_sender_probe('f', '', null, 64, 0)), 0,
          'issue 14: the sender probe of slot 0 sees none of slot 1''s pending senders');
select is((select count(*)::int from pepsi.workqueue_sender_probe('f', '', null, 64, 1)), 3,
          'issue 14: ... and slot 1''s sees its three');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{f}', '{1}', '{1000}', '{}', '{}', '{}', p_owner_slot => null)$$,
                 'PX003', null, 'issue 14: the fair claim refuses a NULL owner slot (PX003)');

-- Running-row operations leave other slots' rows alone ----------------------------------

create temp table slot1_running as
select workqueue_id, stage, claim_id, state from pepsi.workqueue where status = 'running' and partition >= 4;
select is((select count(*)::int from slot1_running), 15, 'setup: slot 1 has 15 running rows of claim 111');

select throws_ok($$select pepsi.workqueue_reset_running(null)$$, 'PX003', null,
                 'issue 14: the start-up reset refuses a NULL owner slot (PX003): never every slot''s rows');
select is(pepsi.workqueue_reset_running(0), 10,
          'issue 14, D-18: slot 0''s start-up reset gives back its 10 running rows (4 plain, 6 fair)');
select is((select count(*)::int from pepsi.workqueue w join slot1_running s using (workqueue_id)
            where w.status = 'running' and w.claim_id = 111), 15,
          'issue 14: ... and leaves slot 1''s running rows running, their claim kept');

select is(pepsi.workqueue_unclaim('{111}', 0), 0,
          'issue 14: slot 0''s unclaim gives back nothing of slot 1''s claim');
select is((select count(*)::int from pepsi.workqueue where status = 'running' and claim_id = 111), 15,
          'issue 14: ... slot 1''s rows are still running');

select is(pepsi.workqueue_requeue(array(select workqueue_id from slot1_running),
                                  array(select stage from slot1_running), 0), 0,
          'issue 14: slot 0''s requeue moves none of slot 1''s rows');
select is(pepsi.workqueue_defer(array(select workqueue_id from slot1_running), array(select stage from slot1_running),
                                now() + interval '1 minute', 'lost connection', 0), 0,
          'issue 14: slot 0''s defer pauses none of slot 1''s rows');
select is(pepsi.workqueue_strike((select min(workqueue_id) from slot1_running), 'a', 'crash', 'died', now(), 0),
          null::pepsi.workqueue_status, 'issue 14: slot 0''s strike of slot 1''s row returns NULL');
select is((select count(*)::int from pepsi.workqueue w join slot1_running s using (workqueue_id)
            where w.status = 'running' and w.claim_id = 111 and w.state = s.state), 15,
          'issue 14: after reset, unclaim, requeue, defer and strike of slot 0: slot 1''s rows are untouched');

-- With slot 1's partitions they work.
select is(pepsi.workqueue_strike((select min(workqueue_id) from slot1_running), 'a', 'crash', 'died', now(), 1),
          'paused'::pepsi.workqueue_status, 'issue 14: the strike of the row''s own slot pauses it (first strike)');
select is(pepsi.workqueue_unclaim('{111}', 1), 14, 'issue 14: slot 1''s unclaim gives back its other 14 rows');

-- The paused sweep: slot 0 releases only its own due rows.
insert into claimed select 4, * from pepsi.workqueue_claim('{a}', '{1}', p_owner_slot => 0);
select is(pepsi.workqueue_strike((select workqueue_id from claimed where call = 4), 'a', 'crash', 'died', now(), 0),
          'paused'::pepsi.workqueue_status, 'setup: one paused row of slot 0');
select is((select released from pepsi.workqueue_release_paused(now() + interval '2 minutes', 0)), 1,
          'issue 14, D-93: slot 0''s paused sweep releases its one due row');
select is((select count(*)::int from pepsi.workqueue where status = 'paused' and owner_slot = 1), 1,
          'issue 14: ... and leaves slot 1''s due paused row paused');
select is(pepsi.workqueue_release_due(now() + interval '2 minutes', 1), 1,
          'issue 14: release_due of slot 1 releases it');
select is(pepsi.workqueue_reset_running(), 0, 'without p_owner_slot: slot 0 (nothing of it running now)');

-- The cost of slot 1's claims and sweep beside slot 0's backlog ------------------------
--
-- Slot 1 holds 12 pending rows of stage big (3 senders) and 2 due paused
-- rows. Each of its three calls (plain claim, fair claim, paused sweep) is
-- measured by this transaction's statistics counters (pgtap/05 explains
-- them: pending, not transactional, hence before/after differences), run
-- in a subtransaction that is rolled back so that each sees the same
-- queue: first with slot 0's 250,000 rows in another stage and failed
-- (nothing slot 1 could meet), then with the same rows moved into stage
-- big: 200,000 pending (1,000 senders, sorting before slot 1's) and
-- 50,000 due paused. The table's size, and so the planner's choices, stay
-- the same; index entries read must be the same, buffers may grow only
-- by the deeper index descents.

select pepsi.workqueue_inject('big', p_tube => s.tube, p_origin_user => 'u' || s.k) is not null as x
  from slot_tubes s, generate_series(1, 4) where s.slot = 1;
insert into pepsi.workqueue (stage, tube, partition, owner_slot, status, timeout)
select 'big', s.tube, s.p, 1, 'paused', now() - interval '1 hour' from slot_tubes s where s.slot = 1 and s.k <= 2;
select is((select count(*)::int from pepsi.workqueue where stage = 'big' and owner_slot = 1 and status = 'pending'), 12,
          'setup: slot 1 holds 12 pending rows of big');

create function pg_temp.counters()
returns jsonb language sql as $$
    select jsonb_build_object(
        'pending_scans', pg_stat_get_xact_numscans('pepsi.workqueue_pending_idx'::regclass),
        'pending_entries', pg_stat_get_xact_tuples_returned('pepsi.workqueue_pending_idx'::regclass),
        'sender_entries', pg_stat_get_xact_tuples_returned('pepsi.workqueue_pending_sender_idx'::regclass),
        'paused_entries', pg_stat_get_xact_tuples_returned('pepsi.workqueue_paused_idx'::regclass),
        'seq_scans', pg_stat_get_xact_numscans('pepsi.workqueue'::regclass),
        'index_scans', (select sum(pg_stat_get_xact_numscans(i.indexrelid)) from pg_index i
                         where i.indrelid = 'pepsi.workqueue'::regclass),
        'blocks', (select sum(pg_stat_get_xact_blocks_fetched(r)) from (
                       select 'pepsi.workqueue'::regclass union all
                       select i.indexrelid::regclass from pg_index i where i.indrelid = 'pepsi.workqueue'::regclass) x(r)))
$$;

-- The work of one call, rolled back: counter differences and its answer.
create function pg_temp.cost(p_sql text)
returns jsonb language plpgsql as $$
declare
    v_before jsonb;
    v_after jsonb;
    v_n bigint;
begin
    v_before := pg_temp.counters();
    begin
        execute p_sql into v_n;
        raise exception 'roll back the measured call' using errcode = 'PXZZZ';
    exception when sqlstate 'PXZZZ' then
        null;
    end;
    v_after := pg_temp.counters();
    return (select jsonb_object_agg(k, (v_after->>k)::numeric - (v_before->>k)::numeric)
              from jsonb_object_keys(v_after) k) || jsonb_build_object('answer', v_n);
end $$;

create temp table calls (call text, stmt text);
insert into calls values
    ('plain', $$select count(*) from pepsi.workqueue_claim('{big}', '{16}', p_owner_slot => 1)$$),
    ('fair', $$select count(*) from pepsi.workqueue_claim_fair('{big}', '{16}', '{1000}', '{}', '{}', '{}', p_owner_slot => 1)$$),
    ('sweep', $$select released::bigint from pepsi.workqueue_release_paused(now(), 1)$$);
create temp table costs (backlog boolean, call text, c jsonb);

insert into pepsi.workqueue (stage, tube, partition, owner_slot, origin_user)
select 'elsewhere', t.tube, t.p, 0, 's' || (g % 1000)
  from generate_series(1, 200000) g
       join (select tube, p, row_number() over (order by g) - 1 as i from tubes where p < 4) t
         on t.i = g % (select count(*) from tubes where p < 4);
insert into pepsi.workqueue (stage, tube, partition, owner_slot, status, timeout)
select 'elsewhere', s.tube, s.p, 0, 'failed', now() - interval '1 minute' from generate_series(1, 50000), slot_tubes s
 where s.slot = 0 and s.k = 1;
analyze pepsi.workqueue;
select pg_temp.cost(stmt) from calls;   -- planned, hint bits set
insert into costs select false, call, pg_temp.cost(stmt) from calls;

update pepsi.workqueue set stage = 'big', status = case when status = 'failed' then 'paused' else status end
 where stage = 'elsewhere';
analyze pepsi.workqueue;
select is((select count(*)::int from pepsi.workqueue where stage = 'big' and owner_slot = 0 and status = 'pending'), 200000,
          'setup: slot 0 holds 200,000 pending rows of big');
select is((select count(*)::int from pepsi.workqueue where owner_slot = 0 and status = 'paused' and timeout < now()), 50000,
          'setup: ... and 50,000 due paused rows');
select pg_temp.cost(stmt) from calls;
insert into costs select true, call, pg_temp.cost(stmt) from calls;

create temp view cost_pairs as
select a.call, a.c as without, b.c as beside from costs a join costs b on b.call = a.call and b.backlog
 where not a.backlog;

select is((select array_agg((beside->>'answer')::int order by call) from cost_pairs), '{12,12,2}'::int[],
          'issue 14: beside slot 0''s backlog, slot 1''s fair and plain claims take its 12 rows, its sweep releases its 2');
select is((select array_agg((without->>'answer')::int order by call) from cost_pairs), '{12,12,2}'::int[],
          'issue 14: ... as they do without it');
-- Two probes: the claim's, and the walk from the head that refreshes the
-- stage's mark (issue 19; once a second, and each measured call is rolled
-- back, so each refreshes). Once per partition would be five or more.
select is((select (beside->>'pending_scans')::int from cost_pairs where call = 'plain'), 2,
          'issue 14: slot 1''s plain claim probes workqueue_pending_idx once for its stage (and once for its mark, issue 19), not once per partition it owns');
select is((select beside->>'pending_entries' from cost_pairs where call = 'plain'),
          (select without->>'pending_entries' from cost_pairs where call = 'plain'),
          'issue 14: slot 1''s plain claim reads as many pending-index entries beside 200,000 rows of slot 0 as without them');
select is((select beside->>'sender_entries' from cost_pairs where call = 'fair'),
          (select without->>'sender_entries' from cost_pairs where call = 'fair'),
          'issue 14, D-61: slot 1''s fair claim reads as many sender-index entries beside slot 0''s 1,000 senders as without them');
select is((select beside->>'pending_entries' from cost_pairs where call = 'fair'),
          (select without->>'pending_entries' from cost_pairs where call = 'fair'),
          'issue 14, D-57: ... and as many pending-index entries for its FIFO share');
select is((select beside->>'paused_entries' from cost_pairs where call = 'sweep'),
          (select without->>'paused_entries' from cost_pairs where call = 'sweep'),
          'issue 14, D-93: slot 1''s paused sweep reads as many paused-index entries beside 50,000 due rows of slot 0 as without them');
select is((select array_agg((beside->>'seq_scans')::int) from cost_pairs), '{0,0,0}'::int[],
          'issue 14: none of the three scans workqueue sequentially');
-- Buffers include the writes (new row versions, their index entries),
-- and every descent is a level or two deeper beside 250,000 more entries:
-- half again plus 20, where reading slot 0's entries would cost thousands.
select is((select array_agg(call order by call) from cost_pairs
            where (beside->>'blocks')::numeric > 1.5 * (without->>'blocks')::numeric + 20),
          null, 'issue 14: none of the three fetches more buffers beside the backlog than the deeper descents explain');
select cmp_ok((select (beside->>'blocks')::numeric from cost_pairs where call = 'fair'), '<', 500::numeric,
              'issue 14: slot 1''s fair claim fetches fewer than 500 buffers beside the backlog');

-- Slot 0, owner of four partitions, claims its backlog with one probe.
select ok((select (c->>'pending_scans')::int from (
              select pg_temp.cost($$select count(*) from pepsi.workqueue_claim('{big}', '{16}', p_owner_slot => 0)$$) c) x) <= 3,
          'issue 14: slot 0''s claim of its 200,000-row backlog probes the pending index once, and at most twice for its mark (refresh, move) (4 partitions, one slot)');

-- The real functions: only slot 1's rows, all of them.
insert into claimed select 5, * from pepsi.workqueue_claim('{big}', '{16}', p_owner_slot => 1);
select is((select count(*)::int from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 5 and w.owner_slot = 1), 12,
          'issue 14: beside 200,000 rows of slot 0, slot 1''s claim takes its 12 rows and no other');
insert into claimed select 6, c.workqueue_id, c.stage, c.sender_key
  from pepsi.workqueue_claim_fair('{big}', '{16}', '{1000}', '{}', '{}', '{}', p_owner_slot => 1) c;
select is((select count(*)::int from claimed where call = 6), 0,
          'issue 14: slot 1''s fair claim, its rows running, takes none of slot 0''s 200,000');

select * from finish();
rollback;
