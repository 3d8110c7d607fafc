-- issue 14: the topology and the partition map (T-05, T-08..T-12, T-41):
-- set freely on an empty queue, never re-routed under messages, changed
-- only by partition_map_set and only while the affected slots' runners are
-- stopped, never rewritten over damaged metadata, and a fingerprint that
-- moves with the hash, the count and the map and with nothing else.
-- "A runner holds slot n" is a second session (dblink) holding the
-- dispatcher lock pepsi.lock_key('dispatcher', n), as the runner does.

begin;
select plan(54);

create extension if not exists dblink;
select dblink_connect('runner1', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                        split_part(current_setting('unix_socket_directories'), ',', 1)));

-- Nothing set --------------------------------------------------------------------

select is(pepsi.topology_fingerprint(), null, 'T-10: no topology: no fingerprint');
select is((select count(*)::int from pepsi.topology_check(0)), 0, 'T-13: no topology: topology_check has no row');

-- T-41: a slot a runner holds refuses every change of its partitions ---------------
-- (first: the transaction-level slot locks topology_set takes below last
-- until the end of this test's transaction)

select is((select got from dblink('runner1', 'select pg_try_advisory_lock(k.class_id, k.object_id) from pepsi.lock_key(''dispatcher'', 1) k') as d(got boolean)),
          true, 'a second session (runner 1) holds the dispatcher lock of slot 1');
select throws_ok($$select pepsi.topology_set(8, 2)$$, 'PX042', null,
                 'T-41: a first topology that gives slot 1 partitions while runner 1 runs is refused (PX042)');
select lives_ok($$select pepsi.topology_set(8, 1)$$,
                'a first topology under which slot 0 keeps every partition moves nothing: allowed while runner 1 runs');
-- As if slot 1 had got half of them earlier, while its runner was stopped
-- (this transaction holds the locks of the slots it changed until its end,
-- so the map is written here by hand, fingerprint and all).
update pepsi.partition_map set owner_slot = 1 where partition >= 4;
update pepsi.topology set fingerprint = pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}');
select throws_ok($$select pepsi.topology_set(16, 2)$$, 'PX042', null,
                 'T-41: a count change needs every slot of the map free, even on an empty queue: refused while runner 1 runs (PX042)');
select throws_ok($$select pepsi.topology_set(8, 1)$$, 'PX042', null,
                 'T-41: taking slot 1''s partitions away while runner 1 runs is refused (PX042)');
select throws_ok($$select pepsi.partition_map_set('{0,0,0,1,1,1,1,1}')$$, 'PX042', null,
                 'T-41: giving slot 1 a partition while runner 1 runs is refused (PX042)');
select lives_ok($$select pepsi.partition_map_set('{0,0,2,3,1,1,1,1}')$$,
                'T-41: moving partitions from slot 0 to slots 2 and 3 (no runner) is allowed while runner 1 runs');
select row_eq($$select partition_count, version from pepsi.topology$$, row(8, 2::bigint),
              '... and the refusals changed nothing (count 8, version 2: the one allowed change)');
select is((select ok from dblink('runner1', 'select pg_advisory_unlock(k.class_id, k.object_id) from pepsi.lock_key(''dispatcher'', 1) k') as d(ok boolean)),
          true, 'runner 1 stops (its slot lock released)');

-- T-12: on an empty queue anything may be set -----------------------------------

select throws_ok($$select pepsi.topology_set(8, 2, 'xxh64')$$, 'PX003', null, 'an unknown hash is refused (PX003)');
select throws_ok($$select pepsi.topology_set(0)$$, 'PX003', null, 'a partition count of 0 is refused (PX003)');
select throws_ok($$select pepsi.topology_set(65537)$$, 'PX003', null, 'a partition count over 65536 is refused (PX003)');
select throws_ok($$select pepsi.topology_set(8, 9)$$, 'PX003', null, 'more slots than partitions are refused (PX003)');
select throws_ok($$select pepsi.topology_set(8, 0)$$, 'PX003', null, 'no slot is refused (PX003)');

-- The expected fingerprint is computed outside the code under test:
-- python3 -c 'import hashlib; print(hashlib.sha256(b"fnv1a64;8;0,0,0,0,1,1,1,1").hexdigest())'
select is(pepsi.topology_set(8, 2), '95c138cc5289c357f2b096a0f941a8a03bed82fb871ed99f32cc5e83ff3b76d4',
          'T-08, T-12: topology_set(8, 2) on an empty queue: its fingerprint is sha256("fnv1a64;8;0,0,0,0,1,1,1,1")');
select is((select array_agg(owner_slot order by partition) from pepsi.partition_map), '{0,0,0,0,1,1,1,1}'::int[],
          'T-01: two slots own contiguous halves of the partitions');
select row_eq($$select partition_count, hash_name, version from pepsi.topology$$, row(8, 'fnv1a64'::text, 3::bigint),
              'T-05: the count and hash are stored, the version counts the change (3)');
select row_eq($$select partition_count, hash_name, version, fingerprint, slot_partitions from pepsi.topology_check(1)$$,
              row(8, 'fnv1a64'::text, 3::bigint, '95c138cc5289c357f2b096a0f941a8a03bed82fb871ed99f32cc5e83ff3b76d4'::text, 4),
              'T-08, T-13: topology_check(1) confirms count, hash, version, fingerprint and the slot''s 4 partitions');
select is((select slot_partitions from pepsi.topology_check(7)), 0, 'a slot outside the map owns no partition');
select is(pepsi.topology_set(8, 2), pepsi.topology_fingerprint(), 'setting the same topology again returns its fingerprint');
select is((select version from pepsi.topology), 3::bigint, '... and changes nothing (version 3)');
select lives_ok($$select pepsi.topology_set(16, 4)$$, 'T-12: on an empty queue the count may change');
select row_eq($$select partition_count, version from pepsi.topology$$, row(16, 4::bigint), '... the version counts the change');
select is((select count(*)::int from pepsi.partition_map), 16, '... and the map has a row per partition');

-- The fingerprint: each of the three moves it, nothing else does ------------------

select isnt(pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}'), pepsi.topology_fingerprint_of('xxh64', 8, '{0,0,0,0,1,1,1,1}'),
            'T-08: the fingerprint changes with the hash');
select isnt(pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,0,0,0,0}'), pepsi.topology_fingerprint_of('fnv1a64', 9, '{0,0,0,0,0,0,0,0}'),
            'T-08: the fingerprint changes with the count');
select isnt(pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}'), pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,1,1,1,1,1}'),
            'T-08: the fingerprint changes with the map');
select is(pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}'), pepsi.topology_fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}'),
          'T-04, T-08: the same three give the same fingerprint');
select is(pepsi.topology_fingerprint(), pepsi.topology_fingerprint_of('fnv1a64', 16, (select array_agg(owner_slot order by partition) from pepsi.partition_map)),
          'the stored fingerprint is the one of the stored map');

-- With messages present (T-09, T-41) -------------------------------------------------

select pepsi.workqueue_inject('h1') as msg \gset
select fingerprint as fp_before from pepsi.topology \gset
select throws_ok($$select pepsi.topology_set(32, 4)$$, 'PX040', null, 'T-09, T-41: with messages the count cannot change (PX040)');
select throws_ok($$select pepsi.topology_set(16, 4, 'xxh64')$$, 'PX040', null, 'T-09, T-41: with messages the hash cannot change (PX040)');
select throws_ok($$select pepsi.topology_set(16, 2)$$, 'PX040', null, 'T-41: with messages topology_set cannot change the map (PX040)');
select is((select fingerprint from pepsi.topology), :'fp_before', '... and none of them changed anything');
select throws_ok($$select pepsi.partition_map_set('{0,1}')$$, 'PX003', null, 'partition_map_set needs one slot per partition (PX003)');
select throws_ok($$select pepsi.partition_map_set('{0,0,0,0,1,1,1,1,2,2,2,3,3,3,3,-1}')$$, 'PX003', null, 'a negative slot is refused (PX003)');
select throws_ok($$select pepsi.partition_map_set('{0,0,0,0,1,1,1,1,2,2,2,3,3,3,3,null}')$$, 'PX003', null, 'a NULL slot is refused (PX003)');
select is(pepsi.partition_map_set('{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}'),
          pepsi.topology_fingerprint_of('fnv1a64', 16, '{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}'),
          'T-41: with messages the map changes by partition_map_set, the slots stopped; it returns the new fingerprint');
select is((select array_agg(owner_slot order by partition) from pepsi.partition_map), '{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}'::int[],
          '... and stores the new map');

-- T-10: damaged metadata is never overwritten under messages ---------------------------

savepoint damaged;
delete from pepsi.partition_map where partition = 15;
select throws_ok($$select pepsi.topology_fingerprint()$$, 'PX041', null, 'T-10: a map missing a row is damage (PX041), not a fingerprint');
select throws_ok($$select * from pepsi.topology_check(0)$$, 'PX041', null, 'T-10: topology_check reports the damage (PX041)');
select throws_ok($$select pepsi.topology_set(16, 2)$$, 'PX041', null, 'T-10: topology_set does not write a map over damage while messages exist (PX041)');
select throws_ok($$select pepsi.partition_map_set('{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}')$$, 'PX041', null,
                 'T-10: nor does partition_map_set (PX041)');
rollback to damaged;
update pepsi.partition_map set owner_slot = 5 where partition = 3;
select throws_ok($$select pepsi.topology_fingerprint()$$, 'PX041', null, 'T-10: a map that no longer matches the stored fingerprint is damage (PX041)');
rollback to damaged;
delete from pepsi.topology;
select throws_ok($$select pepsi.topology_set(16, 1)$$, 'PX041', null, 'T-10: a map without its topology row is damage (PX041), not "no topology"');
select is((select count(*)::int from pepsi.partition_map), 16, '... and the map was left as it was');
-- T-12: with no message left, the damage may be replaced.
delete from pepsi.workqueue;
select lives_ok($$select pepsi.topology_set(16, 2)$$, 'T-12: on an empty queue a damaged topology may be set afresh');
rollback to damaged;

-- No topology yet, messages present: slot 0 owned everything so far ---------------------

delete from pepsi.partition_map;
delete from pepsi.topology;
select throws_ok($$select pepsi.topology_set(256, 2)$$, 'PX040', null,
                 'T-10: messages and no topology: a map that takes partitions from slot 0 is refused (PX040)');
select lives_ok($$select pepsi.topology_set(256, 1)$$,
                'messages and no topology: a map under which slot 0 keeps everything may be set (no tube moves)');
rollback to damaged;

-- Who may read and set it ----------------------------------------------------------------

set local role pepsi_reader;
select is((select partition_count from pepsi.topology), 16, 'pepsi_reader reads pepsi.topology');
select throws_ok($$select pepsi.topology_set(16, 2)$$, '42501', null, 'pepsi_reader cannot set the topology');
reset role;
set local role pepsi_runner;
select is((select slot_partitions from pepsi.topology_check(1)), 8, 'pepsi_runner confirms its slot with topology_check');
select throws_ok($$select pepsi.partition_map_set('{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}')$$, '42501', null,
                 'pepsi_runner cannot change the map');
reset role;

select dblink_disconnect('runner1');
select * from finish();
rollback;
