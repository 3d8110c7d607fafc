-- Deploy pepsi:tubes to pg
-- requires: topology
-- requires: workqueue
--
-- Tubes in SQL (issue 14, T-15, T-21, T-22, T-32, T-33, T-36, T-37, T-45).
-- A tube is not an object of its own: it exists while a pepsi.workqueue row
-- names it (any row: finished rows are deleted, failed rows stay, like
-- beanstalkd's buried jobs) or while a pause is in force for it; `default`
-- always exists (beanstalkd's system reference, T-24, T-37). There is no
-- catalogue of tubes (T-45): the one table this change adds,
-- pepsi.tube_pause, holds a row only while a pause is in force, and an
-- expired row means nothing and is swept (by the next tube_pause call and
-- by the dispatcher's heartbeat claim). Listing, statistics and pause never
-- create a tube (T-15, T-32, T-33): a name that does not exist is PX043.
-- The tube's partition and owner slot are computed from its name (T-01),
-- so a tube that disappears and comes back lands where it was (T-36).

begin;

create table pepsi.tube_pause (
    tube         pepsi.tube_name not null
                 constraint tube_pause_pkey primary key,
    paused_at    timestamptz not null,
    paused_until timestamptz not null,
    constraint tube_pause_until_check check (paused_until > paused_at)
);

comment on table pepsi.tube_pause is
    'A tube''s pause (beanstalkd pause-tube, issue 14): a row only while it is in force. An expired row (paused_until at or before now) means nothing: every reader filters it and pepsi.tube_pause / the claims'' sweep delete it (T-45: no catalogue of tubes). Written only by pepsi.tube_pause.';

-- The tubes that exist are the distinct tubes of pepsi.workqueue. This
-- index lets pepsi.tubes list them by a loose index scan (one probe per
-- tube, not a scan of the queue) and count a tube's rows per status
-- without visiting other tubes. It costs every write of a row: hops
-- change indexed columns, so no update of the queue is HOT and each one
-- adds an entry here too (docs/tubes.md has the measured cost).
create index workqueue_tube_idx on pepsi.workqueue (tube, status);

create function pepsi.tube_pause_current(p_now timestamptz, p_sweep boolean default false)
returns text[]
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The tubes paused at p_now (their rows are not claimed), or NULL when
-- none is: the claims test "is anything paused" once per call and skip
-- the per-row check when nothing is. With p_sweep (the claims pass
-- p_release_paused: the dispatcher's heartbeat) expired pauses are
-- deleted first (T-45). Tables: tube_pause (read; delete with p_sweep).
begin
    if p_sweep then
        delete from pepsi.tube_pause tp where tp.paused_until <= p_now;
    end if;
    return nullif(array(select tp.tube::text from pepsi.tube_pause tp
                         where tp.paused_until > p_now order by tp.tube), '{}');
end
$$;

create function pepsi.tube_locate(p_tube text)
returns table (partition int, owner_slot int)
language sql stable
rows 1
security definer
set search_path = pg_catalog, pg_temp
as $$
-- Where a tube lives (T-01, T-36): its partition under the stored
-- topology and that partition's owner slot; partition 0 and slot 0
-- without a topology. Computed from the name alone, so a tube that comes
-- back after it was gone has the partition and slot it had. Security
-- definer: pepsi.tubes calls it with its reader's rights.
    select p.partition, coalesce(m.owner_slot, 0)
      from (select coalesce((select pepsi.tube_partition(p_tube, t.partition_count) from pepsi.topology t), 0)
                   as partition) p
           left join pepsi.partition_map m on m.partition = p.partition
$$;

create view pepsi.tubes as
with recursive live(tube) as (
    -- Loose index scan of workqueue_tube_idx: each step is one probe for
    -- the next tube after the previous one.
    (select w.tube from pepsi.workqueue w order by w.tube limit 1)
    union all
    select (select w.tube from pepsi.workqueue w where w.tube > l.tube order by w.tube limit 1)
      from live l
     where l.tube is not null
),
names(tube) as (
    select l.tube from live l where l.tube is not null
    union
    select tp.tube::text from pepsi.tube_pause tp where tp.paused_until > now()
    union
    select 'default'
)
select n.tube, loc.partition, loc.owner_slot,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'pending') as pending,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'running') as running,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'paused') as paused,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'failed') as failed,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'timeout') as timeout,
       (select tp.paused_until from pepsi.tube_pause tp
         where tp.tube = n.tube and tp.paused_until > now()) as paused_until
  from names n
       cross join lateral pepsi.tube_locate(n.tube) loc;

comment on view pepsi.tubes is
    'Every tube that exists (issue 14, T-21, T-22, T-37): it holds a row in any status, or a pause is in force; default always, once. Per tube: partition and owner slot (from the name, T-36), rows per status, and paused_until while paused. A loose index scan lists the tubes; a query that reads only tube costs one probe per tube.';

create function pepsi.tube_stats(p_tube text, p_now timestamptz default now())
returns table (name text, current_jobs_urgent bigint, current_jobs_ready bigint,
               current_jobs_reserved bigint, current_jobs_delayed bigint, current_jobs_buried bigint,
               total_jobs bigint, pause bigint, pause_time_left bigint, partition int, owner_slot int)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats-tube for one tube (issue 14, T-15, T-32), one row:
--   current_jobs_urgent    0: pepsi has no job priorities
--   current_jobs_ready     pending rows
--   current_jobs_reserved  running rows
--   current_jobs_delayed   paused rows (a stage's pause, waiting for their
--                          timeout)
--   current_jobs_buried    failed and timed-out rows (kept for an
--                          operator, like buried jobs)
--   total_jobs             the rows the tube holds now (beanstalkd counts
--                          every job ever put; pepsi keeps no counter)
--   pause                  seconds the tube's pause was set for, 0 when
--                          not paused at p_now
--   pause_time_left        whole seconds until it ends, 0 when not paused
--   partition, owner_slot  where it lives (pepsi.tube_locate)
-- Raises PX006 for an invalid name and PX043 (NOT_FOUND) for a valid one
-- that does not exist: no row, no pause in force, and not default. A
-- look-up never creates a tube (T-15): nothing is written.
-- Tables: workqueue, tube_pause, topology, partition_map (read).
#variable_conflict use_column
declare
    v_counts bigint[];
    v_pause record;
begin
    perform pepsi.tube_check(p_tube);
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select array[count(*) filter (where w.status = 'pending'), count(*) filter (where w.status = 'running'),
                 count(*) filter (where w.status = 'paused'),
                 count(*) filter (where w.status in ('failed', 'timeout')), count(*)]
      into v_counts
      from pepsi.workqueue w where w.tube = p_tube;
    select tp.paused_at, tp.paused_until into v_pause
      from pepsi.tube_pause tp where tp.tube = p_tube and tp.paused_until > p_now;
    if v_counts[5] = 0 and v_pause.paused_until is null and p_tube <> 'default' then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    return query
    select p_tube, 0::bigint, v_counts[1], v_counts[2], v_counts[3], v_counts[4], v_counts[5],
           coalesce(extract(epoch from v_pause.paused_until - v_pause.paused_at)::bigint, 0),
           coalesce(floor(extract(epoch from v_pause.paused_until - p_now))::bigint, 0),
           loc.partition, loc.owner_slot
      from pepsi.tube_locate(p_tube) loc;
end
$$;

create function pepsi.tube_pause(p_tube text, p_seconds int, p_now timestamptz default now())
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's pause-tube (issue 14, T-33): no row of p_tube is claimed
-- until p_now + p_seconds; returns that time. 0 ends a pause at once
-- (returns NULL) and notifies the workqueue channel, so the runner claims
-- the waiting rows now. A pause ends by itself when its time comes: the
-- runner's next claim after it takes the rows (at the latest its
-- POLL_INTERVAL heartbeat), and the expired row is swept. Pausing again
-- replaces the pause. Expired pauses of every tube are swept first.
-- Raises PX006 for an invalid name, PX003 for p_seconds NULL, negative or
-- over input_limit('pause_seconds') (a year), and PX043 (NOT_FOUND) for a
-- tube that does not exist (no row, no pause in force, not default),
-- leaving nothing behind: a pause never creates a tube. A tube whose last
-- row finishes while it is paused keeps its pause until it expires.
-- Tables: tube_pause (insert, update, delete); workqueue (read).
#variable_conflict use_column
declare
    v_max bigint := pepsi.input_limit('pause_seconds');
    v_until timestamptz;
begin
    perform pepsi.tube_check(p_tube);
    if p_seconds is null or p_seconds < 0 or p_seconds > v_max then
        raise exception 'pause must be 0 to % seconds, not %', v_max, coalesce(p_seconds::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    delete from pepsi.tube_pause tp where tp.paused_until <= p_now;
    if p_tube <> 'default'
       and not exists (select 1 from pepsi.workqueue w where w.tube = p_tube)
       and not exists (select 1 from pepsi.tube_pause tp where tp.tube = p_tube) then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    if p_seconds = 0 then
        delete from pepsi.tube_pause tp where tp.tube = p_tube;
        notify workqueue;
        return null;
    end if;
    v_until := p_now + make_interval(secs => p_seconds);
    insert into pepsi.tube_pause as tp (tube, paused_at, paused_until)
    values (p_tube, p_now, v_until)
        on conflict (tube) do update set paused_at = excluded.paused_at, paused_until = excluded.paused_until;
    return v_until;
end
$$;

revoke all on table pepsi.tube_pause from public;
revoke all on function pepsi.tube_pause_current(timestamptz, boolean), pepsi.tube_locate(text),
    pepsi.tube_stats(text, timestamptz), pepsi.tube_pause(text, int, timestamptz) from public;
grant select on pepsi.tubes to pepsi_reader, pepsi_runner;
grant execute on function pepsi.tube_stats(text, timestamptz), pepsi.tube_locate(text) to pepsi_reader, pepsi_runner;
grant execute on function pepsi.tube_pause(text, int, timestamptz) to pepsi_runner, pepsi_operator;

commit;
