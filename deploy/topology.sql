-- Deploy pepsi:topology to pg
-- requires: tube_hash
-- requires: workqueue
--
-- The topology (issue 14, T-05, T-08..T-12, T-41): how many partitions the
-- tube hash is reduced to, which hash, and which owner slot (one runner
-- each, advisory lock pepsi.lock_key('dispatcher', slot)) owns each
-- partition:
--   partition  = pepsi.tube_partition(tube, partition_count)
--   owner_slot = partition_map[partition]
-- PARTITION_COUNT is a constant of the stored data, never the number of
-- live runners (T-05, T-42). A fingerprint over the hash's name, the count
-- and the whole map lets each runner confirm, before it serves, that it
-- was configured for this topology (T-08); docs/tubes.md defines it.
--
-- No topology at all is the state every database starts in: slot 0 owns
-- every partition (the single dispatcher), and a runner with OWNER_SLOT
-- other than 0 refuses to start. The rules for changing it:
--   - on an empty pepsi.workqueue anything may be set (T-12);
--   - with messages present the partition count and the hash never change
--     (PX040, T-09, T-41), and the map changes only through
--     pepsi.partition_map_set, the operator's explicit command (T-41);
--     without a topology, only one under which slot 0 keeps every
--     partition may be set (what slot 0 owned until then: no tube moves);
--   - metadata that is missing in part or damaged (a topology row without
--     its map, a map without its row, a map of another size, a fingerprint
--     that does not match) is never overwritten while messages exist
--     (PX041, T-10);
--   - every owner slot whose partitions change (all of them when the count
--     or the hash changes) must be free: its dispatcher lock is taken with
--     a try-lock for the rest of the transaction, and a slot a runner holds
--     refuses the change (PX042, T-41). Stop those runners first.

begin;

create table pepsi.topology (
    singleton       boolean not null default true
                    constraint topology_pkey primary key
                    constraint topology_singleton_check check (singleton),
    partition_count int not null
                    constraint topology_partition_count_check check (partition_count between 1 and 65536),
    hash_name       text not null
                    constraint topology_hash_name_check check (hash_name <> ''),
    version         bigint not null
                    constraint topology_version_check check (version >= 1),
    fingerprint     text not null,
    changed_at      timestamptz not null default now()
);

comment on table pepsi.topology is
    'The topology (issue 14): one row, the partition count, the tube hash''s name, a version counting changes and the fingerprint over hash, count and map (docs/tubes.md). Written only by topology_set and partition_map_set.';

create table pepsi.partition_map (
    partition  int
               constraint partition_map_pkey primary key
               constraint partition_map_partition_check check (partition >= 0),
    owner_slot int not null
               constraint partition_map_owner_slot_check check (owner_slot >= 0)
);

comment on table pepsi.partition_map is
    'Which owner slot serves each partition of the topology (issue 14, T-01): one row per partition 0 .. partition_count - 1.';

create index partition_map_owner_slot_idx on pepsi.partition_map (owner_slot);

create function pepsi.topology_fingerprint_of(p_hash text, p_count int, p_map int[])
returns text
language sql immutable parallel safe
as $$
-- The fingerprint of a topology (T-08): lowercase hex SHA-256 of the
-- UTF-8 text "<hash>;<count>;<slot of partition 0>,<slot of 1>,...".
-- Any change of the three changes it; nothing else does.
    select encode(sha256(convert_to(p_hash || ';' || p_count || ';' || array_to_string(p_map, ','), 'UTF8')), 'hex')
$$;

create function pepsi.topology_read(out o_count int, out o_hash text, out o_version bigint,
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

create function pepsi.topology_fingerprint()
returns text
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- The fingerprint of the stored topology (T-08), checked against its map
-- (PX041 when damaged); NULL when there is none.
    select t.o_fingerprint from pepsi.topology_read() t
$$;

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

create function pepsi.topology_write(p_hash text, p_count int, p_map int[], p_old_count int,
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

create function pepsi.topology_map_check(p_map int[], p_count int)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Raises PX003 unless p_map names an owner slot (0 or more) for each of
-- the p_count partitions, in partition order.
begin
    if p_map is null or cardinality(p_map) <> p_count or array_ndims(p_map) <> 1
       or array_lower(p_map, 1) <> 1 or array_position(p_map, null) is not null
       or exists (select 1 from unnest(p_map) s where s < 0) then
        raise exception 'a partition map needs one owner slot (0 or more) for each of the % partitions', p_count
              using errcode = 'PX003';
    end if;
end
$$;

create function pepsi.topology_set(p_partition_count int, p_slots int default 1, p_hash text default 'fnv1a64')
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: sets the topology to p_partition_count partitions (1 ..
-- 65536) of hash p_hash (only 'fnv1a64' exists) split into p_slots owner
-- slots 0 .. p_slots - 1 of contiguous partitions (partition p belongs to
-- slot p * p_slots / p_partition_count), and returns its fingerprint.
-- Allowed freely on an empty pepsi.workqueue (T-12). With messages
-- present: the count and hash must stay (PX040, T-09), the map too (use
-- partition_map_set to move partitions; the same call again is a no-op
-- that returns the fingerprint), and without a stored topology only one
-- slot may be set (slot 0 keeps everything it owned); damaged metadata is
-- never overwritten (PX041, T-10). Each slot whose partitions change must
-- have no running runner (PX042, T-41). Raises PX003 for a count, slot
-- number or hash out of range.
declare
    v_old record;
    v_map int[];
    v_data boolean;
    v_fingerprint text;
begin
    if p_partition_count is null or p_partition_count not between 1 and 65536 then
        raise exception 'partition count must be 1 to 65536, not %', coalesce(p_partition_count::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_slots is null or p_slots not between 1 and p_partition_count then
        raise exception 'owner slots must be 1 to the partition count (%), not %', p_partition_count,
              coalesce(p_slots::text, 'NULL') using errcode = 'PX003';
    end if;
    if p_hash is null then
        raise exception 'the hash must be named' using errcode = 'PX003';
    end if;
    lock table pepsi.topology, pepsi.partition_map in exclusive mode;
    lock table pepsi.workqueue in share mode; -- no message arrives until this commits
    v_data := exists (select 1 from pepsi.workqueue);
    v_map := array(select (g::bigint * p_slots / p_partition_count)::int
                     from generate_series(0, p_partition_count - 1) g order by g);
    if not v_data then
        begin
            select * into v_old from pepsi.topology_read();
        exception when sqlstate 'PX041' then
            -- T-12: no messages, nothing to protect: start afresh, but
            -- every slot the damaged map names must be free too.
            select null::int as o_count, null::text as o_hash, null::bigint as o_version,
                   null::text as o_fingerprint,
                   array(select m.owner_slot from pepsi.partition_map m) as o_map
              into v_old;
        end;
    else
        select * into v_old from pepsi.topology_read(); -- PX041 when damaged: T-10
        if v_old.o_count is null then
            if p_slots <> 1 then
                raise exception 'the queue holds messages and has no topology: only one owner slot (0, the owner of every tube so far) may be set, not %', p_slots
                      using errcode = 'PX040';
            end if;
        elsif v_old.o_count <> p_partition_count or v_old.o_hash <> p_hash then
            raise exception 'the queue holds messages: the partition count (%) and hash (%) cannot change to % and %',
                  v_old.o_count, v_old.o_hash, p_partition_count, p_hash using errcode = 'PX040';
        elsif v_old.o_map <> v_map then
            raise exception 'the queue holds messages: the partition map changes only by pepsi.partition_map_set, with the affected runners stopped'
                  using errcode = 'PX040';
        end if;
    end if;
    if p_hash <> 'fnv1a64' then
        raise exception 'unknown tube hash "%": only fnv1a64', p_hash using errcode = 'PX003';
    end if;
    v_fingerprint := pepsi.topology_write(p_hash, p_partition_count, v_map, v_old.o_count, v_old.o_hash,
                                          v_old.o_map);
    if v_data and v_old.o_count is null then
        -- The first topology over messages (one slot, which owned them all
        -- as partition 0): each row gets its tube's partition under the
        -- new count, once per tube. Later changes never touch the count
        -- with messages present (T-09), so partitions stay valid.
        update pepsi.workqueue w set partition = p.partition, owner_slot = p.owner_slot
          from (select d.tube, d.partition, coalesce(m.owner_slot, 0) as owner_slot
                  from (select q.tube, pepsi.tube_partition(q.tube, p_partition_count) as partition
                          from (select distinct q.tube from pepsi.workqueue q) q) d
                       left join pepsi.partition_map m on m.partition = d.partition) p
         where w.tube = p.tube and (w.partition <> p.partition or w.owner_slot <> p.owner_slot);
    end if;
    return v_fingerprint;
end
$$;

create function pepsi.partition_map_set(p_map int[])
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: the explicit command that changes the partition map
-- (T-41), with or without messages present: p_map[i] is the owner slot of
-- partition i - 1, one per partition of the stored topology (PX003
-- otherwise). Only while the runners of the affected slots (the old and
-- new owners of every partition that moves) are stopped: each is
-- try-locked and a held one refuses the whole change (PX042). Their
-- tubes then belong to the new owner; nothing else moves (T-43). Needs a
-- sound topology (PX041: none, or damaged; set one with topology_set).
-- The partition count and hash never change here. Returns the new
-- fingerprint; the version counts the change (none when p_map is the
-- map already).
declare
    v_old record;
begin
    lock table pepsi.topology, pepsi.partition_map in exclusive mode;
    select * into v_old from pepsi.topology_read();
    if v_old.o_count is null then
        raise exception 'there is no topology to change the map of: set one with pepsi.topology_set'
              using errcode = 'PX041';
    end if;
    perform pepsi.topology_map_check(p_map, v_old.o_count);
    return pepsi.topology_write(v_old.o_hash, v_old.o_count, p_map, v_old.o_count, v_old.o_hash, v_old.o_map);
end
$$;

revoke all on function pepsi.topology_fingerprint_of(text, int, int[]), pepsi.topology_read(),
    pepsi.topology_fingerprint(), pepsi.topology_check(int),
    pepsi.topology_write(text, int, int[], int, text, int[]), pepsi.topology_map_check(int[], int),
    pepsi.topology_set(int, int, text), pepsi.partition_map_set(int[]) from public;
grant execute on function pepsi.topology_fingerprint(), pepsi.topology_check(int) to pepsi_runner, pepsi_reader;
grant select on pepsi.topology, pepsi.partition_map to pepsi_reader;

commit;
