-- Deploy pepsi_router:router_cluster to pg
-- requires: router_topology
--
-- The PL/Proxy cluster (issue 18) is PL/Proxy's SQL/MED configuration:
-- the foreign server pepsi_shards of the wrapper plproxy (which CREATE
-- EXTENSION plproxy makes), option pN the libpq connection string of
-- shard N, and a PUBLIC user mapping. One command makes it from the
-- topology: pepsi_router.cluster_apply(conninfos), in its own
-- transaction: it (re)creates the server, then asks every shard through
-- it who it is (pepsi.shard_identity(): shard number, shard count,
-- partition count, fingerprint) and raises PX071, rolling all of it
-- back, unless each is the router's topology; only then may the router
-- route (applied_fingerprint).
--
-- PL/Proxy maps RUN ON n to a partition by masking with the partition
-- count, which must then be a power of two; with the server option
-- modular_mapping it takes n modulo the count instead, so shard n is
-- PL/Proxy partition n for any shard count, and the router only ever
-- runs on 0 .. shard_count - 1.
--
-- PL/Proxy connects to a shard as the caller (current_user: the routed
-- functions are SECURITY INVOKER), so each shard grants the caller's
-- login its duty role as usual, and a shard refuses what the login may
-- not do there. Passwords: in the conninfo (readable by who reads the
-- server's options), better a passfile or the user mapping's options.

begin;

create function pepsi_router.shard_identity_on(p_shard int)
returns table (shard int, shard_count int, fingerprint text, partition_count int)
language plproxy
as $$
    -- What shard p_shard of the cluster says it is (pepsi.shard_identity).
    cluster 'pepsi_shards';
    run on p_shard;
    select s.shard, s.shard_count, s.fingerprint, s.partition_count from pepsi.shard_identity() s;
$$;

comment on function pepsi_router.shard_identity_on(int) is
    'Internal (cluster_apply), issue 18: PL/Proxy call of pepsi.shard_identity() on shard p_shard.';

create function pepsi_router.cluster_apply(p_conninfos text[], p_options jsonb default '{}')
returns table (shard int, fingerprint text)
language plpgsql
set search_path = pg_catalog, pepsi_router, pg_temp
as $$
-- For operators (the schema owner), issue 18: (re)creates the SQL/MED
-- server pepsi_shards from the router's topology, p_conninfos[n + 1] the
-- libpq connection string of shard n (one per shard, PX003 otherwise),
-- with a PUBLIC user mapping and USAGE for the duty roles; p_options adds
-- PL/Proxy cluster options (e.g. {"connection_lifetime": "600",
-- "query_timeout": "30"}; default connection_lifetime 1800). Then asks
-- every shard who it is and raises, rolling everything back:
--   PX070 a shard does not answer (naming it);
--   PX071 a shard is not the router's topology: another fingerprint, no
--         shard level, another shard number (conninfos in the wrong
--         order) or count.
-- On success the router routes by this topology (applied_fingerprint)
-- and the shards with their fingerprints are returned. PX041 without a
-- router topology.
declare
    v pepsi_router.topology;
    v_opts text;
    v_id record;
    v_n int;
begin
    select * into v from pepsi_router.topology;
    if v.fingerprint is null then
        raise exception 'the router has no topology: set it with pepsi_router.topology_set first'
              using errcode = 'PX041';
    end if;
    if p_conninfos is null or cardinality(p_conninfos) <> v.shard_count or array_ndims(p_conninfos) <> 1
       or array_lower(p_conninfos, 1) <> 1 or array_position(p_conninfos, null) is not null then
        raise exception 'cluster_apply needs one connection string for each of the % shards, shard 0 first',
              v.shard_count using errcode = 'PX003';
    end if;
    if p_options is null or jsonb_typeof(p_options) <> 'object' then
        raise exception 'cluster options must be a JSON object' using errcode = 'PX003';
    end if;
    if exists (select 1 from pg_catalog.pg_foreign_server s where s.srvname = 'pepsi_shards') then
        drop server pepsi_shards cascade; -- its user mappings go with it
    end if;
    select string_agg(format('%I %L', o.key, o.value), ', ' order by o.ord)
      into v_opts
      from (select 'modular_mapping' as key, '1' as value, 0 as ord
            union all
            select 'connection_lifetime', coalesce(p_options->>'connection_lifetime', '1800'), 1
            union all
            select e.key, e.value, 2 from jsonb_each_text(p_options) e
             where e.key not in ('connection_lifetime', 'modular_mapping')
            union all
            select 'p' || (c.i - 1), c.conninfo, 3 + c.i::int
              from unnest(p_conninfos) with ordinality as c(conninfo, i)) o;
    execute format('create server pepsi_shards foreign data wrapper plproxy options (%s)', v_opts);
    create user mapping for public server pepsi_shards;
    grant usage on foreign server pepsi_shards to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;
    for v_n in 0 .. v.shard_count - 1 loop
        begin
            select * into v_id from pepsi_router.shard_identity_on(v_n);
        exception when sqlstate 'XX000' then
            raise exception 'shard % did not answer: %', v_n, sqlerrm using errcode = 'PX070';
        end;
        if v_id.fingerprint is distinct from v.fingerprint or v_id.shard is distinct from v_n
           or v_id.shard_count is distinct from v.shard_count or v_id.partition_count is distinct from v.partition_count then
            raise exception 'shard % is not the router''s topology: it says shard % of %, % partitions, fingerprint %; the router has shard % of %, % partitions, fingerprint %',
                  v_n, coalesce(v_id.shard::text, 'none'), coalesce(v_id.shard_count::text, 'none'),
                  coalesce(v_id.partition_count::text, 'none'), coalesce(v_id.fingerprint, 'none'),
                  v_n, v.shard_count, v.partition_count, v.fingerprint
                  using errcode = 'PX071',
                        hint = 'On that shard: pepsi.topology_set and pepsi.shard_topology_set as the router''s (docs/tubes.md), or fix the order of the connection strings.';
        end if;
        shard := v_n;
        fingerprint := v_id.fingerprint;
        return next;
    end loop;
    update pepsi_router.topology t set applied_fingerprint = t.fingerprint;
end
$$;

comment on function pepsi_router.cluster_apply(text[], jsonb) is
    'Schema owner (operators), issue 18: (re)creates the PL/Proxy SQL/MED server pepsi_shards (pN = conninfo of shard N, modular_mapping, connection_lifetime, PUBLIC user mapping) and checks every shard''s shard_identity against the router''s topology; PX070 a shard does not answer, PX071 a shard disagrees (all rolled back), PX003 not one conninfo per shard, PX041 no topology. Returns each shard and its fingerprint.';

revoke all on function pepsi_router.shard_identity_on(int), pepsi_router.cluster_apply(text[], jsonb) from public;

commit;
