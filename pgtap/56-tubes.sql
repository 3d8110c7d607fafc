-- Tubes in SQL (issue 14, T-15, T-21, T-22, T-32, T-33, T-35..T-37, T-45):
-- a tube exists while a row names it or a pause is in force, default
-- always; pepsi.tubes lists them, tube_stats and tube_pause answer PX043
-- for a tube that does not exist and write nothing; a pause disappears
-- when it expires; the plain and fair claims skip a paused tube's rows
-- until the pause ends.
--
-- The topology: 8 partitions, one slot (the claims below are slot 0's).

begin;
select plan(56);

select isnt(pepsi.topology_set(8, 1), null, 'setup: topology of 8 partitions, one slot');

-- Every row of every table of schema pepsi whose text mentions p_name:
-- what "no trace" means (T-22, T-35). But pepsi.workqueue_history (issue
-- 16), the archive of messages that left the queue, kept for its
-- retention: a past message's record names the tube it was in, as a
-- tombstone does, never a tube that exists (pepsi.tubes does not read
-- it). A partition's rows are counted once, through its parent.
create function pg_temp.traces(p_name text) returns bigint language plpgsql as $$
declare
    v_rel regclass;
    v_n bigint;
    v_total bigint := 0;
begin
    for v_rel in select c.oid::regclass from pg_class c
                  where c.relnamespace = 'pepsi'::regnamespace and c.relkind in ('r', 'p', 'm')
                    and not c.relispartition and c.oid <> 'pepsi.workqueue_history'::regclass loop
        execute format('select count(*) from %s t where strpos(t::text, %L) > 0', v_rel, p_name) into v_n;
        v_total := v_total + v_n;
    end loop;
    return v_total;
end $$;

-- The row count of every table of schema pepsi, as one value to compare.
create function pg_temp.table_counts() returns jsonb language plpgsql as $$
declare
    v_rel regclass;
    v_n bigint;
    v_all jsonb := '{}';
begin
    for v_rel in select c.oid::regclass from pg_class c
                  where c.relnamespace = 'pepsi'::regnamespace and c.relkind in ('r', 'p', 'm') loop
        execute format('select count(*) from %s', v_rel) into v_n;
        v_all := v_all || jsonb_build_object(v_rel::text, v_n);
    end loop;
    return v_all;
end $$;

-- One claimed row of p_stage's only pending row.
create function pg_temp.claim1(p_stage text) returns bigint language sql as $$
    select c.workqueue_id from pepsi.workqueue_claim(array[p_stage], '{1}') c
$$;

-- T-37: default ---------------------------------------------------------------------------

select is((select array_agg(t.tube) from pepsi.tubes t), '{default}'::text[],
          'T-37: on an empty queue the tubes are default alone');
select pepsi.workqueue_inject('d1') is not null as x from generate_series(1, 2);
select is((select count(*)::int from pepsi.tubes t where t.tube = 'default'), 1,
          'T-37: default exactly once while it holds rows');
select is((select t.pending::int from pepsi.tubes t where t.tube = 'default'), 2,
          'T-37: ... and its row is the one with its rows');
select is((select count(*)::int from pepsi.tube_stats('default')), 1,
          'T-24: default exists without a row too: tube_stats answers for it');

-- T-21: a tube is listed while it holds a row in any live state -------------------------

select pepsi.workqueue_inject('s1', p_tube => 'only.pending') is not null;
select pepsi.workqueue_inject('s2', p_tube => 'only.running') is not null;
select pg_temp.claim1('s2') is not null;
select pepsi.workqueue_inject('s3', p_tube => 'only.paused') is not null;
select pepsi.workqueue_pause(pg_temp.claim1('s3'), 's3', now() + interval '1 hour', 'later');
select pepsi.workqueue_inject('s4', p_tube => 'only.failed') is not null;
select pepsi.workqueue_fail(pg_temp.claim1('s4'), 's4', 'broken');
select results_eq(
    $$select t.tube, t.pending::int, t.running::int, t.paused::int, t.failed::int, t.timeout::int, t.paused_until
        from pepsi.tubes t where t.tube like 'only.%' order by t.tube$$,
    $$values ('only.failed', 0, 0, 0, 1, 0, null::timestamptz), ('only.paused', 0, 0, 1, 0, 0, null),
             ('only.pending', 1, 0, 0, 0, 0, null), ('only.running', 0, 1, 0, 0, 0, null)$$,
    'T-21: a tube holding one row, pending, running, paused or failed, is listed with that row');
select results_eq(
    $$select t.tube, t.partition, t.owner_slot from pepsi.tubes t where t.tube like 'only.%' order by t.tube$$,
    $$select n, pepsi.tube_partition(n, 8),
             (select m.owner_slot from pepsi.partition_map m where m.partition = pepsi.tube_partition(n, 8))
        from unnest('{only.failed,only.paused,only.pending,only.running}'::text[]) n order by n$$,
    'T-01: each listed with its partition and the owner slot of the map');
select results_eq(
    $$select s.name, s.current_jobs_urgent::int, s.current_jobs_ready::int, s.current_jobs_reserved::int,
             s.current_jobs_delayed::int, s.current_jobs_buried::int, s.total_jobs::int, s.pause::int,
             s.pause_time_left::int
        from unnest('{only.pending,only.running,only.paused,only.failed}'::text[]) n,
             lateral pepsi.tube_stats(n) s$$,
    $$values ('only.pending', 0, 1, 0, 0, 0, 1, 0, 0), ('only.running', 0, 0, 1, 0, 0, 1, 0, 0),
             ('only.paused', 0, 0, 0, 1, 0, 1, 0, 0), ('only.failed', 0, 0, 0, 0, 1, 1, 0, 0)$$,
    'T-32: tube_stats: ready = pending, reserved = running, delayed = paused, buried = failed, total');
select is((select count(*)::int from pepsi.tubes t where t.tube = 'default'), 1,
          'T-37: default still exactly once beside other tubes');

-- T-22, T-35: gone with its last row ------------------------------------------------------

select pepsi.workqueue_inject('g1', p_tube => 'gone.t54', p_body => 'b'::bytea) is not null;
select pepsi.workqueue_inject('g1', p_tube => 'gone.t54') is not null;
select cmp_ok(pg_temp.traces('gone.t54'), '>', 0::bigint, 'setup: the tube''s rows are traces while they exist');
select ok(exists (select 1 from pepsi.tubes t where t.tube = 'gone.t54'), 'T-21: listed while it holds rows');
select pepsi.workqueue_finish(pg_temp.claim1('g1'), 'g1');
select ok(exists (select 1 from pepsi.tubes t where t.tube = 'gone.t54'),
          'T-34: still listed while its second row waits');
select pepsi.workqueue_finish(pg_temp.claim1('g1'), 'g1');
select ok(not exists (select 1 from pepsi.tubes t where t.tube = 'gone.t54'),
          'T-22, T-35: not listed once its last row has finished');
select is(pg_temp.traces('gone.t54'), 0::bigint, 'T-22, T-35: and no table of schema pepsi holds a trace of it');
select throws_ok($$select * from pepsi.tube_stats('gone.t54')$$, 'PX043', 'tube "gone.t54" not found',
                 'T-22: its statistics are NOT_FOUND');

-- T-36: re-created, it lands where it was ---------------------------------------------------

select pepsi.workqueue_inject('r1', p_tube => 'again.t') is not null;
create temp table before_loc as select t.partition, t.owner_slot from pepsi.tubes t where t.tube = 'again.t';
select is((select w.partition from pepsi.workqueue w where w.tube = 'again.t'),
          (select b.partition from before_loc b), 'setup: the row''s partition is the listed one');
select pepsi.workqueue_finish(pg_temp.claim1('r1'), 'r1');
select ok(not exists (select 1 from pepsi.tubes t where t.tube = 'again.t'), 'setup: the tube is gone');
select pepsi.workqueue_inject('r2', p_tube => 'again.t') is not null;
select results_eq($$select t.partition, t.owner_slot from pepsi.tubes t where t.tube = 'again.t'$$,
                  $$select b.partition, b.owner_slot from before_loc b$$,
                  'T-36: a tube created again after deletion is listed at the same partition and owner slot');
select is((select w.partition from pepsi.workqueue w where w.tube = 'again.t'), (select b.partition from before_loc b),
          'T-36: and its new row is in that partition');

-- T-15, T-32, T-33: NOT_FOUND, and nothing behind -------------------------------------------

create temp table counts_before as select pg_temp.table_counts() as c;
select throws_ok($$select * from pepsi.tube_stats('ghost.t54')$$, 'PX043', 'tube "ghost.t54" not found',
                 'T-32: tube_stats of a tube that does not exist is NOT_FOUND (PX043)');
select throws_ok($$select pepsi.tube_pause('ghost.t54', 0)$$, 'PX043', null,
                 'T-33: tube_pause(t, 0) of a tube that does not exist is NOT_FOUND (PX043)');
select throws_ok($$select pepsi.tube_pause('ghost.t54', 10)$$, 'PX043', 'tube "ghost.t54" not found',
                 'T-33: ... and with 10 seconds');
select is(pg_temp.table_counts(), (select c from counts_before),
          'T-15, T-32, T-33: no table of schema pepsi gained or lost a row');
select ok(not exists (select 1 from pepsi.tubes t where t.tube = 'ghost.t54'), 'T-15: and the tube is not listed');
select is((select s.total_jobs::int from pepsi.tube_stats('only.pending') s), 1, 'setup: a lookup of a tube that exists');
select is(pg_temp.table_counts(), (select c from counts_before), 'T-15: a lookup that succeeds writes nothing either');
select throws_ok($$select * from pepsi.tube_stats('-bad')$$, 'PX006', null, 'T-02: tube_stats of an invalid name is PX006');
select throws_ok($$select pepsi.tube_pause('bad name', 1)$$, 'PX006', null, 'T-02: tube_pause of an invalid name is PX006');
select throws_ok($$select pepsi.tube_pause('only.pending', -1)$$, 'PX003', null, 'tube_pause: negative seconds are PX003');
select throws_ok($$select pepsi.tube_pause('only.pending', 31536001)$$, 'PX003', null,
                 'tube_pause: more than input_limit(''pause_seconds'') (a year) is PX003');

-- Pause state: in force, then gone (T-45) ---------------------------------------------------

select is(pepsi.tube_pause('only.pending', 30), now() + interval '30 seconds', 'tube_pause returns the end of the pause');
select results_eq($$select s.pause::int, s.pause_time_left::int from pepsi.tube_stats('only.pending', now() + interval '10 seconds') s$$,
                  $$values (30, 20)$$, 'tube_stats: pause and pause-time-left in seconds');
select is((select t.paused_until from pepsi.tubes t where t.tube = 'only.pending'), now() + interval '30 seconds',
          'pepsi.tubes shows paused_until while the pause is in force');
-- A tube whose last row finished while paused exists while the pause does.
select pepsi.workqueue_inject('e1', p_tube => 'pause.only') is not null;
create temp table e1 as select pg_temp.claim1('e1') as id;
select is(pepsi.tube_pause('pause.only', 5), now() + interval '5 seconds', 'setup: pause a tube with one running row');
select pepsi.workqueue_finish((select id from e1), 'e1');
select ok(exists (select 1 from pepsi.tubes t where t.tube = 'pause.only'),
          'T-21: a tube without rows is listed while its pause is in force');
select throws_ok($$select * from pepsi.tube_stats('pause.only', now() + interval '6 seconds')$$, 'PX043', null,
                 'T-45: once the pause has expired the empty tube does not exist');
select is((select count(*)::int from pepsi.workqueue_claim('{nothing}', '{1}', now() + interval '6 seconds',
                                                           p_release_paused => true)), 0,
          'setup: the dispatcher''s heartbeat claim, 6 s later');
select is((select array_agg(tp.tube::text order by tp.tube) from pepsi.tube_pause tp), '{only.pending}'::text[],
          'T-45: the heartbeat claim swept the expired pause; the one in force stays');
select is(pg_temp.traces('pause.only'), 0::bigint, 'T-45: no table holds a trace of the expired, empty tube');
select is(
    (select array_agg(c.relname::text collate "C" order by c.relname) from pg_attribute a join pg_class c on c.oid = a.attrelid
      where c.relnamespace = 'pepsi'::regnamespace and c.relkind in ('r', 'p', 'm', 'f') and a.attnum > 0
        and not c.relispartition
        and not a.attisdropped and (a.attname ~ 'tube' or a.atttypid = 'pepsi.tube_name'::regtype)),
    -- workqueue: the rows a tube exists by; tube_pause: a pause while in
    -- force; the rest name a tube as a reference (a provider's and a
    -- sequence's target tube, a deleted message's record, the archive of
    -- messages that left, issue 16), never as a tube that exists
    -- (pepsi.tubes does not read them); beanstalk_ref (issue 17): a live
    -- beanstalkd session's use and watch references, unlogged, deleted
    -- with the session: a referenced tube exists (T-21) only while a
    -- client holds it, never a catalogue of empty tubes.
    '{beanstalk_ref,tube_pause,webhook_id_sequence,webhook_provider,workqueue,workqueue_history,workqueue_tombstones}'::text[] collate "C",
    'T-45: the only tables with a tube column are these: no catalogue of tubes');

-- Claims skip a paused tube's rows ------------------------------------------------------

-- The paused tube's rows are the oldest: a claim that did not skip them
-- would take them first.
select pepsi.workqueue_inject('cl', p_tube => 'cl.paused', p_origin_user => 'u' || g) is not null
  from generate_series(1, 4) g;
select pepsi.workqueue_inject('cl', p_tube => 'cl.open', p_origin_user => 'u' || g) is not null
  from generate_series(1, 4) g;
select isnt(pepsi.tube_pause('cl.paused', 60), null, 'setup: pause cl.paused for 60 s');
select is((select array_agg(w.tube order by w.workqueue_id) from pepsi.workqueue_claim('{cl}', '{3}') c
             join pepsi.workqueue w using (workqueue_id)),
          '{cl.open,cl.open,cl.open}'::text[], 'T-33: the plain claim skips the paused tube''s older rows');
select is((select count(*)::int from pepsi.workqueue_claim('{cl}', '{10}', now() + interval '59 seconds')), 1,
          'the plain claim takes none of them before the pause ends');
select is((select array_agg(distinct w.tube) from pepsi.workqueue_claim('{cl}', '{10}', now() + interval '61 seconds') c
             join pepsi.workqueue w using (workqueue_id)),
          '{cl.paused}'::text[], 'the plain claim takes them once p_now is past the pause');

select pepsi.workqueue_inject('cu', p_tube => 'cu.paused') is not null from generate_series(1, 2);
select isnt(pepsi.tube_pause('cu.paused', 60), null, 'setup: pause cu.paused for 60 s');
select is((select count(*)::int from pepsi.workqueue_claim('{cu}', '{10}')), 0, 'setup: nothing to claim while paused');
select is(pepsi.tube_pause('cu.paused', 0), null, 'tube_pause(t, 0) ends the pause');
select is((select count(*)::int from pepsi.workqueue_claim('{cu}', '{10}')), 2, 'the plain claim then takes the rows at once');

-- The fair claim: the paused rows are the oldest (FIFO share) and their
-- senders come first in the window (u1..u4 < v1..v4).
select pepsi.workqueue_inject('fc', p_tube => 'fc.paused', p_origin_user => 'u' || g) is not null
  from generate_series(1, 4) g;
select pepsi.workqueue_inject('fc', p_tube => 'fc.open', p_origin_user => 'v' || g) is not null
  from generate_series(1, 4) g;
select isnt(pepsi.tube_pause('fc.paused', 60), null, 'setup: pause fc.paused for 60 s');
select is((select array_agg(w.tube order by w.workqueue_id)
             from pepsi.workqueue_claim_fair('{fc}', '{3}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 100) c
             join pepsi.workqueue w using (workqueue_id)),
          '{fc.open,fc.open,fc.open}'::text[], 'T-33: the fair claim''s FIFO share skips the paused tube''s rows');
select is((select array_agg(w.tube order by w.workqueue_id)
             from pepsi.workqueue_claim_fair('{fc}', '{3}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 0,
                                             p_now => now() + interval '59 seconds') c
             join pepsi.workqueue w using (workqueue_id)),
          '{fc.open}'::text[], 'T-33: the fair claim''s sender window skips them until the pause ends');
select is((select array_agg(w.tube order by w.workqueue_id)
             from pepsi.workqueue_claim_fair('{fc}', '{10}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 0,
                                             p_now => now() + interval '61 seconds') c
             join pepsi.workqueue w using (workqueue_id)),
          '{fc.paused,fc.paused,fc.paused,fc.paused}'::text[], 'the fair claim takes them once p_now is past the pause');

-- One sender whose rows alternate between a paused and an open tube: the
-- window's first probe reads 16 of its 40 rows and the claim reads on
-- (depth, then up to cap) past them.
select pepsi.workqueue_inject('fm', p_tube => case when g % 2 = 0 then 'fm.paused' else 'fm.open' end,
                              p_origin_user => 'mix') is not null
  from generate_series(1, 40) g;
select isnt(pepsi.tube_pause('fm.paused', 60), null, 'setup: pause fm.paused for 60 s');
select results_eq($$select w.tube, count(*)::int
                      from pepsi.workqueue_claim_fair('{fm}', '{30}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 0) c
                      join pepsi.workqueue w using (workqueue_id) group by w.tube$$,
                  $$values ('fm.open', 20)$$,
                  'T-33: the fair claim reading on past its window skips the paused tube''s rows of the same sender');

-- The same with a second sender: each sender's depth is then 15 of the
-- cap of 30, the window holds 16 open rows of mix, and the claim reads on
-- past the depth to fill the cap (only 4 more open rows there are).
select pepsi.workqueue_inject('fn', p_tube => case when g % 2 = 0 then 'fn.paused' else 'fn.open' end,
                              p_origin_user => 'mix') is not null
  from generate_series(1, 40) g;
select pepsi.workqueue_inject('fn', p_tube => 'fn.open', p_origin_user => 'zz') is not null;
select isnt(pepsi.tube_pause('fn.paused', 60), null, 'setup: pause fn.paused for 60 s');
select results_eq($$select w.tube, count(*)::int
                      from pepsi.workqueue_claim_fair('{fn}', '{30}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 0) c
                      join pepsi.workqueue w using (workqueue_id) group by w.tube$$,
                  $$values ('fn.open', 21)$$,
                  'T-33: the fair claim filling its cap past the senders'' depth skips the paused tube''s rows');

select * from finish();
rollback;
