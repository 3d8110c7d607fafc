-- Verify pepsi_router:router_topology on pg

begin;

select 1 / count(*) from pg_catalog.pg_extension where extname = 'plproxy';
select singleton, hash_name, partition_count, slots, shard_count, shards, fingerprint, applied_fingerprint,
       version, changed_at from pepsi_router.topology where false;
select 'pepsi_router.fingerprint_of(text, int, int[], int, int[])'::regprocedure;
select 'pepsi_router.shard_map_even(int, int)'::regprocedure;
select 'pepsi_router.topology_set(int, int, int[], int[])'::regprocedure;
select 'pepsi_router.topology_fingerprint()'::regprocedure;
select 'pepsi_router.routable()'::regprocedure;
select 'pepsi_router.shard_of_tube(text)'::regprocedure;
select 'pepsi_router.shard_of_id(bigint)'::regprocedure;
-- The documented example (docs/tubes.md): the shards hash the same text.
select 1 / (pepsi_router.fingerprint_of('fnv1a64', 4, '{0,0,0,0}', 2, '{0,0,1,1}')
            = encode(sha256('fnv1a64;4;0,0,0,0;shards;2;0,0,1,1'::bytea), 'hex'))::int;
select 'pepsi_router.topology_pkey'::regclass;

rollback;
