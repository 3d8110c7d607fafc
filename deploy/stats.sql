-- Deploy pepsi:stats to pg
-- requires: schema
--
-- Cumulative, best-effort counters (D-137..D-142). Only the dispatcher
-- writes them, one row per stage and owner slot, so no worker ever queues
-- on a statistics row; views sum over owner slots.

begin;

create table pepsi.stage_stats (
    stage            text not null,
    owner_slot       int not null default 0,
    stages_executed  bigint not null default 0,  -- worker passes that began at this stage; a fused chain counts once (D-141)
    runs             bigint not null default 0,  -- times this stage's logic ran, fused or not (D-135)
    run_usec         bigint not null default 0,  -- worker time spent in this stage, microseconds
    succeeded        bigint not null default 0,  -- status 0
    failed           bigint not null default 0,  -- other non-zero statuses: the worker failed the row
    tempfailed       bigint not null default 0,  -- status 75: database overload, requeued
                                                 -- (status 74 deferrals are logged, counted nowhere: D-101)
    strikes          bigint not null default 0,  -- crashes and hangs charged to a message
    requeued         bigint not null default 0,  -- handed out but returned unrun
    updated_at       timestamptz not null default now(),
    constraint stage_stats_pkey primary key (stage, owner_slot)
);

create table pepsi.dispatch_stats (
    owner_slot       int not null default 0
                     constraint dispatch_stats_pkey primary key,
    claims           bigint not null default 0,  -- claim statements run
    claimed          bigint not null default 0,  -- rows set running by them
    wakeups          bigint not null default 0,  -- claim rounds started, whatever woke them
    notifications    bigint not null default 0,  -- workqueue notifications received
    workers_started  bigint not null default 0,
    workers_exited   bigint not null default 0,
    bodies_collected bigint not null default 0,  -- by workqueue_body_gc
    updated_at       timestamptz not null default now()
);

create function pepsi.stats_flush(p_owner_slot int, p_stages jsonb, p_dispatch jsonb,
                                  p_now timestamptz default now())
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Adds one batch of deltas to the counters, in the caller's one transaction.
-- p_stages: [{"stage": "a", "stages_executed": 3, "runs": 4, ...}, ...]
--           (any column of stage_stats but stage/owner_slot/updated_at;
--           a missing key adds 0)
-- p_dispatch: {"claims": 5, "claimed": 12, ...} or null
-- Raises PX001 (a stage name), PX003 (a bad owner slot, p_stages not an
-- array of objects, p_dispatch not an object, a delta that is not a count
-- of 0 to 15 digits, a NULL p_now).
-- Tables: stage_stats, dispatch_stats (insert or update).
declare
    v_bad record;
begin
    if p_owner_slot is null or p_owner_slot < 0 then
        raise exception 'invalid owner slot %', coalesce(p_owner_slot::text, '<null>') using errcode = 'PX003';
    end if;
    if p_stages is not null and jsonb_typeof(p_stages) <> 'array' then
        raise exception 'stage deltas must be a JSON array' using errcode = 'PX003';
    end if;
    if p_dispatch is not null and jsonb_typeof(p_dispatch) <> 'object' then
        raise exception 'dispatch deltas must be a JSON object' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    -- Every delta a count: 0 to 15 digits (a JSON number or a string of
    -- one), checked before jsonb_to_recordset casts it.
    select d.ord, d.key, d.value into v_bad
      from (select e.ord, k.key, k.value
              from jsonb_array_elements(coalesce(p_stages, '[]')) with ordinality as e(s, ord)
              left join lateral jsonb_each(case when jsonb_typeof(e.s) = 'object' then e.s end) k on true
             where jsonb_typeof(e.s) <> 'object'
                or (k.key in ('stages_executed', 'runs', 'run_usec', 'succeeded', 'failed',
                              'tempfailed', 'strikes', 'requeued')
                    and (k.value #>> '{}') !~ '^[0-9]{1,15}$')
            union all
            select null, k.key, k.value
              from jsonb_each(coalesce(p_dispatch, '{}')) k
             where k.key in ('claims', 'claimed', 'wakeups', 'notifications', 'workers_started',
                             'workers_exited', 'bodies_collected')
               and (k.value #>> '{}') !~ '^[0-9]{1,15}$') d
     order by d.ord nulls last
     limit 1;
    if found and v_bad.key is null then
        raise exception 'stage delta % is not a JSON object', v_bad.ord using errcode = 'PX003';
    elsif found then
        raise exception '%: % must be a count (0 to 15 digits), not %',
            coalesce('stage delta ' || v_bad.ord, 'dispatch deltas'), v_bad.key, pepsi.excerpt(v_bad.value::text)
            using errcode = 'PX003';
    end if;

    insert into pepsi.stage_stats as s
        (stage, owner_slot, stages_executed, runs, run_usec, succeeded, failed,
         tempfailed, strikes, requeued, updated_at)
    select pepsi.stage_check(d.stage), p_owner_slot,
           coalesce(d.stages_executed, 0), coalesce(d.runs, 0), coalesce(d.run_usec, 0),
           coalesce(d.succeeded, 0), coalesce(d.failed, 0), coalesce(d.tempfailed, 0),
           coalesce(d.strikes, 0), coalesce(d.requeued, 0), p_now
      from jsonb_to_recordset(coalesce(p_stages, '[]')) as d
           (stage text, stages_executed bigint, runs bigint, run_usec bigint,
            succeeded bigint, failed bigint, tempfailed bigint,
            strikes bigint, requeued bigint)
    on conflict (stage, owner_slot) do update set
        stages_executed = s.stages_executed + excluded.stages_executed,
        runs            = s.runs + excluded.runs,
        run_usec        = s.run_usec + excluded.run_usec,
        succeeded       = s.succeeded + excluded.succeeded,
        failed          = s.failed + excluded.failed,
        tempfailed      = s.tempfailed + excluded.tempfailed,
        strikes         = s.strikes + excluded.strikes,
        requeued        = s.requeued + excluded.requeued,
        updated_at      = excluded.updated_at;

    if p_dispatch is not null then
        insert into pepsi.dispatch_stats as s
            (owner_slot, claims, claimed, wakeups, notifications, workers_started,
             workers_exited, bodies_collected, updated_at)
        select p_owner_slot, coalesce(d.claims, 0), coalesce(d.claimed, 0),
               coalesce(d.wakeups, 0), coalesce(d.notifications, 0),
               coalesce(d.workers_started, 0), coalesce(d.workers_exited, 0),
               coalesce(d.bodies_collected, 0), p_now
          from jsonb_to_record(p_dispatch) as d
               (claims bigint, claimed bigint, wakeups bigint, notifications bigint,
                workers_started bigint, workers_exited bigint, bodies_collected bigint)
        on conflict (owner_slot) do update set
            claims           = s.claims + excluded.claims,
            claimed          = s.claimed + excluded.claimed,
            wakeups          = s.wakeups + excluded.wakeups,
            notifications    = s.notifications + excluded.notifications,
            workers_started  = s.workers_started + excluded.workers_started,
            workers_exited   = s.workers_exited + excluded.workers_exited,
            bodies_collected = s.bodies_collected + excluded.bodies_collected,
            updated_at       = excluded.updated_at;
    end if;
end
$$;

revoke all on function pepsi.stats_flush(int, jsonb, jsonb, timestamptz) from public;
grant execute on function pepsi.stats_flush(int, jsonb, jsonb, timestamptz) to pepsi_runner;
grant select on pepsi.stage_stats, pepsi.dispatch_stats to pepsi_reader;

-- The stage graph each dispatcher serves (issue 15), published whenever
-- it builds a stage table (start-up and every reload): one row per stage
-- of its file or of its running graph. served: in the running graph (file
-- and overlay); in_file: a section of the file, whose PROGRAM and stage
-- references (NEXT, BOUNCE_STAGE, THEN, ELSE) program and refs hold as
-- the file says them, before the overlay. SQL cannot read the file; these
-- rows are what it knows of it: config_set and its siblings lay the
-- overlay over them as the runner does (pepsi.config_graph), and the
-- unserved_stage anomaly check reads the served ones. A slot's rows stay
-- after its runner stops (the file is still the best knowledge); whether a
-- slot is served now is whether its dispatcher lock is held
-- (pepsi.stage_served_live).
create table pepsi.stage_served (
    owner_slot   int not null
                 constraint stage_served_owner_slot_check check (owner_slot >= 0),
    stage        text not null
                 constraint stage_served_stage_check check (pepsi.stage_name_valid(stage)),
    served       boolean not null default true,
    in_file      boolean not null default true,
    program      text,
    refs         jsonb not null default '{}'
                 constraint stage_served_refs_check check (jsonb_typeof(refs) = 'object'),
    published_at timestamptz not null default now(),
    constraint stage_served_pkey primary key (owner_slot, stage)
);

comment on table pepsi.stage_served is
    'The stage graph each owner slot''s dispatcher last published (issue 15): stage, served (in its running graph), in_file (a section of its file) with the file''s PROGRAM and refs {"NEXT": .., "BOUNCE_STAGE": .., "THEN": .., "ELSE": ..}. Replaced on each start-up and reload; see stage_served_live for whether the slot is served now.';

create function pepsi.stage_served_publish(p_owner_slot int, p_stages jsonb)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Replaces owner slot p_owner_slot's published graph by p_stages, an array
-- of {"stage": name, "served": bool, "in_file": bool, "program": text,
-- "refs": {"NEXT": name, ...}} (served and in_file default to true).
-- Returns how many stages. Raises PX003 (slot, shape), PX001 (a name).
-- Tables: stage_served (delete, insert).
declare
    v_count int;
begin
    if p_owner_slot is null or p_owner_slot < 0 then
        raise exception 'invalid owner slot %', coalesce(p_owner_slot::text, '<null>') using errcode = 'PX003';
    end if;
    if p_stages is null or jsonb_typeof(p_stages) <> 'array'
       or exists (select from jsonb_array_elements(p_stages) e
                   where jsonb_typeof(e) <> 'object' or jsonb_typeof(e -> 'stage') <> 'string'
                      or jsonb_typeof(coalesce(e -> 'refs', '{}')) <> 'object'
                      or jsonb_typeof(coalesce(e -> 'served', 'true')) <> 'boolean'
                      or jsonb_typeof(coalesce(e -> 'in_file', 'true')) <> 'boolean') then
        raise exception 'the stages must be an array of {"stage": .., "program": .., "refs": {..}}'
            using errcode = 'PX003';
    end if;
    delete from pepsi.stage_served s where s.owner_slot = p_owner_slot;
    insert into pepsi.stage_served (owner_slot, stage, served, in_file, program, refs)
    select p_owner_slot, pepsi.stage_check(e ->> 'stage'), coalesce((e ->> 'served')::boolean, true),
           coalesce((e ->> 'in_file')::boolean, true), e ->> 'program',
           coalesce(jsonb_strip_nulls(e -> 'refs'), '{}')
      from jsonb_array_elements(p_stages) e;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

create function pepsi.stage_served_live()
returns table (owner_slot int, stage text, program text, published_at timestamptz)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The published stages whose owner slot's dispatcher holds its lock now
-- (advisory lock pepsi.lock_key('dispatcher', slot), D-14): the stages a
-- running dispatcher serves.
    select s.owner_slot, s.stage, s.program, s.published_at
      from pepsi.stage_served s
      cross join lateral pepsi.lock_key('dispatcher', s.owner_slot) k
     where s.served and exists (select from pg_catalog.pg_locks l
                    where l.locktype = 'advisory' and l.granted and l.objsubid = 2
                      and l.classid = k.class_id::oid and l.objid = k.object_id::oid
                      and l.database = (select d.oid from pg_catalog.pg_database d
                                         where d.datname = current_database()))
$$;

revoke all on table pepsi.stage_served from public;
revoke all on function pepsi.stage_served_publish(int, jsonb) from public;
revoke all on function pepsi.stage_served_live() from public;
grant execute on function pepsi.stage_served_publish(int, jsonb) to pepsi_runner;
grant execute on function pepsi.stage_served_live() to pepsi_reader, pepsi_runner;
grant select on pepsi.stage_served to pepsi_reader;

commit;
