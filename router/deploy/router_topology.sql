-- Deploy pepsi_router:router_topology to pg
-- requires: tube_hash
--
-- The router database (issue 18): PL/Proxy functions with the names and
-- arguments of pepsi's public API, each sending its call to the shard that
-- owns the call's tube (or id). This change holds what routing needs:
-- the router's copy of the sharded topology, exactly what every shard
-- stores (deploy/shard_topology.sql): the tube hash's name, the partition
-- count, the owner slot and the shard of every partition, the shard count
-- and the fingerprint over all of it. The tube hash itself is the main
-- project's deploy/tube_hash.sql (router/deploy/tube_hash.sql is a link
-- to it): one algorithm, one file.
--
-- A router whose topology has changed routes nothing until
-- pepsi_router.cluster_apply (router_cluster) has checked every shard
-- against it: applied_fingerprint is what was checked, and routing
-- refuses (PX041) while it differs from fingerprint. So a topology typed
-- on the router alone never sends a tube to a shard that does not own it.
--
-- Error codes, as on a shard (deploy/schema.sql) plus:
--   PX070  a shard did not answer (down, unreachable, refused the
--          connection): only calls for its tubes or ids fail; the message
--          names the shard
--   PX071  cluster_apply refused: a shard's fingerprint, shard number or
--          partition count is not the router's topology (nothing changed)

begin;

create extension plproxy;

create schema pepsi_router;

comment on schema pepsi_router is
    'The router''s own objects (issue 18): the sharded topology''s copy, the PL/Proxy helpers each public function of schema pepsi calls, and cluster_apply.';

grant usage on schema pepsi_router to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;

create table pepsi_router.topology (
    singleton           boolean not null default true
                        constraint topology_pkey primary key
                        constraint topology_singleton_check check (singleton),
    hash_name           text not null
                        constraint topology_hash_name_check check (hash_name = 'fnv1a64'),
    partition_count     int not null
                        constraint topology_partition_count_check check (partition_count between 1 and 65536),
    slots               int[] not null,
    shard_count         int not null
                        constraint topology_shard_count_check check (shard_count between 1 and 32768),
    shards              int[] not null,
    fingerprint         text not null,
    applied_fingerprint text,
    version             bigint not null
                        constraint topology_version_check check (version >= 1),
    changed_at          timestamptz not null default now(),
    constraint topology_map_size_check
        check (cardinality(slots) = partition_count and cardinality(shards) = partition_count)
);

comment on table pepsi_router.topology is
    'Issue 18: the router''s copy of the sharded topology (one row): hash, partition count, owner slot and shard of each partition, shard count, fingerprint (the same text every shard hashes), and the fingerprint cluster_apply last checked every shard against (routing refuses while they differ).';
comment on column pepsi_router.topology.singleton is 'Always true: the table holds at most one row.';
comment on column pepsi_router.topology.hash_name is 'The tube hash: fnv1a64, as on the shards.';
comment on column pepsi_router.topology.partition_count is 'Partitions of the tube hash (1 to 65536), as on every shard.';
comment on column pepsi_router.topology.slots is 'slots[i]: the owner slot of partition i - 1 inside its shard (part of the fingerprint).';
comment on column pepsi_router.topology.shard_count is 'How many shards (1 to 32768); PL/Proxy partition n of the cluster is shard n.';
comment on column pepsi_router.topology.shards is 'shards[i]: the shard that owns partition i - 1.';
comment on column pepsi_router.topology.fingerprint is 'SHA-256 hex of "<hash>;<count>;<slots>;shards;<shard count>;<shards>" (docs/tubes.md): every shard''s pepsi.topology_fingerprint() must equal it.';
comment on column pepsi_router.topology.applied_fingerprint is 'The fingerprint cluster_apply last found on every shard; NULL before. Routing refuses (PX041) unless it equals fingerprint.';
comment on column pepsi_router.topology.version is 'Counts the router topology''s changes, from 1.';
comment on column pepsi_router.topology.changed_at is 'When the router''s topology last changed.';

create function pepsi_router.fingerprint_of(p_hash text, p_count int, p_slots int[], p_shard_count int,
                                            p_shards int[])
returns text
language sql immutable parallel safe
as $$
-- The sharded fingerprint, the text of deploy/shard_topology.sql's
-- pepsi.topology_fingerprint_of(text, int, int[], int, int[]) (docs/tubes.md):
-- a difference would show at once, as cluster_apply refusing every shard.
    select encode(sha256(convert_to(p_hash || ';' || p_count || ';' || array_to_string(p_slots, ',')
                                    || ';shards;' || p_shard_count || ';' || array_to_string(p_shards, ','),
                                    'UTF8')), 'hex')
$$;

comment on function pepsi_router.fingerprint_of(text, int, int[], int, int[]) is
    'Internal: the sharded fingerprint (issue 18), the same text a shard hashes: "<hash>;<count>;<slots>;shards;<shard count>;<shards>".';

create function pepsi_router.shard_map_even(p_partition_count int, p_shard_count int)
returns int[]
language sql immutable parallel safe
as $$
-- A shard map of contiguous ranges: partition p on shard
-- p * p_shard_count / p_partition_count, as topology_set splits slots.
-- For operators who do not need another map.
    select array(select (g::bigint * p_shard_count / p_partition_count)::int
                   from generate_series(0, p_partition_count - 1) g order by g)
$$;

comment on function pepsi_router.shard_map_even(int, int) is
    'Issue 18: a shard map of contiguous ranges (partition p on shard p * shards / partitions), for pepsi_router.topology_set and pepsi.shard_topology_set.';

create function pepsi_router.topology_set(p_partition_count int, p_shard_count int, p_shards int[],
                                          p_slots int[] default null)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi_router, pg_temp
as $$
-- For operators: the router's copy of the sharded topology:
-- p_partition_count partitions of fnv1a64, p_shards[i] the shard of
-- partition i - 1 (0 .. p_shard_count - 1), p_slots[i] its owner slot
-- inside that shard (NULL: slot 0 everywhere, one runner per shard).
-- Returns the fingerprint, which every shard must show and every
-- runner's TOPOLOGY_FINGERPRINT must be. Routing stops (PX041) until
-- pepsi_router.cluster_apply has found it on every shard. PX003 for a
-- count or map out of range.
declare
    v_slots int[] := coalesce(p_slots, array_fill(0, array[p_partition_count]));
    v_fingerprint text;
begin
    if p_partition_count is null or p_partition_count not between 1 and 65536 then
        raise exception 'partition count must be 1 to 65536, not %', coalesce(p_partition_count::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_shard_count is null or p_shard_count not between 1 and 32768 then
        raise exception 'shard count must be 1 to 32768, not %', coalesce(p_shard_count::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_shards is null or cardinality(p_shards) <> p_partition_count or array_ndims(p_shards) <> 1
       or array_lower(p_shards, 1) <> 1 or array_position(p_shards, null) is not null
       or exists (select 1 from unnest(p_shards) s where s not between 0 and p_shard_count - 1) then
        raise exception 'a shard map needs one shard (0 to %) for each of the % partitions', p_shard_count - 1,
              p_partition_count using errcode = 'PX003';
    end if;
    if cardinality(v_slots) <> p_partition_count or array_ndims(v_slots) <> 1 or array_lower(v_slots, 1) <> 1
       or array_position(v_slots, null) is not null or exists (select 1 from unnest(v_slots) s where s < 0) then
        raise exception 'a partition map needs one owner slot (0 or more) for each of the % partitions',
              p_partition_count using errcode = 'PX003';
    end if;
    v_fingerprint := pepsi_router.fingerprint_of('fnv1a64', p_partition_count, v_slots, p_shard_count, p_shards);
    insert into pepsi_router.topology as t (singleton, hash_name, partition_count, slots, shard_count, shards,
                                            fingerprint, applied_fingerprint, version, changed_at)
    values (true, 'fnv1a64', p_partition_count, v_slots, p_shard_count, p_shards, v_fingerprint, null, 1, now())
    on conflict (singleton) do update
       set partition_count = excluded.partition_count, slots = excluded.slots,
           shard_count = excluded.shard_count, shards = excluded.shards, fingerprint = excluded.fingerprint,
           version = t.version + 1, changed_at = excluded.changed_at,
           applied_fingerprint = case when t.applied_fingerprint = excluded.fingerprint
                                      then t.applied_fingerprint end
     where t.fingerprint is distinct from excluded.fingerprint;
    return v_fingerprint;
end
$$;

comment on function pepsi_router.topology_set(int, int, int[], int[]) is
    'Schema owner (operators), issue 18: sets the router''s copy of the sharded topology (partition count, shard count, shard of each partition, owner slot of each: default 0) and returns its fingerprint; routing refuses (PX041) until cluster_apply has found it on every shard. PX003 out of range.';

create function pepsi_router.topology_fingerprint()
returns text
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- The router's fingerprint: what every shard's pepsi.topology_fingerprint()
-- and every runner's TOPOLOGY_FINGERPRINT must be. NULL without one.
    select t.fingerprint from pepsi_router.topology t
$$;

comment on function pepsi_router.topology_fingerprint() is
    'pepsi_reader (and operators setting up runners), issue 18: the router''s sharded fingerprint, which every shard and every runner''s TOPOLOGY_FINGERPRINT must show; NULL without a topology.';

create function pepsi_router.routable()
returns pepsi_router.topology
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
-- The topology to route by: PX041 when there is none or cluster_apply has
-- not yet found it on every shard (a topology typed on the router alone
-- never routes).
declare
    v pepsi_router.topology;
begin
    select * into v from pepsi_router.topology;
    if v.fingerprint is null then
        raise exception 'the router has no topology: set it (pepsi_router.topology_set) and apply it (pepsi_router.cluster_apply)'
              using errcode = 'PX041';
    end if;
    if v.applied_fingerprint is distinct from v.fingerprint then
        raise exception 'the router''s topology (fingerprint %) has not been applied to the shards: run pepsi_router.cluster_apply',
              v.fingerprint using errcode = 'PX041';
    end if;
    return v;
end
$$;

comment on function pepsi_router.routable() is
    'Internal: the router''s topology when it may route: PX041 without one or before cluster_apply has checked it on every shard.';

create function pepsi_router.shard_of_tube(p_tube text)
returns int
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The shard that owns a tube (T-01 one level up): shards[tube_partition(
-- tube, partition_count)], the very hash and count of the shards. PX006
-- for a name that is not a tube name (as on a shard), PX041 when the
-- router may not route.
declare
    v pepsi_router.topology := pepsi_router.routable();
begin
    if p_tube is null or not pepsi.tube_name_valid(p_tube) then
        raise exception 'invalid tube name "%": 1 to 200 bytes of A-Za-z0-9-+/;.$_(), not starting with -',
              coalesce(left(p_tube, 64), 'NULL') using errcode = 'PX006';
    end if;
    return v.shards[pepsi.tube_partition(p_tube, v.partition_count) + 1];
end
$$;

comment on function pepsi_router.shard_of_tube(text) is
    'pepsi_reader and the routed functions, issue 18: the shard that owns a tube under the router''s topology (the shards'' own hash). PX006 invalid name, PX041 no applied topology.';

create function pepsi_router.shard_of_id(p_id bigint)
returns int
language plpgsql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- The shard of a message id: ids carry it in their top bits (shard s
-- numbers from s << 48, deploy/shard_topology.sql). PX004 (unknown
-- message id) for an id no shard can have given: NULL, 0 or below, or a
-- shard the topology does not have. PX041 when the router may not route.
declare
    v pepsi_router.topology := pepsi_router.routable();
begin
    if p_id is null or p_id < 1 or (p_id >> 48) >= v.shard_count then
        raise exception 'message % does not exist: no shard of % gives that id', coalesce(p_id::text, 'NULL'),
              v.shard_count using errcode = 'PX004';
    end if;
    return (p_id >> 48)::int;
end
$$;

comment on function pepsi_router.shard_of_id(bigint) is
    'pepsi_reader and the routed functions, issue 18: the shard of a message id (id >> 48). PX004 for an id no shard gives, PX041 no applied topology.';

revoke all on table pepsi_router.topology from public;
revoke all on function pepsi_router.fingerprint_of(text, int, int[], int, int[]),
    pepsi_router.shard_map_even(int, int), pepsi_router.topology_set(int, int, int[], int[]),
    pepsi_router.topology_fingerprint(), pepsi_router.routable(), pepsi_router.shard_of_tube(text),
    pepsi_router.shard_of_id(bigint) from public;
grant select on pepsi_router.topology to pepsi_reader;
grant execute on function pepsi_router.topology_fingerprint(), pepsi_router.shard_of_tube(text),
    pepsi_router.shard_of_id(bigint), pepsi_router.shard_map_even(int, int) to pepsi_reader;

commit;
