-- Deploy pepsi:workqueue_commit to pg
-- requires: workqueue_results

begin;

create function pepsi.workqueue_commit_casts(p_results jsonb)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The slow path of workqueue_commit, run only after a cast of the batch
-- failed: raises PX003 naming the first result that is not an object,
-- whose id is not an integer, whose until is not a time or whose via is
-- not an array of strings. Returns when it finds none (the caller then
-- re-raises the original error).
declare
    v record;
begin
    for v in select e.ord, e.r from jsonb_array_elements(p_results) with ordinality as e(r, ord) order by e.ord loop
        if jsonb_typeof(v.r) <> 'object' then
            raise exception 'result % is not a JSON object', v.ord using errcode = 'PX003';
        end if;
        begin
            perform (v.r->>'id')::bigint;
        exception when data_exception then
            raise exception 'result %: id "%" is not an integer', v.ord, pepsi.excerpt(v.r->>'id') using errcode = 'PX003';
        end;
        if v.r->>'until' is not null and pepsi.time_or_null(v.r->>'until') is null then
            raise exception 'result %: until "%" is not a time', v.ord, pepsi.excerpt(v.r->>'until') using errcode = 'PX003';
        end if;
        if coalesce(jsonb_typeof(v.r->'via'), 'null') not in ('null', 'array')
           or (jsonb_typeof(v.r->'via') = 'array'
               and exists (select 1 from jsonb_array_elements(v.r->'via') e where jsonb_typeof(e) <> 'string')) then
            raise exception 'result %: via is not an array of stage names', v.ord using errcode = 'PX003';
        end if;
    end loop;
end
$$;

create function pepsi.workqueue_commit(p_stage text, p_results jsonb, p_max_hops int default 1000)
returns table (workqueue_id bigint, outcome text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Commits the results of a batch of messages that a worker of p_stage ran
-- (D-69..D-73): one call, one round trip; one UPDATE ... FROM
-- jsonb_to_recordset for every result that rewrites its row (advance,
-- pause, fail) and one DELETE for the finished ones, in one statement.
-- p_results: [{"id": 1, "do": "advance", "next": "b", "state": {...}},
--             {"id": 5, "do": "advance", "next": "d", "via": ["b", "c"]},
--             {"id": 2, "do": "finish"},
--             {"id": 3, "do": "pause", "until": "2026-...", "reason": "..."},
--             {"id": 4, "do": "fail", "reason": "...", "class": "permanent"}]
-- The same rules as the one-message functions: only rows running at
-- p_stage are touched (no double completion), state keys are merged, an
-- advance goes through the hop rule (workqueue_hop: it clears
-- state.strikes, counts 1 + the stages in "via" as hops and fails the
-- message as a 'loop' past p_max_hops, issue 12), a failure records
-- last_error, failed_stage and failure_class. Returns every id with its
-- outcome: 'ok'; 'loop' when an advance failed the message as a loop
-- (the worker answers non-zero for it); or 'refused' when the row was
-- not running at p_stage (the caller treats it as the one-message
-- functions' PX004/PX005).
-- The rows are reached through "workqueue_id = any(ids)", so the plan is
-- a primary-key probe per result whatever the planner guesses of the
-- JSON's size (with a join alone it hashed the whole queue: 6 ms a call);
-- the UPDATE probes only the ids it rewrites, the DELETE those it
-- deletes (and neither filters c: an estimate of one row there made the
-- planner probe all ids once per result).
-- A reason is cut to input_limit('reason') bytes.
-- Raises PX001 (bad next stage, or in via), PX003 (malformed results:
-- not an array of objects, an id that is not an integer, an "until"
-- that is not a time, a "via" that is not an array of strings, a "state"
-- over input_limit('state'); a pause without a time, an id twice; the
-- message names the result: "result 3: ..."; p_max_hops out of range),
-- PX007 (unknown failure class).
-- Tables: workqueue (update, delete).
declare
    v record;
begin
    if p_results is null or jsonb_typeof(p_results) <> 'array' then
        raise exception 'results must be a JSON array' using errcode = 'PX003';
    end if;
    -- The casts of jsonb_to_recordset (id bigint, until timestamptz) run
    -- on the whole batch at once; only when one fails is the result found
    -- one by one (workqueue_commit_casts), and named.
    begin
    select count(*) as n, count(distinct r.id) as distinct_ids,
           coalesce(array_agg(r.id) filter (where r."do" <> 'finish'), '{}') as update_ids,
           coalesce(array_agg(r.id) filter (where r."do" = 'finish'), '{}') as finish_ids,
           count(*) filter (where r.id is null or r."do" is null
                               or r."do" not in ('advance', 'finish', 'pause', 'fail')
                               or (r."do" = 'pause' and r.until is null)
                               or (r.state is not null and jsonb_typeof(r.state) <> 'object')) as bad,
           max(octet_length(r.state::text)) as max_state,
           -- the checks raise PX001/PX007; CASE keeps each to its rows
           count(case when r."do" = 'advance' then pepsi.stage_check(r.next) end) as advances,
           count(case when r."do" = 'fail' then pepsi.failure_class_check(coalesce(r.class, 'permanent')) end) as fails,
           count(case when r."do" = 'advance' and r.via is not null
                      then pepsi.workqueue_hop_check(r.via, p_max_hops) end) as fused
      into v
      from jsonb_to_recordset(p_results) as r(id bigint, "do" text, next text, via text[], state jsonb,
                                              until timestamptz, reason text, class text);
    exception when data_exception then
        perform pepsi.workqueue_commit_casts(p_results);
        raise;
    end;
    if v.max_state > pepsi.input_limit('state') then
        perform pepsi.size_error(null, 'state', v.max_state, 'a state patch');
    end if;
    if v.bad > 0 then
        raise exception 'malformed result in a batch of %', v.n
            using errcode = 'PX003',
                  detail = 'Each result needs an id, "do" one of advance, finish, pause, fail; a pause an "until"; "state" an object.';
    end if;
    if v.n <> v.distinct_ids then
        raise exception 'a message appears twice in one batch' using errcode = 'PX003';
    end if;
    if v.n = 0 then
        return;
    end if;
    perform pepsi.workqueue_hop_check(null, p_max_hops);

    return query
    with c as materialized (
        select r.id, r."do" as act, r.next, r.via, r.state as patch, r.until, r.reason, r.class
          from jsonb_to_recordset(p_results) as r(id bigint, "do" text, next text, via text[], state jsonb,
                                                  until timestamptz, reason text, class text)
    ), upd as (
        -- one UPDATE for every result that rewrites its row (two on the
        -- same table cost twice the CPU): an advance takes stage, status
        -- and state from the hop rule (workqueue_hop, issue 12)
        update pepsi.workqueue w
           set (stage, status, timeout, state) = (
               select case c.act when 'advance' then h.o_stage else w.stage end,
                      case c.act when 'advance' then h.o_status
                                 when 'pause' then 'paused'::pepsi.workqueue_status
                                 else 'failed'::pepsi.workqueue_status end,
                      case c.act when 'pause' then c.until end,
                      case c.act
                          when 'advance' then h.o_state
                          when 'pause' then w.state || coalesce(c.patch, '{}')
                              || case when c.reason is null then '{}'::jsonb
                                      else jsonb_build_object('pause_reason', pepsi.reason_clip(c.reason)) end
                          else w.state || coalesce(c.patch, '{}')
                              || jsonb_build_object('last_error', coalesce(pepsi.reason_clip(c.reason), 'failed'),
                                                    'failed_stage', w.stage,
                                                    'failure_class', coalesce(c.class, 'permanent'))
                      end
                 from pepsi.workqueue_hop(w.state, c.patch, w.stage, c.via, c.next, 'pending', p_max_hops) h)
          from c
         where w.workqueue_id = any(v.update_ids) and w.workqueue_id = c.id
           and w.status = 'running' and w.stage = p_stage
        returning w.workqueue_id, w.status
    ), del as (
        delete from pepsi.workqueue w
         using c
         where w.workqueue_id = any(v.finish_ids) and w.workqueue_id = c.id
           and w.status = 'running' and w.stage = p_stage
        returning w.workqueue_id, null::pepsi.workqueue_status as status
    ), done as (
        select u.workqueue_id, u.status from upd u union all select d.workqueue_id, d.status from del d
    )
    select c.id, case when d.workqueue_id is null then 'refused'
                      when c.act = 'advance' and d.status = 'failed' then 'loop'
                      else 'ok' end
      from c left join done d on d.workqueue_id = c.id;
end
$$;

revoke all on function pepsi.workqueue_commit_casts(jsonb) from public;
revoke all on function pepsi.workqueue_commit(text, jsonb, int) from public;
grant execute on function pepsi.workqueue_commit(text, jsonb, int) to pepsi_worker;

commit;
