-- issue 18: the shard level of the topology, on a shard database. Each
-- shard stores the whole sharded topology (slots and shards of every
-- partition) and which shard it is; the fingerprint covers the shards (and
-- is exactly the unsharded one without them); topology_check lists only
-- this shard's partitions of a slot; message ids carry their shard
-- (id >> 48); a shard refuses a tube of another shard (PX072); the rules
-- are topology_set's: anything on an empty queue, nothing that moves a tube with messages present (PX040), damaged
-- metadata never overwritten (PX041), runners stopped (PX042).
-- "A runner holds slot n" is a second session (dblink) holding the
-- dispatcher lock pepsi.lock_key('dispatcher', n), as the runner does.

begin;
select plan(42);

create extension if not exists dblink;
select dblink_connect('runner68', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                         split_part(current_setting('unix_socket_directories'), ',', 1)));

create function pg_temp.sha(p_text text) returns text language sql
as $$ select encode(sha256(convert_to(p_text, 'UTF8')), 'hex') $$;

-- No topology, no shard ---------------------------------------------------------------

select throws_ok($$select pepsi.shard_topology_set(2, '{0,1}', 0)$$, 'PX041', null,
                 'issue 18: no topology: a shard level has nothing to shard (PX041)');
select is((select row(shard, shard_count, fingerprint, partition_count)::text from pepsi.shard_identity()),
          '(,,,)', 'issue 18: shard_identity without a topology: all NULL');

select is(pepsi.topology_set(8, 1), pg_temp.sha('fnv1a64;8;0,0,0,0,0,0,0,0'),
          'T-08: an unsharded topology keeps the fingerprint formula of issue 14');

-- PX042: a runner of this database holds its slot -------------------------------------
-- (before anything here takes slot locks of its own for the transaction)

select is((select got from dblink('runner68', 'select pg_try_advisory_lock(k.class_id, k.object_id) from pepsi.lock_key(''dispatcher'', 0) k') as d(got boolean)),
          true, 'a second session (a runner of slot 0) holds the dispatcher lock of slot 0');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 1)$$, 'PX042', null,
                 'issue 18: setting the shard level while a runner of this database runs is refused (PX042)');
select is((select got from dblink('runner68', 'select pg_advisory_unlock(k.class_id, k.object_id) from pepsi.lock_key(''dispatcher'', 0) k') as d(got boolean)),
          true, 'the runner of slot 0 stops');
select is((select count(*)::int from pepsi.shard_self) + (select count(*)::int from pepsi.shard_map), 0,
          'PX042 wrote nothing');

select is(pepsi.topology_set(8, 2), pg_temp.sha('fnv1a64;8;0,0,0,0,1,1,1,1'),
          'T-08: two slots, still the fingerprint formula of issue 14');
select is((select shard from pepsi.topology_check(0)), null, 'issue 18: not a shard: topology_check''s shard is NULL');
select is((select partitions from pepsi.topology_check(0)), '{0,1,2,3}', 'not a shard: slot 0 owns partitions 0..3');

-- PX003 --------------------------------------------------------------------------------

select throws_ok($$select pepsi.shard_topology_set(0, '{0,0,0,0,0,0,0,0}', 0)$$, 'PX003', null,
                 'issue 18: a shard count of 0 is refused (PX003)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 2)$$, 'PX003', null,
                 'issue 18: this shard must be below the shard count (PX003)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1}', 1)$$, 'PX003', null,
                 'issue 18: a shard map needs one shard per partition (PX003)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,2}', 1)$$, 'PX003', null,
                 'issue 18: a shard map naming shard 2 of 2 is refused (PX003)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,null}', 1)$$, 'PX003', null,
                 'issue 18: a shard map with a hole is refused (PX003)');

-- Shard 1 of 2 -------------------------------------------------------------------------

select is(pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 1),
          pg_temp.sha('fnv1a64;8;0,0,0,0,1,1,1,1;shards;2;0,0,1,1,0,0,1,1'),
          'issue 18, T-08: the fingerprint of a shard covers the shard map: "<hash>;<count>;<slots>;shards;<shard count>;<shards>"');
select is(pepsi.topology_fingerprint(), pg_temp.sha('fnv1a64;8;0,0,0,0,1,1,1,1;shards;2;0,0,1,1,0,0,1,1'),
          'issue 18: topology_fingerprint() is the sharded fingerprint, and the stored one matches (no PX041)');
select is((select version from pepsi.topology), 3::bigint, 'issue 18: setting the shard level counts as a topology change');
select is((select row(shard, shard_count, partition_count)::text from pepsi.shard_identity()), '(1,2,8)',
          'issue 18: shard_identity: shard 1 of 2, 8 partitions');
-- The runner of owner slot 0 on shard 1 serves only shard 1's partitions
-- that slot 0 owns: 2 and 3 (slot 0 owns 0..3, shard 1 owns 2, 3, 6, 7).
select is((select partitions from pepsi.topology_check(0)), '{2,3}',
          'issue 18: topology_check(0) on shard 1 lists only the partitions of this shard that slot 0 owns');
select is((select slot_partitions from pepsi.topology_check(1)), 2,
          'issue 18: ... and counts them (slot 1: partitions 6 and 7)');
select is((select shard from pepsi.topology_check(1)), 1, 'issue 18: topology_check returns the shard (the runner then needs TOPOLOGY_FINGERPRINT)');
-- Shard 0 of a map where slot 1 owns nothing: its runner has nothing to serve.
select is((select count(*)::int from pepsi.topology_check(1) c where c.slot_partitions > 0), 1,
          'slot 1 owns partitions on shard 1');

-- Ids carry their shard.
-- t1 is in partition 6 (shard 1), t3 in partition 0 (shard 0).
select is((select pepsi.workqueue_inject('s1', p_tube => 't1') >> 48), 1::bigint,
          'issue 18: a message on shard 1 has an id whose top bits (id >> 48) are 1');
select throws_ok($$select pepsi.workqueue_inject('s1', p_tube => 't3')$$, 'PX072', null,
                 'issue 18: shard 1 refuses a message for a tube of shard 0 (PX072)');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "s1", "tube": "t1"}, {"stage": "s1", "tube": "t3"}]')$$,
                 'PX072', null, 'issue 18: ... also in a batch, where nothing is written');
select is((select count(*)::int from pepsi.workqueue), 1, '... only the first message is there');
select is((select min(workqueue_id) from pepsi.workqueue), 1::bigint << 48,
          'issue 18: shard 1 numbers its messages from 1 << 48');

-- With messages present: no change that moves a tube (PX040) ------------------------------

select is(pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 1), pepsi.topology_fingerprint(),
          'issue 18: the same shard level again with messages present is a no-op that returns the fingerprint');
select is((select version from pepsi.topology), 3::bigint, '... and changes nothing (version stays)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,0}', 1)$$, 'PX040', null,
                 'issue 18: with messages present the shard map does not change (PX040)');
select throws_ok($$select pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 0)$$, 'PX040', null,
                 'issue 18: with messages present this database does not become another shard (PX040)');
select throws_ok($$select pepsi.shard_topology_clear()$$, 'PX040', null,
                 'issue 18: with messages present the shard level is not cleared (PX040)');
-- Moving a partition between this shard's owner slots stays allowed, and
-- the new fingerprint still covers the shards.
select is(pepsi.partition_map_set('{0,0,1,1,1,1,1,1}'),
          pg_temp.sha('fnv1a64;8;0,0,1,1,1,1,1,1;shards;2;0,0,1,1,0,0,1,1'),
          'issue 18: partition_map_set on a shard keeps the shards in the fingerprint');
select is((select partitions from pepsi.topology_check(1)), '{2,3,6,7}',
          'issue 18: slot 1 now owns all four partitions of shard 1');

-- Damaged shard metadata is PX041 (T-10) ------------------------------------------------

savepoint damaged;
update pepsi.shard_map set shard = 0 where partition = 7;
select throws_ok($$select pepsi.topology_fingerprint()$$, 'PX041', null,
                 'issue 18, T-10: a shard map that does not match the stored fingerprint is damaged (PX041)');
rollback to savepoint damaged;
delete from pepsi.shard_self;
select throws_ok($$select * from pepsi.topology_check(0)$$, 'PX041', null,
                 'issue 18, T-10: a shard map without shard_self is damaged (PX041): no runner serves');
rollback to savepoint damaged;

-- Back to an empty queue: anything may be set (T-12) -----------------------------------

delete from pepsi.workqueue;
select throws_ok($$select pepsi.topology_set(16, 2)$$, 'PX040', null,
                 'issue 18: the partition count cannot change under a shard map of the old size (PX040)');
select is(pepsi.shard_topology_set(2, '{0,0,1,1,0,0,1,1}', 0),
          pg_temp.sha('fnv1a64;8;0,0,1,1,1,1,1,1;shards;2;0,0,1,1,0,0,1,1'),
          'issue 18: on an empty queue this database may become shard 0 (same map, same fingerprint)');
select is((select pepsi.workqueue_inject('s1', p_tube => 't3')), 1::bigint,
          'issue 18: shard 0 numbers its messages from 1');
delete from pepsi.workqueue;
select is(pepsi.shard_topology_clear(), pg_temp.sha('fnv1a64;8;0,0,1,1,1,1,1,1'),
          'issue 18: shard_topology_clear on an empty queue: the unsharded fingerprint again');
select is((select count(*)::int from pepsi.topology_check(1) c where c.shard is null and c.partitions = '{2,3,4,5,6,7}'), 1,
          'issue 18: not a shard any more: slot 1 owns every partition the map gives it');

select * from finish();
rollback;
