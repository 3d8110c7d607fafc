-- issue 14: the tube hash in SQL against the published vectors
-- (testdata/tube-hash-vectors.json, computed by scripts/gen-tube-vectors
-- with an implementation of its own; scripts/test-sql loads the file into
-- public.pepsi_testdata): every valid name's FNV-1a 64 (T-01, T-03, T-14),
-- its partition for every count (T-01), every invalid name refused (T-02).
-- runner/tests/test_tube.c checks the same file against the C twin, so
-- the two agree (T-30).

begin;
select plan(18);

create temp table v on commit drop as
select e ->> 'name' as name, (e ->> 'hash')::numeric as hash, e -> 'partition' as part
  from public.pepsi_testdata d, jsonb_array_elements(d.body -> 'valid') e
 where d.file = 'tube-hash-vectors.json';
create temp table bad on commit drop as
select e ->> 'name' as name, e ->> 'reason' as reason
  from public.pepsi_testdata d, jsonb_array_elements(d.body -> 'invalid') e
 where d.file = 'tube-hash-vectors.json';
create temp table counts on commit drop as
select c::int as n
  from public.pepsi_testdata d, jsonb_array_elements_text(d.body -> 'counts') c
 where d.file = 'tube-hash-vectors.json';

select cmp_ok((select count(*)::int from v), '>=', 40, 'T-14: the vectors file is loaded, 40 valid names or more');
select cmp_ok((select count(*)::int from bad), '>=', 10, 'T-02: and 10 invalid names or more');
select is((select body ->> 'algorithm' from public.pepsi_testdata where file = 'tube-hash-vectors.json'),
          'fnv1a64', 'the vectors are for fnv1a64');

-- The unsigned value of tube_hash's signed bigint.
create function pg_temp.u64(p bigint) returns numeric language sql immutable
as $$ select p::numeric + case when p < 0 then 18446744073709551616 else 0 end $$;

select is((select array_agg(v.name order by v.name) from v where pg_temp.u64(pepsi.tube_hash(v.name)) <> v.hash),
          null, 'T-01, T-03, T-14: tube_hash gives every vector''s FNV-1a 64 (names listed when not)');
select is((select count(*)::int from v, counts c
            where pepsi.tube_partition(v.name, c.n) <> (v.part ->> c.n::text)::int),
          0, 'T-01, T-14: tube_partition gives every vector''s partition for counts 1, 2, 256, 1024');
select is((select count(*)::int from v, counts c where v.part ->> c.n::text is null), 0,
          'every vector has a partition for every count');
select ok((select bool_and(pepsi.tube_name_valid(v.name)) from v), 'T-02: every valid vector is a tube name');
select is((select array_agg(b.name) from bad b where pepsi.tube_name_valid(b.name) is not false),
          null, 'T-02: every invalid vector is refused by tube_name_valid');

-- Each invalid name is refused by tube_hash itself (the domain, 23514).
create function pg_temp.refused(p text) returns boolean language plpgsql
as $$ begin perform pepsi.tube_hash(p); return false; exception when check_violation then return true; end $$;
select is((select array_agg(b.name) from bad b where not pg_temp.refused(b.name)),
          null, 'T-02: tube_hash refuses every invalid name (23514), never hashes it');
select throws_ok($$select pepsi.tube_hash('-abc')$$, '23514', null, 'T-02: a name starting with - is not hashed');

-- The edges the file promises.
select is((select max(octet_length(name)) from v), 200, 'T-30: the vectors include a name of 200 bytes');
select ok((select v1.hash <> v2.hash from v v1, v v2 where v1.name = 'emails' and v2.name = 'EMAILS'),
          'T-03: names differing only in case hash differently');
select is(pepsi.tube_hash('a'), x'af63dc4c8601ec8c'::bigint, 'FNV-1a 64 of "a" is the published 0xaf63dc4c8601ec8c');
select is(pepsi.tube_partition('default', 1), 0, 'T-05: one partition holds every tube');
select throws_ok($$select pepsi.tube_partition('default', 0)$$, 'PX003', null, 'a partition count of 0 is refused (PX003)');
select is(pepsi.tube_hash(null), null, 'NULL for NULL');

-- No seed and no session state: the catalogue says so.
select is((select provolatile::text || proparallel::text from pg_proc where oid = 'pepsi.tube_hash(pepsi.tube_name)'::regprocedure),
          'is', 'T-04: tube_hash is IMMUTABLE and PARALLEL SAFE (no seed, no session state)');
select is((select provolatile::text || proparallel::text from pg_proc where oid = 'pepsi.tube_partition(pepsi.tube_name, int)'::regprocedure),
          'is', 'T-04: tube_partition is IMMUTABLE and PARALLEL SAFE');

select * from finish();
rollback;
