-- Revert pepsi:shard_topology from pg
--
-- Back to the topology of issue 14: topology_read, topology_write and
-- topology_check as deploy/topology.sql (and comments.sql) define them,
-- API level 2. The id range of a shard is widened again to bigint's (no
-- restart: ids already given are kept and not reused).

begin;

drop function pepsi.shard_identity();
drop function pepsi.shard_topology_clear();
drop function pepsi.shard_topology_set(int, int[], int);
drop function pepsi.topology_check(int);

create function pepsi.topology_check(p_owner_slot int)
returns table (partition_count int, hash_name text, version bigint, fingerprint text, slot_partitions int,
               partitions int[])
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- What a runner confirms before it serves (T-08, T-13): the stored
-- topology, how many partitions p_owner_slot owns and which (ascending;
-- the runner passes them to its claims and running-row operations, issue
-- 14). No row when there is no topology; PX041 when it is damaged (T-10).
    select t.o_count, t.o_hash, t.o_version, t.o_fingerprint,
           (select count(*)::int from unnest(t.o_map) s where s = p_owner_slot),
           array(select (m.i - 1)::int from unnest(t.o_map) with ordinality as m(s, i)
                  where m.s = p_owner_slot order by m.i)
      from pepsi.topology_read() t
     where t.o_count is not null
$$;

comment on function pepsi.topology_check(integer) is
    'pepsi_runner at start (and pepsi_reader): the stored topology and how many and which partitions owner slot p_owner_slot owns (ascending), which the runner passes to its claims. No row without a topology; PX041 when it is damaged. Writes nothing.';

revoke all on function pepsi.topology_check(int) from public;
grant execute on function pepsi.topology_check(int) to pepsi_runner, pepsi_reader;

create or replace function pepsi.topology_read(out o_count int, out o_hash text, out o_version bigint,
                                    out o_fingerprint text, out o_map int[])
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
-- The stored topology, checked (T-10): all NULL when there is none (no
-- row, no map); raises PX041 when it is there in part or damaged: a map
-- without its row, a row without its map, a map whose partitions are not
-- exactly 0 .. count - 1, or a stored fingerprint that does not match.
declare
    v_rows int;
    v_max int;
begin
    select t.partition_count, t.hash_name, t.version, t.fingerprint
      into o_count, o_hash, o_version, o_fingerprint
      from pepsi.topology t;
    select count(*)::int, max(m.partition), array_agg(m.owner_slot order by m.partition)
      into v_rows, v_max, o_map
      from pepsi.partition_map m;
    if o_count is null and v_rows = 0 then
        return;
    end if;
    if o_count is null then
        raise exception 'topology damaged: % partition map row(s) but no topology row', v_rows
              using errcode = 'PX041';
    end if;
    if v_rows <> o_count or v_max <> o_count - 1 then
        raise exception 'topology damaged: partition count % but the map has % row(s)', o_count, v_rows
              using errcode = 'PX041';
    end if;
    if pepsi.topology_fingerprint_of(o_hash, o_count, o_map) is distinct from o_fingerprint then
        raise exception 'topology damaged: the stored fingerprint does not match the map'
              using errcode = 'PX041';
    end if;
end
$$;

create or replace function pepsi.topology_write(p_hash text, p_count int, p_map int[], p_old_count int,
                                     p_old_hash text, p_old_map int[])
returns text
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- Writes the topology (p_hash, p_count, p_map) over the old one and
-- returns its fingerprint. Old NULLs: none, which is slot 0 owning every
-- partition; an old map without count: damaged (empty queue only). Every
-- owner slot whose partitions change must be free (T-41): all slots of
-- both maps (and slot 0) when the count or the hash changes, else the old
-- and new owners of each partition that moves. Each is try-locked
-- (pepsi.lock_key('dispatcher', slot), transaction-level, so no runner
-- can take it before the change commits); a slot a runner holds raises
-- PX042. Nothing is written when nothing changes (the version stays).
-- Without a change of count or hash, the rows of the partitions that move
-- get their new owner slot (workqueue.owner_slot); a change of count or
-- hash happens on an empty queue, or over the rows topology_set then
-- re-partitions. The caller has checked the rules and holds the tables'
-- locks (partition_map EXCLUSIVE: no workqueue_create runs meanwhile).
declare
    v_slots int[];
    v_slot int;
    v_old_map int[] := p_old_map;
    v_resize boolean := p_old_count is distinct from p_count or p_old_hash is distinct from p_hash;
    v_fingerprint text := pepsi.topology_fingerprint_of(p_hash, p_count, p_map);
begin
    if p_old_count is null and p_old_map is null then
        v_old_map := array_fill(0, array[p_count]); -- none: slot 0 owned every partition
        v_resize := false;
    elsif not v_resize and p_old_map = p_map then
        return v_fingerprint;
    end if;
    if v_resize then
        v_slots := array(select distinct s from unnest(p_map || coalesce(v_old_map, '{}') || 0) s order by s);
    else
        v_slots := array(select distinct s
                           from unnest(v_old_map, p_map) as m(o, n), lateral unnest(array[o, n]) s
                          where m.o <> m.n
                          order by s);
    end if;
    foreach v_slot in array v_slots loop
        if not (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', v_slot) k) then
            raise exception 'owner slot % is held by a running runner: stop the runners of slots % first', v_slot, v_slots
                  using errcode = 'PX042';
        end if;
    end loop;
    delete from pepsi.partition_map;
    insert into pepsi.partition_map (partition, owner_slot)
    select p.i - 1, p.s from unnest(p_map) with ordinality as p(s, i);
    insert into pepsi.topology as t (singleton, partition_count, hash_name, version, fingerprint, changed_at)
    values (true, p_count, p_hash, 1, v_fingerprint, now())
    on conflict (singleton) do update
       set partition_count = excluded.partition_count, hash_name = excluded.hash_name,
           version = t.version + 1, fingerprint = excluded.fingerprint, changed_at = excluded.changed_at;
    if not v_resize then
        -- The rows of each partition that moves go with it (issue 14:
        -- claims read workqueue.owner_slot). Their old and new slots are
        -- locked above, so no runner is claiming them; new rows wait for
        -- the caller's lock of partition_map (workqueue_create). One pass
        -- over the table: an operator's command, not a claim.
        update pepsi.workqueue w set owner_slot = m.n
          from unnest(v_old_map, p_map) with ordinality as m(o, n, i)
         where m.o is distinct from m.n and w.partition = (m.i - 1)::int and w.owner_slot <> m.n;
    end if;
    return v_fingerprint;
end
$$;

drop function pepsi.shard_read();
drop function pepsi.topology_fingerprint_of(text, int, int[], int, int[]);
drop table pepsi.shard_map;
drop table pepsi.shard_self;

alter table pepsi.workqueue alter column workqueue_id set minvalue 1 set maxvalue 9223372036854775807 set start with 1;

create or replace function pepsi.schema_api(out level int, out oldest int)
language sql immutable parallel safe
as $$
    select 2 as level, 1 as oldest
$$;

comment on function pepsi.schema_api() is
    'The API level this schema serves (level) and the oldest level a program may be built against and still run (oldest): pepsi-runner and its workers run when oldest <= their build''s level <= level, and exit 78 otherwise (D-12, issue 15). Level 2: the enqueue options of workqueue_inject (issue 16). README "Upgrading".';

commit;
