-- Revert pepsi:shard_topology from pg
--
-- Back to the topology of issue 14: topology_read, topology_write and
-- topology_check as deploy/topology.sql (and comments.sql) define them,
-- API level 2. The id range of a shard is widened again to bigint's (no
-- restart: ids already given are kept and not reused).

begin;

drop function pepsi.webhook_provider_tubes(text[]);
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

-- workqueue_insert without the shard check (before shard_read goes).
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
-- Nothing is checked here: the caller has checked every item. No NOTIFY.
-- Tables: workqueue_body, workqueue (insert); topology, partition_map (read).
declare
    v_count int;
begin
    lock table pepsi.partition_map in row share mode;
    v_count := (select t.partition_count from pepsi.topology t);
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
