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
-- (D-69..D-73): one call, one round trip, one statement. A thin wrapper
-- over the state machine (workqueue_transition, issue 13): the JSON is
-- read into pepsi.transition rows at p_stage, which it writes with the
-- same rules as the one-message functions.
-- p_results: [{"id": 1, "do": "advance", "next": "b", "state": {...}},
--             {"id": 5, "do": "advance", "next": "d", "via": ["b", "c"]},
--             {"id": 2, "do": "finish"},
--             {"id": 3, "do": "pause", "until": "2026-...", "reason": "..."},
--             {"id": 4, "do": "fail", "reason": "...", "class": "permanent"},
--             {"id": 6, "do": "host_error", "reason": "...", "lifetime": "120 hours",
--              "bounce": "bounce"},
--             {"id": 7, "do": "pause", "at": "c", "via": ["b"], "until": "..."}]
-- Only rows running at p_stage are touched (no double completion), state
-- keys are merged, an advance goes through the hop rule (workqueue_hop:
-- it clears state.strikes, counts 1 + the stages in "via" as hops and
-- fails the message as a 'loop' past p_max_hops, issue 12), a failure
-- records last_error, failed_stage and failure_class, a host error
-- backs off or gives up after "lifetime" (workqueue_host_error's rules).
-- "at" (pause, fail, host_error): a fused stage reached through "via"
-- paused or failed (D-115): the row is moved there and paused or failed
-- there in the same statement.
-- Returns every id with its outcome: 'ok'; 'loop' when a hop failed the
-- message as a loop (the worker answers non-zero for it); 'failed' when
-- a host error left the row failed (retries exhausted, no bounce stage);
-- or 'refused' when the row was not running at p_stage (the caller
-- treats it as the one-message functions' PX004/PX005).
-- A reason is cut to input_limit('reason') bytes.
-- Raises PX001 (bad next stage, at, bounce, or in via), PX003 (malformed
-- results: not an array of objects, an id that is not an integer, an
-- "until" that is not a time, a "via" that is not an array of strings, a
-- "state" over input_limit('state'); a pause without a time, an id
-- twice; the message names the result: "result 3: ..."; p_max_hops out
-- of range), PX007 (unknown failure class).
-- Tables: workqueue (update, delete).
declare
    v_ops pepsi.transition[];
    v_bad int;
begin
    if p_results is null or jsonb_typeof(p_results) <> 'array' then
        raise exception 'results must be a JSON array' using errcode = 'PX003';
    end if;
    -- The casts of jsonb_to_recordset (id bigint, until timestamptz) run
    -- on the whole batch at once; only when one fails is the result found
    -- one by one (workqueue_commit_casts), and named.
    begin
    select coalesce(array_agg(row(r.id, p_stage, r."do", r.at, r.next, r.via, r.state, r.until, r.reason, r.class,
                                  null, r.lifetime, r.bounce, null)::pepsi.transition), '{}'),
           count(*) filter (where r.id is null or r."do" is null
                               or r."do" not in ('advance', 'finish', 'pause', 'fail', 'host_error'))
      into v_ops, v_bad
      from jsonb_to_recordset(p_results) as r(id bigint, "do" text, at text, next text, via text[], state jsonb,
                                              until timestamptz, reason text, class text, lifetime interval,
                                              bounce text);
    exception when data_exception then
        perform pepsi.workqueue_commit_casts(p_results);
        raise;
    end;
    if v_bad > 0 then
        raise exception 'malformed result in a batch of %', cardinality(v_ops)
            using errcode = 'PX003',
                  detail = 'Each result needs an id, "do" one of advance, finish, pause, fail, host_error; a pause an "until"; "state" an object.';
    end if;
    return query
    select t.workqueue_id,
           case when t.outcome = 'ok' and t.status = 'failed'
                     and (p_results->(t.ord::int - 1))->>'do' = 'host_error' then 'failed'
                else t.outcome end
      from pepsi.workqueue_transition(v_ops, p_max_hops) with ordinality as t(workqueue_id, outcome, status, code, ord);
end
$$;

revoke all on function pepsi.workqueue_commit_casts(jsonb) from public;
revoke all on function pepsi.workqueue_commit(text, jsonb, int) from public;
grant execute on function pepsi.workqueue_commit(text, jsonb, int) to pepsi_worker;

commit;
