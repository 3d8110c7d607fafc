-- Verify pepsi:shard_topology on pg

begin;

select singleton, shard_count, shard, set_at from pepsi.shard_self where false;
select partition, shard from pepsi.shard_map where false;
select 'pepsi.topology_fingerprint_of(text, int, int[], int, int[])'::regprocedure;
select 'pepsi.shard_read()'::regprocedure;
select 'pepsi.shard_topology_set(int, int[], int)'::regprocedure;
select 'pepsi.shard_topology_clear()'::regprocedure;
select 'pepsi.shard_identity()'::regprocedure;
select 'pepsi.webhook_provider_tubes(text[])'::regprocedure;
-- topology_check returns the shard (API level 3).
select shard from pepsi.topology_check(0) where false;
select 1 / (level >= 3)::int from pepsi.schema_api();

-- issue 13: every index of the change, by name.
select 'pepsi.shard_self_pkey'::regclass;
select 'pepsi.shard_map_pkey'::regclass;

rollback;
