-- Verify pepsi:topology on pg

begin;

select singleton, partition_count, hash_name, version, fingerprint, changed_at from pepsi.topology where false;
select partition, owner_slot from pepsi.partition_map where false;
select 'pepsi.topology_fingerprint_of(text, int, int[])'::regprocedure;
select 'pepsi.topology_read()'::regprocedure;
select 'pepsi.topology_fingerprint()'::regprocedure;
select 'pepsi.topology_check(int)'::regprocedure;
select 'pepsi.topology_write(text, int, int[], int, text, int[])'::regprocedure;
select 'pepsi.topology_map_check(int[], int)'::regprocedure;
select 'pepsi.topology_set(int, int, text)'::regprocedure;
select 'pepsi.partition_map_set(int[])'::regprocedure;
select partitions from pepsi.topology_check(0) where false;

-- issue 13: every index of the change, by name.
select 'pepsi.topology_pkey'::regclass;
select 'pepsi.partition_map_pkey'::regclass;
select 'pepsi.partition_map_owner_slot_idx'::regclass;

rollback;
