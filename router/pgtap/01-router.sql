-- issue 18: the router. Its topology hashes tubes and fingerprints the
-- sharded topology exactly as the shards do (checked against a real shard
-- through dblink, not against a copy of the formula); it routes nothing
-- until cluster_apply has found its topology on every shard; cluster_apply
-- refuses a shard with another topology, shards in the wrong order and a
-- shard that does not answer; a routed call lands on the shard that owns
-- its tube, id or webhook provider's tube (the expected shard computed
-- from the hash and the even map, not by the router), and the views add
-- up the shards.
-- scripts/test-router makes the two shard databases (public.router_test).
-- What the shards are given is committed there (dblink, PL/Proxy): the
-- end of this file empties them again.

begin;
select plan(34);

select dblink_connect('s0', (select conninfo from public.router_test where shard = 0));
select dblink_connect('s1', (select conninfo from public.router_test where shard = 1));

create function pg_temp.on_shard(p_conn text, p_sql text) returns text language sql
as $$ select t.v from dblink(p_conn, p_sql) as t(v text) $$;

create function pg_temp.conninfos() returns text[] language sql
as $$ select array_agg(conninfo order by shard) from public.router_test $$;

-- The hash and the fingerprint: the shards' own ----------------------------------------

select is((select count(*)::int
             from (select 't' || g as tube from generate_series(1, 300) g) t
            where pepsi.tube_partition(t.tube, 64)::text
                  <> pg_temp.on_shard('s0', format('select pepsi.tube_partition(%L, 64)', t.tube))),
          0, 'issue 18: the router''s tube partition is the shard''s for 300 tubes (one hash file, linked)');
select is(pepsi_router.fingerprint_of('fnv1a64', 8, '{0,0,0,0,1,1,1,1}', 2, '{0,0,1,1,0,0,1,1}'),
          pg_temp.on_shard('s0', 'select pepsi.topology_fingerprint_of(''fnv1a64'', 8, ''{0,0,0,0,1,1,1,1}'', 2, ''{0,0,1,1,0,0,1,1}'')'),
          'issue 18: the router''s sharded fingerprint is the shard''s function''s');
select is(pepsi_router.shard_map_even(8, 2), '{0,0,0,0,1,1,1,1}', 'shard_map_even: contiguous halves');

-- Before a topology, and before it is applied -------------------------------------------

select throws_ok($$select pepsi_router.shard_of_tube('a')$$, 'PX041', null,
                 'issue 18: no router topology: nothing is routed (PX041)');
select throws_ok($$select pepsi_router.topology_set(16, 2, '{0,1}')$$, 'PX003', null,
                 'issue 18: a shard map of the wrong size is refused (PX003)');
select throws_ok($$select pepsi_router.topology_set(16, 2, pepsi_router.shard_map_even(16, 3))$$, 'PX003', null,
                 'issue 18: a shard map naming shard 2 of 2 is refused (PX003)');
select is(pepsi_router.topology_set(16, 2, pepsi_router.shard_map_even(16, 2)),
          pepsi_router.fingerprint_of('fnv1a64', 16, array_fill(0, array[16]), 2, pepsi_router.shard_map_even(16, 2)),
          'issue 18: topology_set returns the fingerprint (slot 0 everywhere by default)');
select throws_ok($$select pepsi.workqueue_inject('s', p_tube => 'a')$$, 'PX041', null,
                 'issue 18: a topology not yet applied to the shards routes nothing (PX041)');
select throws_ok($$select pepsi_router.cluster_apply(pg_temp.conninfos() || 'dbname=x'::text)$$, 'PX003', null,
                 'issue 18: cluster_apply needs one conninfo per shard (PX003)');

-- cluster_apply against the shards ----------------------------------------------------

-- Shard 1 first gets another map (shard 0's matches the router).
select pg_temp.on_shard('s0', 'select pepsi.topology_set(16, 1)');
select pg_temp.on_shard('s0', 'select pepsi.shard_topology_set(2, ''{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}'', 0)');
select pg_temp.on_shard('s1', 'select pepsi.topology_set(16, 1)');
select pg_temp.on_shard('s1', 'select pepsi.shard_topology_set(2, ''{0,0,0,0,0,0,0,0,0,1,1,1,1,1,1,1}'', 1)');
select throws_like($$select pepsi_router.cluster_apply(pg_temp.conninfos())$$,
                   'shard 1 is not the router''s topology%',
                   'issue 18: a shard deployed with another shard map is refused by cluster_apply, naming it');
select throws_ok($$select pepsi_router.cluster_apply(pg_temp.conninfos())$$, 'PX071', null,
                 '... with PX071');
select is((select applied_fingerprint from pepsi_router.topology), null, '... and the router still routes nothing');
select is((select count(*)::int from pg_foreign_server where srvname = 'pepsi_shards'), 0,
          '... and the server it made is rolled back');
select pg_temp.on_shard('s1', 'select pepsi.shard_topology_set(2, ''{0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1}'', 1)');
select throws_like($$select pepsi_router.cluster_apply(array[(pg_temp.conninfos())[2], (pg_temp.conninfos())[1]])$$,
                   'shard 0 is not the router''s topology: it says shard 1 of 2%',
                   'issue 18: conninfos in the wrong order are refused (shard 0 says it is shard 1)');
select throws_ok($$select pepsi_router.cluster_apply(array[(pg_temp.conninfos())[1], 'host=/nonexistent port=1 dbname=gone'])$$,
                 'PX070', null, 'issue 18: a shard that does not answer refuses cluster_apply (PX070)');
select is((select array_agg(shard order by shard) from pepsi_router.cluster_apply(pg_temp.conninfos())), '{0,1}',
          'issue 18: cluster_apply with both shards right: both answer with the router''s fingerprint');
select is((select applied_fingerprint = fingerprint from pepsi_router.topology), true, '... and the router routes');

-- Routing -----------------------------------------------------------------------------

create temp table injected as
select t.tube, pepsi.tube_partition(t.tube, 16) * 2 / 16 as shard, pepsi.workqueue_inject('s', p_tube => t.tube) as id
  from (select 'tube-' || g as tube from generate_series(1, 40) g) t;
select is((select count(distinct shard)::int from injected), 2, 'the 40 tubes fall on both shards');
select is((select count(*)::int from injected where (id >> 48) <> shard), 0,
          'issue 18: an inject through the router comes back with an id of the shard that owns its tube');
select is((select count(*)::int from injected i
            where pg_temp.on_shard('s' || i.shard, format('select tube from pepsi.workqueue where workqueue_id = %s', i.id))
                  is distinct from i.tube), 0,
          'issue 18: each message is on the shard that owns its tube, under the id the router returned');
select is((select array_agg(id >> 48 order by ord)
             from pepsi.workqueue_inject_batch('[{"stage":"s","tube":"tube-1"},{"stage":"s","tube":"tube-2"},{"stage":"s","tube":"tube-3"}]')
                  with ordinality as b(id, ord)),
          (select array_agg(shard::bigint order by tube) from injected where tube in ('tube-1', 'tube-2', 'tube-3')),
          'issue 18: a batch over several shards: ids in input order, each from its tube''s shard');
select throws_like($$select pepsi.workqueue_inject_batch('[{"stage":"s","tube":"tube-1"},{"stage":"s!","tube":"tube-1"}]')$$,
                   'shard %: message 2: invalid stage name%',
                   'issue 18: a shard''s refusal names the shard and the element''s place in the whole batch');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage":"s","tube":"-bad"}]')$$, 'PX006', null,
                 'issue 18: a bad tube in a batch is refused before anything is sent (PX006)');
select throws_ok($$select pepsi.workqueue_delete(array[(3::bigint << 48) + 1], 'test')$$, 'PX004', null,
                 'issue 18: an id of a shard the topology does not have is PX004');
select is(pepsi.workqueue_retry(array(select id from injected)), 0,
          'by id: retry of pending messages on both shards changes none (summed)');
select is((select sum(messages)::int from pepsi.queue_overview), 43,
          'issue 18: the router''s queue_overview sums both shards (40 + 3)');
select is((select sum(messages)::int from pepsi.queue_overview where shard = 1),
          pg_temp.on_shard('s1', 'select sum(messages)::int from pepsi.queue_overview')::int,
          'issue 18: its rows of shard 1 are shard 1''s own view');
select is(pepsi.workqueue_delete(array(select id from injected), 'test'), 40,
          'issue 18: delete by ids of both shards: each shard deletes its own, counts summed');
select throws_ok($$select pepsi.workqueue_delete(array(select id from injected limit 1), 'test')$$, 'PX004', null,
                 'a shard''s own refusal keeps its SQLSTATE (PX004: already deleted)');

-- Webhook events go to the shard of their provider's tube ----------------------------------

create temp table hook_tube as
select (select tube from injected where shard = 0 order by tube limit 1) as t0,
       (select tube from injected where shard = 1 order by tube limit 1) as t1;
select pg_temp.on_shard('s' || s, format('select pepsi.webhook_provider_add(%L, ''stripe'', array[''whsec_x''], ''s'', %L)', 'hook0', t0))
  from hook_tube, generate_series(0, 1) s;
select pg_temp.on_shard('s' || s, format('select pepsi.webhook_provider_add(%L, ''stripe'', array[''whsec_x''], ''s'', %L)', 'hook1', t1))
  from hook_tube, generate_series(0, 1) s;
select is((select workqueue_id >> 48 from pepsi.webhook_event_ingest('hook1', 'one', 'hello')), 1::bigint,
          'issue 18: a webhook event through the router is queued on the shard of its provider''s tube');
select is((select array_agg(ord || ':' || outcome || ':' || (workqueue_id >> 48) order by ord)
             from pepsi.webhook_events_ingest(
                 '[{"provider": "hook1", "external_id": "a", "payload_length": 3},
                   {"provider": "hook0", "external_id": "b", "payload_length": 2},
                   {"provider": "hook1", "external_id": "c", "payload_length": 4}]', 'abcdeWXYZ')),
          '{1:new:1,2:new:0,3:new:1}',
          'issue 18: a burst over two shards: one row per event in input order, each queued on its provider''s shard');
select is(pg_temp.on_shard('s1', 'select string_agg(external_id || ''='' || convert_from(payload, ''UTF8''), '','' order by external_id) from pepsi.webhook_events where provider = ''hook1'''),
          'a=abc,c=WXYZ,one=hello', 'issue 18: each event''s own payload bytes went with it to its shard');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "nope", "external_id": "x", "payload": "p"}]')$$,
                 'PX011', null, 'issue 18: an unknown provider is refused by the router (PX011), nothing sent');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "hook0", "external_id": "x", "payload_length": 3}]', 'ab')$$,
                 'PX003', null, 'issue 18: payload lengths that do not add up are refused (PX003), nothing sent');

-- The shards' rows and topology are committed there: empty them again.
select pg_temp.on_shard('s' || s, 'select count(*) from (select pepsi.workqueue_delete(array_agg(workqueue_id), ''cleanup'') from pepsi.workqueue having count(*) > 0) d')
  from generate_series(0, 1) s;
select pg_temp.on_shard('s' || s, 'select pepsi.shard_topology_clear()') from generate_series(0, 1) s;

select * from finish();
rollback;
