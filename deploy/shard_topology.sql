-- Deploy pepsi:shard_topology to pg
-- requires: topology
-- requires: comments
-- requires: schema_api
-- requires: workqueue_enqueue_options
--
-- A topology level above owner slots (issue 18): past one PostgreSQL
-- server, the partitions of the tube hash map to shards, each an ordinary
-- pepsi database deployed from this plan, and a router database of
-- PL/Proxy functions (router/) sends each public call to the shard that
-- owns its tube. Owner slots live inside a shard: shard 1's slot 0 is not
-- shard 0's slot 0.
--
-- Every shard stores the whole sharded topology: the slot level it always
-- had (pepsi.topology, pepsi.partition_map: the same on every shard and on
-- the router), which shard owns each partition (pepsi.shard_map) and which
-- shard this database is (pepsi.shard_self). So:
--   - the fingerprint (T-08) covers the shards: without a shard level it is
--     exactly what it was; with one, ";shards;<count>;<shard of p0>,..."
--     is appended before hashing (docs/tubes.md). The router stores the
--     same text's hash, so a shard deployed with another map disagrees
--     with the router, and its runner (TOPOLOGY_FINGERPRINT) and the
--     router's cluster_apply refuse it;
--   - pepsi.topology_check(slot), what a runner reads, lists only the
--     partitions of this shard that the slot owns: a runner whose slot owns
--     nothing here refuses (78), and a runner never believes it serves
--     another shard's tubes. It also returns the shard (NULL when none):
--     a runner on a shard refuses without TOPOLOGY_FINGERPRINT;
--   - a shard refuses a message for a tube of another shard (PX072, in
--     workqueue_insert, the one statement that creates rows): its row
--     would be served here while the router sends the tube elsewhere;
--   - ids carry their shard: shard s numbers its messages from s << 48
--     (1 for shard 0) to ((s + 1) << 48) - 1, so the router sends a by-id
--     call to shard id >> 48 without a look-up. 2^48 ids a shard, 2^15
--     shards (bigint's sign bit stays clear).
-- The rules are topology_set's: anything on an empty pepsi.workqueue
-- (T-12); with messages present only the very same shard level again (a
-- no-op returning the fingerprint), since a shard's rows were numbered
-- and placed for its shard (PX040); damaged shard metadata (a shard map
-- without pepsi.shard_self, a map of another size) is PX041; every owner
-- slot must be free while it changes (PX042).
--
-- The runner reads the new topology_check column, so the schema API level
-- rises to 3 (oldest stays 1: a runner built before still serves, it just
-- does not insist on TOPOLOGY_FINGERPRINT on a shard).

begin;

create table pepsi.shard_self (
    singleton   boolean not null default true
                constraint shard_self_pkey primary key
                constraint shard_self_singleton_check check (singleton),
    shard_count int not null
                constraint shard_self_shard_count_check check (shard_count between 1 and 32768),
    shard       int not null,
    set_at      timestamptz not null default now(),
    constraint shard_self_shard_check check (shard >= 0 and shard < shard_count)
);

comment on table pepsi.shard_self is
    'Issue 18: which shard of a sharded topology this database is (one row; none: not sharded). Written only by shard_topology_set and shard_topology_clear.';
comment on column pepsi.shard_self.singleton is 'Always true: the table holds at most one row.';
comment on column pepsi.shard_self.shard_count is 'How many shards the topology has (1 to 32768).';
comment on column pepsi.shard_self.shard is 'This database''s shard, 0 .. shard_count - 1; its message ids are shard << 48 .. ((shard + 1) << 48) - 1.';
comment on column pepsi.shard_self.set_at is 'When the shard level was set.';

create table pepsi.shard_map (
    partition int
              constraint shard_map_pkey primary key
              constraint shard_map_partition_check check (partition >= 0),
    shard     int not null
              constraint shard_map_shard_check check (shard >= 0)
);

comment on table pepsi.shard_map is
    'Issue 18: which shard owns each partition of the topology, one row per partition 0 .. partition_count - 1 while this database is a shard; the same on every shard and on the router.';
comment on column pepsi.shard_map.partition is 'A partition of the tube hash (pepsi.tube_partition).';
comment on column pepsi.shard_map.shard is 'The shard (database) whose runners serve the partition''s tubes.';

create function pepsi.topology_fingerprint_of(p_hash text, p_count int, p_map int[], p_shard_count int,
                                              p_shards int[])
returns text
language sql immutable parallel safe
as $$
-- The fingerprint of a sharded topology (T-08, issue 18): lowercase hex
-- SHA-256 of "<hash>;<count>;<slot of p0>,<slot of p1>,...;shards;<shard
-- count>;<shard of p0>,<shard of p1>,...". Without shards (p_shards NULL)
-- exactly the unsharded fingerprint of topology_fingerprint_of(text, int,
-- int[]): databases that are not shards keep theirs.
    select case when p_shards is null then pepsi.topology_fingerprint_of(p_hash, p_count, p_map)
                else encode(sha256(convert_to(p_hash || ';' || p_count || ';' || array_to_string(p_map, ',')
                                              || ';shards;' || p_shard_count || ';'
                                              || array_to_string(p_shards, ','), 'UTF8')), 'hex')
           end
$$;

comment on function pepsi.topology_fingerprint_of(text, int, int[], int, int[]) is
    'Internal: the fingerprint of a sharded topology (issue 18): SHA-256 hex of "<hash>;<count>;<slots>;shards;<shard count>;<shard of each partition>"; without shards (NULL) the unsharded fingerprint.';

create function pepsi.shard_read(out o_shard_count int, out o_shard int, out o_shards int[])
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
-- The stored shard level (issue 18): all NULL when this database is not a
-- shard. PX041 when it is there in part: a shard map without
-- pepsi.shard_self or the reverse, or a shard in the map that the shard
-- count does not have. topology_read checks the map's size against the
-- partition count.
declare
    v_rows int;
    v_max int;
begin
    select s.shard_count, s.shard into o_shard_count, o_shard from pepsi.shard_self s;
    select count(*)::int, max(m.shard), array_agg(m.shard order by m.partition)
      into v_rows, v_max, o_shards
      from pepsi.shard_map m;
    if o_shard_count is null and v_rows = 0 then
        o_shards := null;
        return;
    end if;
    if o_shard_count is null or v_rows = 0 then
        raise exception 'shard topology damaged: % shard map row(s) and % shard_self row(s)', v_rows,
              (o_shard_count is not null)::int using errcode = 'PX041';
    end if;
    if v_max >= o_shard_count then
        raise exception 'shard topology damaged: the shard map names shard % of %', v_max, o_shard_count
              using errcode = 'PX041';
    end if;
end
$$;

comment on function pepsi.shard_read() is
    'Internal (issue 18): the stored shard level (shard count, this database''s shard, the shard of each partition); all NULL when not a shard; PX041 when there in part.';

-- topology_read and topology_write as in deploy/topology.sql, with the
-- shard level in the fingerprint (and topology_write refusing to change
-- the partition count under a shard map of the old size).
create or replace function pepsi.topology_read(out o_count int, out o_hash text, out o_version bigint,
                                               out o_fingerprint text, out o_map int[])
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
-- The stored topology, checked (T-10): all NULL when there is none (no
-- row, no map); raises PX041 when it is there in part or damaged: a map
-- without its row, a row without its map, a map whose partitions are not
-- exactly 0 .. count - 1, a shard map (issue 18) of another size or
-- without its shard row, or a stored fingerprint that does not match
-- (the shards are part of it).
declare
    v_rows int;
    v_max int;
    v_shard record;
begin
    select t.partition_count, t.hash_name, t.version, t.fingerprint
      into o_count, o_hash, o_version, o_fingerprint
      from pepsi.topology t;
    select count(*)::int, max(m.partition), array_agg(m.owner_slot order by m.partition)
      into v_rows, v_max, o_map
      from pepsi.partition_map m;
    select * into v_shard from pepsi.shard_read();
    if o_count is null and v_rows = 0 and v_shard.o_shards is null then
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
    if v_shard.o_shards is not null and cardinality(v_shard.o_shards) <> o_count then
        raise exception 'topology damaged: partition count % but the shard map has % row(s)', o_count,
              cardinality(v_shard.o_shards) using errcode = 'PX041';
    end if;
    if pepsi.topology_fingerprint_of(o_hash, o_count, o_map, v_shard.o_shard_count, v_shard.o_shards)
       is distinct from o_fingerprint then
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
-- On a shard (issue 18) the fingerprint covers the shard map, and the
-- partition count cannot change under it (PX040: clear the shard level
-- first, pepsi.shard_topology_clear, or set both anew).
declare
    v_slots int[];
    v_slot int;
    v_old_map int[] := p_old_map;
    v_resize boolean := p_old_count is distinct from p_count or p_old_hash is distinct from p_hash;
    v_shard record;
    v_fingerprint text;
begin
    select * into v_shard from pepsi.shard_read();
    if v_shard.o_shards is not null and cardinality(v_shard.o_shards) <> p_count then
        raise exception 'this database is shard % of a sharded topology of % partitions: the count cannot become % (pepsi.shard_topology_clear first)',
              v_shard.o_shard, cardinality(v_shard.o_shards), p_count using errcode = 'PX040';
    end if;
    v_fingerprint := pepsi.topology_fingerprint_of(p_hash, p_count, p_map, v_shard.o_shard_count, v_shard.o_shards);
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
        update pepsi.workqueue w set owner_slot = m.n
          from unnest(v_old_map, p_map) with ordinality as m(o, n, i)
         where m.o is distinct from m.n and w.partition = (m.i - 1)::int and w.owner_slot <> m.n;
    end if;
    return v_fingerprint;
end
$$;

-- topology_check gains a column (the shard), so it is created anew.
drop function pepsi.topology_check(int);

create function pepsi.topology_check(p_owner_slot int)
returns table (partition_count int, hash_name text, version bigint, fingerprint text, slot_partitions int,
               partitions int[], shard int)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- What a runner confirms before it serves (T-08, T-13): the stored
-- topology, how many partitions p_owner_slot owns and which (ascending),
-- and, on a shard (issue 18), this database's shard: then only the
-- partitions of this shard count, since owner slots live inside a shard
-- and another shard's partitions are served by that shard's runners. No
-- row when there is no topology; PX041 when it is damaged (T-10).
    select t.o_count, t.o_hash, t.o_version, t.o_fingerprint,
           cardinality(o.partitions), o.partitions, s.o_shard
      from pepsi.topology_read() t
           cross join pepsi.shard_read() s
           cross join lateral (
               select array(select (m.i - 1)::int from unnest(t.o_map) with ordinality as m(slot, i)
                             where m.slot = p_owner_slot
                               and (s.o_shards is null or s.o_shards[m.i] = s.o_shard)
                             order by m.i) as partitions) o
     where t.o_count is not null
$$;

comment on function pepsi.topology_check(integer) is
    'pepsi_runner at start (and pepsi_reader): the stored topology, how many and which partitions owner slot p_owner_slot owns (ascending) and, on a shard (issue 18), this database''s shard: then only this shard''s partitions count. No row without a topology; PX041 when it is damaged. Writes nothing.';

create function pepsi.shard_topology_set(p_shard_count int, p_shard_of_partition int[], p_self int)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 18): makes this database shard p_self of
-- p_shard_count shards (1 .. 32768), partition i - 1 belonging to shard
-- p_shard_of_partition[i], one per partition of the stored topology, and
-- returns the new fingerprint (docs/tubes.md). Needs a topology
-- (topology_set first; PX041 without one or when damaged). On an empty
-- pepsi.workqueue: writes the shard level and restarts the message ids
-- at this shard's range (shard << 48, 1 for shard 0, up to ((shard + 1)
-- << 48) - 1), every owner slot of the map try-locked (PX042 while a
-- runner holds one). With messages present only the stored shard level
-- itself may be given again, a no-op (PX040 otherwise: the rows were
-- numbered and placed for it). PX003 for a count, map or shard out of
-- range.
declare
    v_topo record;
    v_old record;
    v_slot int;
    v_min bigint;
    v_max bigint;
    v_fingerprint text;
begin
    if p_shard_count is null or p_shard_count not between 1 and 32768 then
        raise exception 'shard count must be 1 to 32768, not %', coalesce(p_shard_count::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_self is null or p_self not between 0 and p_shard_count - 1 then
        raise exception 'this shard must be 0 to % (the shard count - 1), not %', p_shard_count - 1,
              coalesce(p_self::text, 'NULL') using errcode = 'PX003';
    end if;
    lock table pepsi.topology, pepsi.partition_map, pepsi.shard_self, pepsi.shard_map in exclusive mode;
    lock table pepsi.workqueue in share mode; -- no message arrives until this commits
    select * into v_topo from pepsi.topology_read(); -- PX041 when damaged
    if v_topo.o_count is null then
        raise exception 'there is no topology to shard: set one with pepsi.topology_set first'
              using errcode = 'PX041';
    end if;
    if p_shard_of_partition is null or cardinality(p_shard_of_partition) <> v_topo.o_count
       or array_ndims(p_shard_of_partition) <> 1 or array_lower(p_shard_of_partition, 1) <> 1
       or array_position(p_shard_of_partition, null) is not null
       or exists (select 1 from unnest(p_shard_of_partition) s where s not between 0 and p_shard_count - 1) then
        raise exception 'a shard map needs one shard (0 to %) for each of the % partitions', p_shard_count - 1,
              v_topo.o_count using errcode = 'PX003';
    end if;
    select * into v_old from pepsi.shard_read();
    if exists (select 1 from pepsi.workqueue) then
        if v_old.o_shard_count is not distinct from p_shard_count and v_old.o_shard is not distinct from p_self
           and v_old.o_shards is not distinct from p_shard_of_partition then
            return v_topo.o_fingerprint;
        end if;
        raise exception 'the queue holds messages: the shard level (shard %, % shards, its map) cannot change; its rows were numbered and placed for it',
              coalesce(v_old.o_shard::text, 'none'), coalesce(v_old.o_shard_count::text, 'none')
              using errcode = 'PX040';
    end if;
    -- Which slots serve which tubes here changes: every slot's runner
    -- must be stopped (as for a change of the partition count).
    for v_slot in select distinct s from unnest(v_topo.o_map || 0) s order by s loop
        if not (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', v_slot) k) then
            raise exception 'owner slot % is held by a running runner: stop this database''s runners first', v_slot
                  using errcode = 'PX042';
        end if;
    end loop;
    delete from pepsi.shard_map;
    delete from pepsi.shard_self;
    insert into pepsi.shard_self (singleton, shard_count, shard) values (true, p_shard_count, p_self);
    insert into pepsi.shard_map (partition, shard)
    select p.i - 1, p.s from unnest(p_shard_of_partition) with ordinality as p(s, i);
    v_fingerprint := pepsi.topology_fingerprint_of(v_topo.o_hash, v_topo.o_count, v_topo.o_map, p_shard_count,
                                                   p_shard_of_partition);
    update pepsi.topology t
       set version = t.version + 1, fingerprint = v_fingerprint, changed_at = now()
     where t.fingerprint is distinct from v_fingerprint;
    -- Ids carry their shard (the router routes by id >> 48). The queue is
    -- empty (share lock above), so restarting cannot collide.
    v_min := greatest(p_self::bigint << 48, 1);
    v_max := ((p_self::bigint + 1) << 48) - 1;
    execute format('alter table pepsi.workqueue alter column workqueue_id set minvalue %s set maxvalue %s set start with %s restart with %s',
                   v_min, v_max, v_min, v_min);
    return v_fingerprint;
end
$$;

comment on function pepsi.shard_topology_set(int, int[], int) is
    'Schema owner (operators; this database''s runners stopped), issue 18: makes this database shard p_self of p_shard_count, partition i - 1 on shard p_shard_of_partition[i]; restarts message ids at p_self << 48; returns the new fingerprint. Refuses PX003 (out of range), PX040 (messages present and the shard level would change), PX041 (no topology, or damaged), PX042 (a runner of this database is running).';

create function pepsi.shard_topology_clear()
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 18): this database is no longer a shard: the shard
-- level goes, message ids start again at 1, the fingerprint is the
-- unsharded one again (returned; NULL without a topology). Only on an
-- empty pepsi.workqueue (PX040) and with every runner stopped (PX042).
declare
    v_topo record;
    v_slot int;
    v_fingerprint text;
begin
    lock table pepsi.topology, pepsi.partition_map, pepsi.shard_self, pepsi.shard_map in exclusive mode;
    lock table pepsi.workqueue in share mode;
    if exists (select 1 from pepsi.workqueue) then
        raise exception 'the queue holds messages: its rows were numbered and placed for this shard'
              using errcode = 'PX040';
    end if;
    select t.partition_count as o_count, t.hash_name as o_hash,
           array(select m.owner_slot from pepsi.partition_map m order by m.partition) as o_map
      into v_topo from pepsi.topology t;
    for v_slot in select distinct s from unnest(coalesce(v_topo.o_map, '{}') || 0) s order by s loop
        if not (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', v_slot) k) then
            raise exception 'owner slot % is held by a running runner: stop this database''s runners first', v_slot
                  using errcode = 'PX042';
        end if;
    end loop;
    delete from pepsi.shard_map;
    delete from pepsi.shard_self;
    if v_topo.o_count is not null then
        v_fingerprint := pepsi.topology_fingerprint_of(v_topo.o_hash, v_topo.o_count, v_topo.o_map);
        update pepsi.topology t
           set version = t.version + 1, fingerprint = v_fingerprint, changed_at = now()
         where t.fingerprint is distinct from v_fingerprint;
    end if;
    alter table pepsi.workqueue alter column workqueue_id set minvalue 1 set maxvalue 9223372036854775807 set start with 1 restart with 1;
    return v_fingerprint;
end
$$;

comment on function pepsi.shard_topology_clear() is
    'Schema owner (operators; runners stopped), issue 18: this database stops being a shard: the shard level goes, ids restart at 1, the fingerprint is the unsharded one (returned). Refuses PX040 (messages present), PX042 (a runner is running).';

create function pepsi.shard_identity()
returns table (shard int, shard_count int, fingerprint text, partition_count int)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- What the router's cluster_apply asks every shard (issue 18): which
-- shard this database is, of how many, and its topology's fingerprint
-- and partition count. One row; shard and shard_count NULL when this
-- database is not a shard, fingerprint NULL without a topology. PX041
-- when the topology is damaged.
    select s.o_shard, s.o_shard_count, t.o_fingerprint, t.o_count
      from pepsi.topology_read() t cross join pepsi.shard_read() s
$$;

comment on function pepsi.shard_identity() is
    'pepsi_reader and pepsi_runner (the router''s cluster_apply), issue 18: this database''s shard, shard count, topology fingerprint and partition count; NULLs when not a shard or without a topology; PX041 when damaged. Writes nothing.';

-- workqueue_insert as deploy/workqueue_enqueue_options.sql has it, and on a
-- shard it refuses a tube of another shard (PX072).
create or replace function pepsi.workqueue_insert(p_items pepsi.workqueue_item[], p_body_ids bigint[],
                                       p_priorities int[], p_run_at timestamptz[], p_dedupe_keys text[])
returns setof bigint
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The one statement that creates message rows (issue 13; issue 16 adds
-- the enqueue options): writes p_items, in one statement, and returns one
-- id per item in input order: the new row's, or NULL for an item whose
-- dedupe key a live row holds (nothing is written for it; the caller,
-- workqueue_enqueue, looks that row up).
-- Per item n: p_priorities[n] (NULL: 0), p_run_at[n] (after now(): the row
-- is paused with timeout = run_at, released by the paused sweep; else
-- pending), p_dedupe_keys[n] (NULL: none; ON CONFLICT DO NOTHING against
-- workqueue_dedupe_key_idx, which also waits for a concurrent insert of
-- the key and skips the item when that commits). NULL arrays: defaults.
-- Body sharing: with p_body_ids NULL, an item with a body or a header
-- block gets a workqueue_body row of its own, written only when its
-- message row was (a skipped item leaves no orphan body); with
-- p_body_ids, item n shares the existing body p_body_ids[n] (NULL: none).
-- Ids and body ids are drawn before the insert, so that each item knows
-- its row and body without matching rows back by position.
-- Each row gets its tube's partition and that partition's owner slot, the
-- map read under a ROW SHARE lock of partition_map (see the comment of
-- workqueue_create before issue 16: a row is never written with a slot
-- read from a map a concurrent change has just replaced).
-- On a shard (issue 18), a tube whose partition another shard owns is
-- refused (PX072) before anything is written: its row would be served
-- by this shard's runners while the router sends the tube elsewhere.
-- Nothing else is checked here: the caller has checked every item. No NOTIFY.
-- Tables: workqueue_body, workqueue (insert); topology, partition_map,
-- shard_self, shard_map (read).
declare
    v_count int;
    v_foreign record;
begin
    lock table pepsi.partition_map in row share mode;
    v_count := (select t.partition_count from pepsi.topology t);
    if exists (select 1 from pepsi.shard_self) then
        select d.tube, m.shard, s.shard as self into v_foreign
          from (select distinct i.tube from unnest(p_items) i) d
               join pepsi.shard_map m on m.partition = pepsi.tube_partition(d.tube, v_count)
               cross join pepsi.shard_self s
         where m.shard <> s.shard
         limit 1;
        if found then
            raise exception 'tube "%" belongs to shard %, not to this shard (%): inject through the router',
                  left(v_foreign.tube, 64), v_foreign.shard, v_foreign.self using errcode = 'PX072';
        end if;
    end if;
    return query
    with src as materialized (
        select i.*,
               case when p_body_ids is not null then p_body_ids[i.ord]
                    when i.body is not null or i.headers is not null
                    then nextval(pg_get_serial_sequence('pepsi.workqueue_body', 'body_id')) end as body_id,
               nextval(pg_get_serial_sequence('pepsi.workqueue', 'workqueue_id')) as id,
               coalesce(p_priorities[i.ord], 0)::smallint as priority,
               p_run_at[i.ord] > now() as delayed,
               p_run_at[i.ord] as run_at,
               p_dedupe_keys[i.ord] as dedupe_key
          from unnest(p_items) with ordinality as i(stage, tube, body, headers, envelope_sender, recipients,
                                                    origin_user, origin_addr, state, subject, header_from,
                                                    arrived_at, webhook_event_id, ord)
    ), parts as (
        select p.tube, p.partition, coalesce(m.owner_slot, 0) as owner_slot
          from (select d.tube, case when v_count is null then 0
                                    else pepsi.tube_partition(d.tube, v_count) end as partition
                  from (select distinct s.tube from src s) d) p
               left join pepsi.partition_map m on m.partition = p.partition
    ), ins as (
        insert into pepsi.workqueue (workqueue_id, tube, stage, origin_user, origin_addr, envelope_sender,
                                     recipients, header_from, subject, state, body_id, arrived_at,
                                     webhook_event_id, partition, owner_slot, priority, status, timeout,
                                     dedupe_key)
        overriding system value
        select s.id, s.tube, s.stage, s.origin_user, s.origin_addr, s.envelope_sender, s.recipients,
               s.header_from, s.subject, s.state, s.body_id, s.arrived_at, s.webhook_event_id, p.partition,
               p.owner_slot, s.priority,
               case when s.delayed then 'paused' else 'pending' end::pepsi.workqueue_status,
               case when s.delayed then s.run_at end, s.dedupe_key
          from src s join parts p on p.tube = s.tube
         order by s.ord
        on conflict (dedupe_key) where dedupe_key is not null do nothing
        returning workqueue.workqueue_id
    ), bodies as (
        insert into pepsi.workqueue_body (body_id, headers, body)
        overriding system value
        select s.body_id, s.headers, s.body
          from src s join ins on ins.workqueue_id = s.id
         where s.body_id is not null and p_body_ids is null
    )
    select ins.workqueue_id
      from src s left join ins on ins.workqueue_id = s.id
     order by s.ord;
end
$$;

create function pepsi.webhook_provider_tubes(p_providers text[])
returns table (provider text, tube text)
language sql stable
security definer
set search_path = pg_catalog, pg_temp
as $$
-- Where the router sends a provider's webhook events (issue 18): each
-- named provider that exists here and its tube (the tube its events are
-- queued in; for a pulled provider, without a stage, its tube column all
-- the same, default 'default': its events live on that tube's shard).
-- Unknown providers have no row (the shard's ingest then says PX011).
    select p.provider, p.tube from pepsi.webhook_provider p where p.provider = any (p_providers)
$$;

comment on function pepsi.webhook_provider_tubes(text[]) is
    'pepsi_ingress (the router''s webhook ingest), issue 18: the tube of each named provider that exists, which decides the shard its events go to. Writes nothing.';

-- API level 3: topology_check returns the shard (the runner reads it).
create or replace function pepsi.schema_api(out level int, out oldest int)
language sql immutable parallel safe
as $$
    select 3 as level, 1 as oldest
$$;

comment on function pepsi.schema_api() is
    'The API level this schema serves (level) and the oldest level a program may be built against and still run (oldest): pepsi-runner and its workers run when oldest <= their build''s level <= level, and exit 78 otherwise (D-12, issue 15). Level 2: the enqueue options of workqueue_inject (issue 16). Level 3: topology_check returns the shard (issue 18). README "Upgrading".';

revoke all on table pepsi.shard_self, pepsi.shard_map from public;
revoke all on function pepsi.topology_fingerprint_of(text, int, int[], int, int[]), pepsi.shard_read(),
    pepsi.topology_check(int), pepsi.shard_topology_set(int, int[], int), pepsi.shard_topology_clear(),
    pepsi.shard_identity(), pepsi.webhook_provider_tubes(text[]) from public;
grant execute on function pepsi.topology_check(int) to pepsi_runner, pepsi_reader;
grant execute on function pepsi.webhook_provider_tubes(text[]) to pepsi_ingress;
grant execute on function pepsi.shard_identity() to pepsi_runner, pepsi_reader;
grant select on pepsi.shard_self, pepsi.shard_map to pepsi_reader;

commit;
