-- Verify pepsi:tube_hash on pg

begin;

select 'pepsi.tube_hash(pepsi.tube_name)'::regprocedure;
select 'pepsi.tube_partition(pepsi.tube_name, int)'::regprocedure;

-- The published check value of FNV-1a 64 for "a" (0xaf63dc4c8601ec8c).
select 1 / (pepsi.tube_hash('a') = x'af63dc4c8601ec8c'::bigint)::int;

rollback;
