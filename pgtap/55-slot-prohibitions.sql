-- The prohibitions of the topology (issue 14, T-42, T-44; T-43 is
-- runner/tests/e2e/65-two-runners.t): a tube's partition, and so its
-- owner slot, is pepsi.tube_partition(tube, partition_count) of the stored
-- topology and nothing else: not the number of live runners (dispatcher
-- locks held), not the load of the slots. "A runner holds slot n" is a
-- second session (dblink) holding pepsi.lock_key('dispatcher', n), as the
-- runner does.
--
-- The topology: 8 partitions; slot 0 owns 0..3, slot 1 owns 4..7. It is
-- written directly: topology_set would hold every slot's lock for the
-- rest of this transaction (its try-lock), and no second session could
-- then take one.

begin;
select plan(14);

create extension if not exists dblink;
select dblink_connect('run0', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                     split_part(current_setting('unix_socket_directories'), ',', 1)));
select dblink_connect('run1', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                     split_part(current_setting('unix_socket_directories'), ',', 1)));
create function pg_temp.lock_in(p_conn text, p_slot int) returns boolean language sql as $$
    select got from dblink(p_conn, format('select pg_try_advisory_lock(k.class_id, k.object_id)'
                                          ' from pepsi.lock_key(''dispatcher'', %s) k', p_slot)) as d(got boolean) $$;
create function pg_temp.live_runners() returns int language sql as $$
    select count(*)::int from pg_locks l, pepsi.lock_key('dispatcher', 0) k
     where l.locktype = 'advisory' and l.granted and l.objsubid = 2 and l.classid = k.class_id::oid and l.objid::text::bigint < 65536 $$;
-- The topology as stored: count, hash, version, fingerprint and the map.
create function pg_temp.topology_text() returns text language sql as $$
    select (select string_agg(t.partition_count || ' ' || t.hash_name || ' v' || t.version || ' ' || t.fingerprint, '')
              from pepsi.topology t)
           || ' ' || (select string_agg(m.partition || ':' || m.owner_slot, ',' order by m.partition) from pepsi.partition_map m) $$;

insert into pepsi.partition_map select g, g / 4 from generate_series(0, 7) g;
insert into pepsi.topology (partition_count, hash_name, version, fingerprint)
select 8, 'fnv1a64', 1, pepsi.topology_fingerprint_of('fnv1a64', 8, array(select g / 4 from generate_series(0, 7) g));
select lives_ok('select pepsi.topology_fingerprint()', 'setup: the topology written by hand is consistent');
select pg_temp.topology_text() as topology \gset

-- T-42 -------------------------------------------------------------------------
-- The same 100 tubes injected with 0, 1 and 2 runners live: each time
-- every row's partition is the hash's, and the three runs agree.
create temp table routed (live int, tube text, partition int);
create temp table ids (id bigint);
-- (Two statements: a statement does not see the rows its own function
-- calls insert.)
create function pg_temp.inject_round() returns void language sql as $$
    delete from ids;
    insert into ids select pepsi.workqueue_inject('t42', p_tube => 'job.' || g) from generate_series(1, 100) g;
    insert into routed select pg_temp.live_runners(), w.tube, w.partition
      from pepsi.workqueue w join ids on ids.id = w.workqueue_id $$;

select pg_temp.inject_round();
select ok(pg_temp.lock_in('run0', 0), 'slot 0''s runner starts');
select pg_temp.inject_round();
select ok(pg_temp.lock_in('run1', 1), 'slot 1''s runner starts');
select pg_temp.inject_round();
select is((select array_agg(distinct live order by live) from routed), '{0,1,2}'::int[],
          'setup: tubes injected with 0, 1 and 2 dispatcher locks held');
select is((select count(*)::int from routed where partition <> pepsi.tube_partition(tube, 8)), 0,
          'T-42: with 0, 1 or 2 live runners, workqueue_inject gives each tube pepsi.tube_partition(tube, partition_count)');
select is((select count(*)::int from (select tube from routed group by tube
                                       having count(distinct partition) > 1 or count(*) <> 3) x), 0,
          'T-42: each tube got the same partition with 0, 1 and 2 live runners');
select is((select count(distinct m.owner_slot)::int from routed r join pepsi.partition_map m using (partition)), 2,
          'T-42: and the tubes fall in both slots (the test would see a move)');
select is(pg_temp.topology_text(), :'topology', 'T-42: runners starting changed neither the topology nor the map');

-- T-44 -------------------------------------------------------------------------
-- Slot 0 holds a big backlog, slot 1 none; both runners live. New tubes
-- land by their hash only: as many in slot 0's partitions as the hash
-- says, none moved to the idle slot.
delete from pepsi.workqueue;
select count(pepsi.workqueue_inject('t44', p_tube => t.tube))
  from (select 'busy.' || g as tube from generate_series(1, 400) g where pepsi.tube_partition('busy.' || g, 8) < 4) t,
       generate_series(1, 25);
select cmp_ok((select count(*)::int from pepsi.workqueue w join pepsi.partition_map m using (partition)
                where m.owner_slot = 0 and w.status = 'pending'), '>=', 4000,
              'setup: slot 0 holds a backlog of thousands of pending rows');
select is((select count(*)::int from pepsi.workqueue w join pepsi.partition_map m using (partition)
            where m.owner_slot = 1), 0, 'setup: slot 1 holds none');
delete from ids;
insert into ids select pepsi.workqueue_inject('t44', p_tube => 'fresh.' || g) from generate_series(1, 200) g;
create temp table fresh as
select w.tube, w.partition from pepsi.workqueue w join ids on ids.id = w.workqueue_id;
select is((select count(*)::int from fresh where partition <> pepsi.tube_partition(tube, 8)), 0,
          'T-44: 200 new tubes each land in pepsi.tube_partition(tube, partition_count), whatever the slots'' load');
select is((select count(*)::int from fresh where partition < 4),
          (select count(*)::int from generate_series(1, 200) g where pepsi.tube_partition('fresh.' || g, 8) < 4),
          'T-44: the busy slot 0 gets every new tube its hash gives it, none moved to the idle slot 1');
select cmp_ok((select count(*)::int from fresh where partition < 4), '>', 0,
              'T-44: (some new tubes are slot 0''s: the test would see them moved)');
select is(pg_temp.topology_text(), :'topology', 'T-44: the backlog changed neither the topology (version) nor the map');

select dblink_disconnect('run0');
select dblink_disconnect('run1');
select * from finish();
rollback;
