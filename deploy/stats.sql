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
-- Tables: stage_stats, dispatch_stats (insert or update).
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
