-- issue 18: every public function producers and operators call on a shard
-- has its route on the router, with the same name, arguments and result,
-- or is on the exclusion list below with the reason. GENERATED from a real
-- shard's catalogue (dblink), so a new public function on a shard without
-- a route fails "every producer and operator function of a shard is
-- routed or excluded".
--
-- The rule: a function of schema pepsi on a shard is public for
-- producers and operators when pepsi_ingress or pepsi_operator may
-- execute it and pepsi_reader may not (what pepsi_reader may execute is a
-- read-only look-up of one database: schema_api, topology_check,
-- tube_stats, message_history ...; dashboards read the router's views
-- instead). Stage programs and runners (pepsi_worker, pepsi_runner)
-- connect to their own shard and are not routed, except workqueue_move and
-- workqueue_pause, which take an id and are routed too.

begin;
select plan(6);

select dblink_connect('s0', (select conninfo from public.router_test where shard = 0));

create temp table shard_fn as
select * from dblink('s0', $q$
    select p.proname::text, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid),
           pg_get_function_arguments(p.oid)
      from pg_proc p
     where p.pronamespace = 'pepsi'::regnamespace
       and (has_function_privilege('pepsi_ingress', p.oid, 'execute')
            or has_function_privilege('pepsi_operator', p.oid, 'execute'))
       and not has_function_privilege('pepsi_reader', p.oid, 'execute')
$q$) as t(name text, args text, result text, full_args text);

create temp table excluded (name text primary key, why text not null);
insert into excluded values
    -- (The ingress's own calls are routed too: webhook_provider_list and
    -- ingress_stats_flush, router_ingress.sql, router/pgtap/03-ingress.sql.)
    -- What the router itself asks a shard to route events.
    ('webhook_provider_tubes',   'router: asked by the router''s webhook ingest, not by producers'),
    -- Keyed by (provider, external id), not by tube or id: an operator
    -- runs them on the shard of the provider's tube.
    ('webhook_tombstone_add',    'operator: by provider and external id, on the provider''s shard'),
    ('webhook_tombstone_remove', 'operator: by provider and external id, on the provider''s shard'),
    ('webhook_backfill_request', 'operator: by provider and external id, on the provider''s shard');

create temp table router_fn as
select p.proname::text as name, pg_get_function_identity_arguments(p.oid) as args,
       pg_get_function_result(p.oid) as result, pg_get_function_arguments(p.oid) as full_args
  from pg_proc p
 where p.pronamespace = 'pepsi'::regnamespace;

select cmp_ok((select count(*)::int from shard_fn), '>=', 20,
              'the rule finds the shard''s producer and operator functions (not an empty set)');
select is((select array_agg(s.name || '(' || s.args || ')' order by s.name)
             from shard_fn s
            where not exists (select 1 from router_fn r where r.name = s.name)
              and not exists (select 1 from excluded e where e.name = s.name)),
          null,
          'issue 18: every producer and operator function of a shard is routed or excluded');
select is((select array_agg(s.name || '(' || s.args || ') shard: ' || s.result || ', router: ' || r.result order by s.name)
             from shard_fn s join router_fn r on r.name = s.name
            where r.args <> s.args or r.result <> s.result),
          null,
          'issue 18: each route has the shard function''s arguments and result');
select is((select array_agg(s.name order by s.name)
             from shard_fn s join router_fn r on r.name = s.name
            where r.full_args <> s.full_args),
          null,
          'issue 18: ... and its parameter names and defaults');
select is((select array_agg(e.name order by e.name) from excluded e where not exists (select 1 from shard_fn s where s.name = e.name)),
          null, 'the exclusion list names only functions the rule finds (no stale entries)');

-- The views: the shard's columns, with a first column shard.
select is((select array_agg(v.name order by v.name)
             from (values ('queue_overview'), ('failed'), ('stuck'), ('sender_backlog'), ('stage_totals'),
                          ('anomaly_dashboard')) v(name)
            where array['shard'] || array(select s.c from dblink('s0', format(
                      'select attname::text || '':'' || format_type(atttypid, atttypmod) from pg_attribute where attrelid = ''pepsi.%s''::regclass and attnum > 0 and not attisdropped order by attnum', v.name))
                      as s(c text))
                  <> array['shard'] || array(select a.attname::text || ':' || format_type(a.atttypid, a.atttypmod)
                                               from pg_attribute a
                                              where a.attrelid = ('pepsi.' || v.name)::regclass and a.attnum > 1
                                                and not a.attisdropped order by a.attnum)),
          null,
          'issue 18: the router''s views have the shard''s columns (names and types) after a column shard');

select * from finish();
rollback;
