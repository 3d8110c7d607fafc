-- Deploy pepsi:workqueue_commit to pg
-- requires: workqueue_results

begin;

create function pepsi.commit_rows(p_results jsonb)
returns table (id bigint, act text, next text, patch jsonb, until timestamptz, reason text, class text)
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
-- The rows of a workqueue_commit batch, typed.
    select r.id, r."do", r.next, r.state, r.until, r.reason, r.class
      from jsonb_to_recordset(p_results) as r(id bigint, "do" text, next text, state jsonb,
                                              until timestamptz, reason text, class text)
$$;

create function pepsi.workqueue_commit(p_stage text, p_results jsonb)
returns table (workqueue_id bigint, outcome text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Commits the results of a batch of messages that a worker of p_stage ran
-- (D-69..D-73): one call, one round trip, one UPDATE ... FROM
-- jsonb_to_recordset for every result that rewrites its row (advance,
-- pause, fail) and one DELETE for the finished ones, in one statement.
-- p_results: [{"id": 1, "do": "advance", "next": "b", "state": {...}},
--             {"id": 2, "do": "finish"},
--             {"id": 3, "do": "pause", "until": "2026-...", "reason": "..."},
--             {"id": 4, "do": "fail", "reason": "...", "class": "permanent"}]
-- The same rules as the one-message functions: only rows running at
-- p_stage are touched (no double completion), state keys are merged,
-- an advance clears state.strikes, a failure records last_error,
-- failed_stage and failure_class. Returns every id with its outcome:
-- 'ok', or 'refused' when the row was not running at p_stage (the caller
-- treats it as the one-message functions' PX004/PX005).
-- Raises PX001 (bad next stage), PX003 (malformed results, a pause
-- without a time, an id twice), PX007 (unknown failure class).
-- Tables: workqueue (update, delete).
declare
    v_bad record;
begin
    if p_results is null or jsonb_typeof(p_results) <> 'array' then
        raise exception 'results must be a JSON array' using errcode = 'PX003';
    end if;
    select c.id, c.act, c.next, c.until, c.class, c.patch into v_bad
      from pepsi.commit_rows(p_results) c
     where c.id is null or c.act is null or c.act not in ('advance', 'finish', 'pause', 'fail')
        or (c.act = 'pause' and c.until is null)
        or (c.patch is not null and jsonb_typeof(c.patch) <> 'object')
     limit 1;
    if found then
        raise exception 'malformed result for message %', coalesce(v_bad.id::text, '<null>')
            using errcode = 'PX003',
                  detail = 'Each result needs an id, "do" one of advance, finish, pause, fail; a pause an "until"; "state" an object.';
    end if;
    if (select count(*) <> count(distinct c.id) from pepsi.commit_rows(p_results) c) then
        raise exception 'a message appears twice in one batch' using errcode = 'PX003';
    end if;
    perform pepsi.stage_check(c.next) from pepsi.commit_rows(p_results) c where c.act = 'advance';
    perform pepsi.failure_class_check(coalesce(c.class, 'permanent'))
       from pepsi.commit_rows(p_results) c where c.act = 'fail';

    return query
    with c as materialized (
        select * from pepsi.commit_rows(p_results)
    ), upd as (
        update pepsi.workqueue w
           set stage = case c.act when 'advance' then c.next else w.stage end,
               status = case c.act when 'advance' then 'pending'
                                   when 'pause' then 'paused'
                                   else 'failed' end::pepsi.workqueue_status,
               timeout = case c.act when 'pause' then c.until end,
               state = case c.act
                   when 'advance' then (w.state || coalesce(c.patch, '{}')) - 'strikes'
                   when 'pause' then w.state || coalesce(c.patch, '{}')
                       || case when c.reason is null then '{}'::jsonb
                               else jsonb_build_object('pause_reason', c.reason) end
                   else w.state || coalesce(c.patch, '{}')
                       || jsonb_build_object('last_error', coalesce(c.reason, 'failed'),
                                             'failed_stage', w.stage,
                                             'failure_class', coalesce(c.class, 'permanent'))
               end
          from c
         where w.workqueue_id = c.id and c.act <> 'finish'
           and w.status = 'running' and w.stage = p_stage
        returning w.workqueue_id
    ), del as (
        delete from pepsi.workqueue w
         using c
         where w.workqueue_id = c.id and c.act = 'finish'
           and w.status = 'running' and w.stage = p_stage
        returning w.workqueue_id
    ), done as (
        select u.workqueue_id from upd u union all select d.workqueue_id from del d
    )
    select c.id, case when exists (select 1 from done where done.workqueue_id = c.id)
                      then 'ok' else 'refused' end
      from c;
end
$$;

revoke all on function pepsi.commit_rows(jsonb) from public;
revoke all on function pepsi.workqueue_commit(text, jsonb) from public;
grant execute on function pepsi.workqueue_commit(text, jsonb) to pepsi_worker;

commit;
