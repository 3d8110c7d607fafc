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

commit;
