-- Deploy pepsi:schema_check to pg
-- requires: schema

begin;

create function pepsi.schema_check(p_changes text[], p_hashes text[])
returns table (verdict text, detail text)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Compares the deployed schema with the one a program was built from
-- (D-12). The build passes its sqitch plan's change names in order and
-- the SHA-1 of each deploy script; sqitch records the same pair for every
-- deployed change (sqitch.changes.script_hash). Verdicts:
--   current    the deployed changes are exactly the build's
--   older      the deployed changes are a prefix of the build's: run
--              `sqitch deploy`
--   newer      the build's changes are a prefix of the deployed ones:
--              upgrade the program
--   different  neither: the schema was built from different files
-- detail says where the two first part. Runs as the schema owner, who can
-- read sqitch's registry; callers need no access to it.
-- Raises PX003 (an array NULL, arrays of different lengths).
declare
    v_deployed text[];
    v_hashes text[];
    v_common int := 0;
    v_nd int;
    v_nb int;
begin
    if p_changes is null or p_hashes is null or cardinality(p_changes) <> cardinality(p_hashes) then
        raise exception 'changes and hashes must be arrays of one length' using errcode = 'PX003';
    end if;
    if to_regclass('sqitch.changes') is null then
        return query select 'different'::text, 'no sqitch registry in this database: deploy the schema with sqitch'::text;
        return;
    end if;
    select coalesce(array_agg(c.change order by c.committed_at, c.change_id), '{}'),
           coalesce(array_agg(c.script_hash order by c.committed_at, c.change_id), '{}')
      into v_deployed, v_hashes
      from sqitch.changes c where c.project = 'pepsi';
    v_nd := cardinality(v_deployed);
    v_nb := coalesce(cardinality(p_changes), 0);
    while v_common < least(v_nd, v_nb)
          and v_deployed[v_common + 1] = p_changes[v_common + 1]
          and v_hashes[v_common + 1] = p_hashes[v_common + 1] loop
        v_common := v_common + 1;
    end loop;

    if v_common = v_nd and v_common = v_nb then
        return query select 'current'::text, format('%s changes, last "%s"', v_nd, v_deployed[v_nd]);
    elsif v_common = v_nd then
        return query select 'older'::text,
            format('the database has %s of %s changes; next missing "%s": run sqitch deploy',
                   v_nd, v_nb, p_changes[v_nd + 1]);
    elsif v_common = v_nb then
        return query select 'newer'::text,
            format('the database has %s changes, this build knows %s; first unknown "%s": upgrade the program',
                   v_nd, v_nb, v_deployed[v_nb + 1]);
    else
        return query select 'different'::text,
            format('change %s differs: database "%s" (%s), build "%s" (%s)', v_common + 1,
                   v_deployed[v_common + 1], left(v_hashes[v_common + 1], 12),
                   p_changes[v_common + 1], left(p_hashes[v_common + 1], 12));
    end if;
end
$$;

revoke all on function pepsi.schema_check(text[], text[]) from public;
grant execute on function pepsi.schema_check(text[], text[])
    to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;

commit;
