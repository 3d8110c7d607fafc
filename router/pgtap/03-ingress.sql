-- issue 18: what pepsi-runner ingress calls on the router (router_ingress):
-- schema_api is the range every shard serves (and refuses shards without a
-- common level), webhook_provider_list is the shards' list and refuses
-- shards whose providers differ, ingress_stats_flush lands on shard 0 (on
-- shard 1 when shard 0 does not answer), the provider configuration runs
-- on every shard, and a shard that does not answer is PX070 naming it.
-- scripts/test-router makes the two shard databases (public.router_test);
-- what the shards are given is committed there (dblink, PL/Proxy): the end
-- of this file empties them again. (01-router.sql leaves its providers
-- hook0 and hook1 there, alike on both shards: this file looks at its own.)

begin;
select plan(24);

select dblink_connect('s0', (select conninfo from public.router_test where shard = 0));
select dblink_connect('s1', (select conninfo from public.router_test where shard = 1));

create function pg_temp.on_shard(p_conn text, p_sql text) returns text language sql
as $$ select t.v from dblink(p_conn, p_sql) as t(v text) $$;

select throws_ok($$select * from pepsi.schema_api()$$, 'PX041', null,
                 'issue 18: before cluster_apply the router''s schema_api routes nothing (PX041)');

select pg_temp.on_shard('s' || s, format('select pepsi.topology_set(16, 1); select pepsi.shard_topology_set(2, %L, %s)::text',
                                         pepsi_router.shard_map_even(16, 2), s))
  from generate_series(0, 1) s;
select pepsi_router.topology_set(16, 2, pepsi_router.shard_map_even(16, 2));
select count(*) from pepsi_router.cluster_apply((select array_agg(conninfo order by shard) from public.router_test));

-- schema_api: the range every shard serves ------------------------------------------------

create temp table api_def as
select pg_temp.on_shard('s1', 'select pg_get_functiondef(''pepsi.schema_api()''::regprocedure)') as def;
create function pg_temp.s1_api(p_level int, p_oldest int) returns text language sql as $$
    select pg_temp.on_shard('s1', format('create or replace function pepsi.schema_api(out level int, out oldest int) language sql immutable as %L; select ''done''',
                                         format('select %s, %s', p_level, p_oldest)))
$$;

select is((select level || ':' || oldest from pepsi.schema_api()),
          pg_temp.on_shard('s0', 'select level || '':'' || oldest from pepsi.schema_api()'),
          'issue 18: shards alike: the router''s schema_api is the shards''');
select pg_temp.s1_api(5, 2);
select is((select level || ':' || oldest from pepsi.schema_api()),
          (select least(level, 5) || ':' || greatest(oldest, 2)
             from dblink('s0', 'select level, oldest from pepsi.schema_api()') as t(level int, oldest int)),
          'issue 18: shards at different levels: the intersection (lowest level, highest oldest)');
select pg_temp.s1_api(9, 7);
select throws_ok($$select * from pepsi.schema_api()$$, 'PX073', null,
                 'issue 18: shards whose API ranges do not overlap: PX073');
select throws_like($$select * from pepsi.schema_api()$$, 'the shards serve no common API level: they serve levels %7..9%',
                   '... saying which ranges they serve');
select pg_temp.on_shard('s1', (select def from api_def) || '; select ''done''');
select is((select level || ':' || oldest from pepsi.schema_api()),
          pg_temp.on_shard('s0', 'select level || '':'' || oldest from pepsi.schema_api()'),
          '(shard 1''s schema_api restored)');

-- webhook_provider_list: the same on every shard or refused --------------------------------

create temp table hook as
select (select t from (select 'tube-' || g as t from generate_series(1, 100) g) x
         where pepsi_router.shard_of_tube(t) = 0 order by t limit 1) as t0,
       (select t from (select 'tube-' || g as t from generate_series(1, 100) g) x
         where pepsi_router.shard_of_tube(t) = 1 order by t limit 1) as t1;
select pepsi.webhook_provider_add('rhook0', 'stripe', array['whsec_r0'], 's', t0) from hook;
select pepsi.webhook_provider_add('rhook1', 'standard-webhooks', array['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 's', t1)
  from hook;
select is(pg_temp.on_shard('s0', 'select string_agg(provider || ''='' || tube, '','' order by provider) from pepsi.webhook_provider where provider like ''rhook%''')
          || '/' || pg_temp.on_shard('s1', 'select string_agg(provider || ''='' || tube, '','' order by provider) from pepsi.webhook_provider where provider like ''rhook%'''),
          (select format('rhook0=%s,rhook1=%s/rhook0=%s,rhook1=%s', t0, t1, t0, t1) from hook),
          'issue 18: webhook_provider_add through the router adds the provider on every shard');
select is((select array_agg(l::text order by l.provider) from pepsi.webhook_provider_list() l where l.provider like 'rhook%'),
          (select array_agg(t.r order by t.r) from dblink('s1', 'select l::text from pepsi.webhook_provider_list() l where l.provider like ''rhook%''') as t(r text)),
          'issue 18: providers alike: the router''s webhook_provider_list is a shard''s, row for row');
select pg_temp.on_shard('s1', 'select pepsi.webhook_provider_add_secret(''rhook1'', ''whsec_c2hhcmQxb25seQ==''); select ''done''');
select throws_ok($$select * from pepsi.webhook_provider_list()$$, 'PX073', null,
                 'issue 18: a secret added on one shard only: the router refuses the provider list (PX073)');
select throws_like($$select * from pepsi.webhook_provider_list()$$,
                   'the shards'' webhook providers differ: "rhook1" not the same on every shard',
                   '... naming the provider that differs (and not the one that does not)');
select lives_ok($$select pepsi.webhook_provider_add_secret('rhook1', 'whsec_c2hhcmQxb25seQ==')$$,
                'issue 18: webhook_provider_add_secret through the router (shard 1 already has it: no change there)');
select is((select count(*)::int from pepsi.webhook_provider_list() l where l.secrets ? 'whsec_c2hhcmQxb25seQ=='), 1,
          '... and the shards are alike again: the list has the new secret');
select pg_temp.on_shard('s0', (select format('select pepsi.webhook_provider_change(''rhook0'', ''{"tube": "%s"}''); select ''done''', t1) from hook));
select throws_like($$select * from pepsi.webhook_provider_list()$$, 'the shards'' webhook providers differ: "rhook0"%',
                   'issue 18: the same secrets but another tube on one shard: refused');
select pepsi.webhook_provider_change('rhook0', jsonb_build_object('tube', t0)) from hook;
select pg_temp.on_shard('s1', 'select pepsi.webhook_provider_disable(''rhook0''); select ''done''');
select throws_like($$select * from pepsi.webhook_provider_list()$$, 'the shards'' webhook providers differ: "rhook0"%',
                   'issue 18: a provider disabled on one shard only: refused');
select pepsi.webhook_provider_enable('rhook0');
select is((select string_agg(provider, ',' order by provider) from pepsi.webhook_provider_list() where provider like 'rhook%'), 'rhook0,rhook1',
          'issue 18: enabled again through the router on every shard: both providers listed');
select ok(has_function_privilege('pepsi_ingress', 'pepsi.webhook_provider_list()', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.webhook_provider_list()', 'execute')
          and not has_function_privilege('pepsi_operator', 'pepsi.webhook_provider_list()', 'execute'),
          'issue 18: the router''s provider list (secrets) is pepsi_ingress''s alone, as on a shard');

-- ingress_stats_flush: shard 0, or the next that answers -----------------------------------

select pepsi.ingress_stats_flush('e2e-router:1', '{"stored": 3, "rejected.bad_signature": 2}');
select is(pg_temp.on_shard('s0', 'select string_agg(counter || ''='' || value, '','' order by counter) from pepsi.ingress_stats where instance = ''e2e-router:1''')
          || '/' || coalesce(pg_temp.on_shard('s1', 'select string_agg(counter, '','') from pepsi.ingress_stats where instance = ''e2e-router:1'''), 'none'),
          'rejected.bad_signature=2,stored=3/none',
          'issue 18: an ingress''s counters through the router land on shard 0 (and nowhere else)');
select throws_ok($$select pepsi.ingress_stats_flush('e2e-router:1', '{"bogus": 1}')$$, 'PX003', null,
                 'issue 18: the shard''s own refusal keeps its SQLSTATE (PX003)');

-- Shard 0 does not answer (its conninfo made unreachable in this transaction).
alter server pepsi_shards options (set p0 'host=/nonexistent port=1 dbname=gone');
select pepsi.ingress_stats_flush('e2e-router:1', '{"stored": 5}');
select is(pg_temp.on_shard('s1', 'select string_agg(counter || ''='' || value, '','') from pepsi.ingress_stats where instance = ''e2e-router:1'''),
          'stored=5',
          'issue 18: shard 0 down: the counters land on shard 1 (a down shard 0 does not fail the other shards'' bursts)');
select throws_ok($$select * from pepsi.schema_api()$$, 'PX070', null,
                 'issue 18: schema_api with shard 0 down: PX070');
select throws_like($$select * from pepsi.schema_api()$$, 'shard 0 did not answer%', '... naming shard 0');
select throws_like($$select * from pepsi.webhook_provider_list()$$, 'shard 0 did not answer%',
                   'issue 18: webhook_provider_list with shard 0 down: PX070 naming shard 0');
select throws_ok($$select pepsi.webhook_provider_disable('rhook1')$$, 'PX070', null,
                 'issue 18: a provider change with a shard down: PX070');
alter server pepsi_shards options (set p1 'host=/nonexistent port=1 dbname=gone');
select throws_ok($$select pepsi.ingress_stats_flush('e2e-router:1', '{"stored": 1}')$$, 'PX070', null,
                 'issue 18: no shard answers: the counters are refused (PX070)');

-- Empty the shards again (their rows are committed there).
select pg_temp.on_shard('s' || s, 'delete from pepsi.webhook_provider where provider like ''rhook%''; delete from pepsi.ingress_stats; select pepsi.shard_topology_clear(); select ''done''')
  from generate_series(0, 1) s;

select * from finish();
rollback;
