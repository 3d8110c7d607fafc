-- Deploy pepsi:tube_hash to pg
-- requires: schema
--
-- The stable hash of a tube name and its partition (issue 14, T-01..T-04):
-- FNV-1a 64 over the exact bytes of a valid tube name (pepsi.tube_name,
-- beanstalkd's rule): no case folding, no locale, no seed, so every
-- process and every restart computes the same partition. The runner's
-- twin is runner/src/lib/tube.c; both check the published vectors in
-- testdata/tube-hash-vectors.json (pgtap/50, runner/tests/test_tube.c).
-- The algorithm is written out in docs/tubes.md.

begin;

create function pepsi.tube_hash(p_name pepsi.tube_name)
returns bigint
language plpgsql immutable strict parallel safe
as $$
-- FNV-1a 64 of p_name's bytes, as a signed bigint holding the same 64
-- bits (the unsigned value minus 2^64 when it is 2^63 or more). A name
-- that is not a tube name never gets here: the domain refuses it
-- (23514, T-02). NULL for NULL.
-- bigint has no wrapping multiply, so the state is kept as two 32-bit
-- halves (each 0 .. 2^32 - 1 in a bigint) and multiplied by the FNV prime
-- 2^40 + 435 in pieces that cannot overflow: h * 435 per half, plus the
-- low half shifted into the high half (h << 40 keeps only lo's low 24
-- bits, in the high half, shifted by 8). About 0.5 us a byte.
declare
    v_bytes bytea := convert_to(p_name, 'UTF8');
    v_hi bigint := 3421674724;   -- 14695981039346656037 (the offset basis) >> 32
    v_lo bigint := 2216829733;   -- 14695981039346656037 & (2^32 - 1)
    v_lo435 bigint;
begin
    for i in 0 .. length(v_bytes) - 1 loop
        v_lo := v_lo # get_byte(v_bytes, i);
        v_lo435 := v_lo * 435;
        v_hi := (v_hi * 435 + (v_lo435 >> 32) + (v_lo << 8)) & 4294967295;
        v_lo := v_lo435 & 4294967295;
    end loop;
    return (v_hi << 32) | v_lo; -- int8shl wraps: the high half's top bit becomes the sign
end
$$;

comment on function pepsi.tube_hash(pepsi.tube_name) is
    'FNV-1a 64 over the exact bytes of a valid tube name, as a signed bigint of the same 64 bits (issue 14, T-01..T-04; docs/tubes.md).';

create function pepsi.tube_partition(p_name pepsi.tube_name, p_count int)
returns int
language plpgsql immutable parallel safe
as $$
-- The partition of a tube: pepsi.tube_hash(p_name) read as unsigned,
-- modulo p_count (T-01), 0 .. p_count - 1. Raises PX003 when p_count is
-- not 1 or more. NULL for NULL (not STRICT: the planner would fold a
-- call with a NULL constant away before the EXECUTE privilege is checked).
-- The unsigned modulo in bigint: (hi mod n) * (2^32 mod n) + lo mod n,
-- each term below 2^62.
declare
    v_h bigint;
    v_hi bigint;
begin
    if p_name is null or p_count is null then
        return null;
    end if;
    if p_count < 1 then
        raise exception 'partition count must be 1 or more, not %', p_count using errcode = 'PX003';
    end if;
    v_h := pepsi.tube_hash(p_name);
    v_hi := (v_h >> 32) & 4294967295;
    return (((v_hi % p_count) * (4294967296 % p_count) + (v_h & 4294967295) % p_count) % p_count)::int;
end
$$;

comment on function pepsi.tube_partition(pepsi.tube_name, int) is
    'The partition of a tube name: tube_hash read as unsigned, modulo the partition count (issue 14, T-01).';

revoke all on function pepsi.tube_hash(pepsi.tube_name), pepsi.tube_partition(pepsi.tube_name, int) from public;
-- Operators and dashboards may ask where a tube lives.
grant execute on function pepsi.tube_hash(pepsi.tube_name), pepsi.tube_partition(pepsi.tube_name, int) to pepsi_reader;

commit;
