-- Deploy pepsi:workqueue_results to pg
-- requires: workqueue
--
-- What a stage does with the message it ran: one call, one round trip,
-- one statement each (D-74..D-76). Each refuses a row that is not running
-- at the caller's stage, so a message is never completed twice (say, by a
-- worker that outlived its dispatcher after the row was handed out again).

begin;

create function pepsi.workqueue_refuse(p_id bigint, p_stage text)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises the error that explains why a result for message p_id at stage
-- p_stage matched no row: PX004 when the id is unknown (already finished
-- or never queued), PX005 when the row is not running at that stage.
declare
    v_row record;
begin
    select w.status, w.stage into v_row from pepsi.workqueue w where w.workqueue_id = p_id;
    if not found then
        raise exception 'message % does not exist', coalesce(p_id::text, '<null>')
            using errcode = 'PX004';
    end if;
    raise exception 'message % is % at stage "%", not running at stage "%"',
        p_id, v_row.status, v_row.stage, pepsi.excerpt(p_stage)
        using errcode = 'PX005';
end
$$;

create function pepsi.state_patch_check(p_state jsonb)
returns jsonb
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns p_state when it is NULL or a JSON object (keys to merge into a
-- message's state) of at most input_limit('state') bytes of JSON text,
-- else raises PX003.
begin
    if p_state is not null and jsonb_typeof(p_state) <> 'object' then
        raise exception 'state must be a JSON object, not %', jsonb_typeof(p_state) using errcode = 'PX003';
    end if;
    if octet_length(p_state::text) > pepsi.input_limit('state') then
        perform pepsi.size_error(null, 'state', octet_length(p_state::text), 'state patch');
    end if;
    return p_state;
end
$$;

create function pepsi.workqueue_hop_refuse(p_via text[], p_max_hops int)
returns boolean
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- workqueue_hop_check's slow path: raises the error for hop arguments
-- that are not usable, or returns true (a p_via of stage names).
-- Raises PX003 (p_max_hops not 1 to 100,000,000; more than 64 stages in
-- p_via), PX001 (an element of p_via that is not a stage name).
begin
    if p_max_hops is null or p_max_hops < 1 or p_max_hops > 100000000 then
        raise exception 'max_hops must be 1 to 100000000, not %', coalesce(p_max_hops::text, 'null')
            using errcode = 'PX003';
    end if;
    if cardinality(p_via) > 64 then
        raise exception 'a fused chain lists at most 64 stages, not %', cardinality(p_via) using errcode = 'PX003';
    end if;
    perform pepsi.stage_check(v, 'via') from unnest(p_via) v;
    return true;
end
$$;

create function pepsi.workqueue_hop_check(p_via text[], p_max_hops int)
returns boolean
language sql immutable
as $$
-- Checks the arguments of a hop (issue 12) before any row is touched;
-- every caller of workqueue_hop calls it first. p_max_hops is the
-- worker's [pepsi] MAX_HOPS: 1 to 100,000,000. p_via, the stages a worker
-- fused on the way, is NULL or at most 64 stage names. Returns true, or
-- raises (workqueue_hop_refuse: PX003, PX001). language sql without SET,
-- so that the common case (no p_via, a limit in range) is inlined into
-- the caller and costs no function call.
    select case when p_via is null and p_max_hops between 1 and 100000000 then true
                else pepsi.workqueue_hop_refuse(p_via, p_max_hops) end
$$;

create function pepsi.workqueue_hop_slow(p_state jsonb, p_patch jsonb, p_stage text, p_via text[], p_next text,
                                         p_hops int, p_max_hops int)
returns jsonb
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- workqueue_hop's rare branch: the state after the chain p_stage, p_via,
-- p_next (each step one hop) of a message that had made p_hops hops,
-- when that brings it within 8 hops of p_max_hops or past it. It keeps
-- state.hop_path, the last 8 stages of the message's path.
-- Within the limit the hops are ordinary ones (p_patch merged, strikes
-- cleared, state.hops counted). Past it the message fails as a loop at
-- the stage where its hop number p_max_hops + 1 starts, whether that hop
-- is the first of the chain or one fused later, so that a fused chain
-- fails the message exactly where unfused hops would (D-130):
-- failed_stage names it (workqueue_hop moves the row there), state.hops
-- is p_max_hops + 1, the path ends with the hop refused, last_error
-- names the count, the limit and the path, failure_class is 'loop'; the
-- patch is merged and strikes stay, as in workqueue_fail.
declare
    v_chain text[] := array[p_stage] || coalesce(p_via, '{}') || array[p_next];
    v_k int := cardinality(v_chain) - 1;
    v_walked int;
    v_path jsonb := case when jsonb_typeof(p_state->'hop_path') = 'array' then p_state->'hop_path' else '[]' end;
    v_state jsonb;
begin
    -- the hops this chain walks: all of them, or up to the refused one
    v_walked := case when p_hops + v_k <= p_max_hops then v_k else greatest(p_max_hops - p_hops, 0) + 1 end;
    if v_path->>-1 is distinct from p_stage then
        v_path := v_path || to_jsonb(p_stage);
    end if;
    v_path := v_path || to_jsonb(v_chain[2:v_walked + 1]);
    select jsonb_agg(e.v order by e.i) into v_path
      from jsonb_array_elements(v_path) with ordinality as e(v, i)
     where e.i > jsonb_array_length(v_path) - 8;
    v_state := p_state || coalesce(p_patch, '{}')
               || jsonb_build_object('hops', p_hops + v_walked, 'hop_path', v_path);
    if p_hops + v_k <= p_max_hops then
        return v_state - 'strikes';
    end if;
    return v_state || jsonb_build_object(
        'last_error', pepsi.reason_clip(format('loop: %s hops, more than MAX_HOPS (%s); the last stages: %s',
            p_hops + v_walked, p_max_hops,
            (select string_agg(e.v, ' -> ' order by e.i)
               from jsonb_array_elements_text(v_path) with ordinality as e(v, i)))),
        'failed_stage', v_chain[v_walked],
        'failure_class', 'loop');
end
$$;

create function pepsi.workqueue_hop(p_state jsonb, p_patch jsonb, p_stage text, p_via text[], p_next text,
                                    p_status pepsi.workqueue_status, p_max_hops int)
returns table (o_stage text, o_status pepsi.workqueue_status, o_state jsonb)
language sql immutable
as $$
-- The hop rule, written once (issue 12): what a row at p_stage with
-- state p_state becomes when a worker moves it on to p_next, through the
-- stages p_via that it fused on the way. Every advance goes through here:
-- workqueue_advance, workqueue_commit, workqueue_move (a fused stage that
-- pauses or fails) and settings_apply's advance; each checks the
-- arguments first (workqueue_hop_check) and writes the one row this
-- returns: (SELECT o_stage, o_status, o_state FROM workqueue_hop(...)).
--
-- A hop is one move from a stage to the next, so a call counts
-- 1 + cardinality(p_via) of them: a chain of k fused stages (p_stage,
-- p_via..., then p_next) is k hops. state.hops counts the hops of the
-- message's life (a JSON number, rounded and kept within 0 to 10^9;
-- anything else reads as 0; a state patch cannot set it;
-- pepsi.workqueue_resume clears it). While it stays at most p_max_hops
-- (MAX_HOPS) the row goes to p_next with status p_status (pending for an
-- advance, running for a fused move), p_patch merged and state.strikes
-- cleared (strikes count per stage). A message may make p_max_hops hops;
-- the next one fails it where that hop starts (p_stage, or a stage of
-- p_via for a fused chain: the same stage as without fusion): status
-- failed, failure_class 'loop', state.hops p_max_hops + 1, and last_error
-- naming the limit and the last stages of its path, e.g. "loop: 51
-- hops, more than MAX_HOPS (50); the last stages: a -> b -> a -> b -> a
-- -> b -> a -> b". The path (state.hop_path) is kept only within 8 hops
-- of the limit (workqueue_hop_slow), so an ordinary message carries
-- nothing but the count.
--
-- language sql without SET so that the planner inlines it into the
-- caller's UPDATE, and "offset 0" so that the count is read once per
-- row. Measured (CPU time of a backend, 4,000 single advances, min of 8
-- rounds): 39 us an advance before issue 12; a plpgsql helper with a
-- pinned search_path added 25-30 us, this one about 6 (a dedicated
-- integer column instead of state.hops would save about 2.5 more, not
-- worth a second place for per-message data). Only security-definer
-- functions of pepsi, which pin search_path, call it.
    select case when r.ok then p_next else r.state->>'failed_stage' end,
           case when r.ok then p_status else 'failed'::pepsi.workqueue_status end,
           r.state
      from (select h.hops + h.k <= p_max_hops as ok,
                   case when h.hops + h.k <= p_max_hops - 8
                        then (p_state || coalesce(p_patch, '{}') || jsonb_build_object('hops', h.hops + h.k))
                             - '{strikes,hop_path}'::text[]
                        else pepsi.workqueue_hop_slow(p_state, p_patch, p_stage, p_via, p_next, h.hops, p_max_hops)
                   end as state
              from (select case when jsonb_typeof(p_state->'hops') = 'number'
                                then greatest(least((p_state->'hops')::numeric, 1000000000), 0)::int
                                else 0 end as hops,
                           1 + coalesce(cardinality(p_via), 0) as k
                     offset 0) h
             offset 0) r
$$;

create function pepsi.workqueue_advance(p_id bigint, p_stage text, p_next_stage text,
                                        p_state jsonb default null, p_via text[] default null,
                                        p_max_hops int default 1000)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Moves a running message from p_stage to p_next_stage, pending, in one
-- UPDATE and without NOTIFY (D-34, D-74): the worker's status line brings
-- the dispatcher to its next claim anyway. p_state keys are merged into
-- state. Strikes count per stage, so state.strikes is cleared.
-- p_via names the stages a worker fused between p_stage and p_next_stage
-- (D-126): the call is then 1 + cardinality(p_via) hops. Past p_max_hops
-- (the worker passes [pepsi] MAX_HOPS) the message fails as a 'loop'
-- instead (workqueue_hop, issue 12).
-- Returns 'ok' (advanced) or 'loop' (failed as a loop: the worker answers
-- non-zero).
-- Raises PX001 (bad next stage, or a stage in p_via), PX003 (p_state not
-- an object or over input_limit('state'); p_max_hops out of range),
-- PX004/PX005 (see workqueue_refuse).
-- Tables: workqueue (update).
declare
    v_status pepsi.workqueue_status;
begin
    perform pepsi.stage_check(p_next_stage), pepsi.state_patch_check(p_state),
            pepsi.workqueue_hop_check(p_via, p_max_hops);
    update pepsi.workqueue w
       set (stage, status, state) = (select h.o_stage, h.o_status, h.o_state
                                       from pepsi.workqueue_hop(w.state, p_state, w.stage, p_via, p_next_stage,
                                                                'pending', p_max_hops) h)
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage
    returning w.status into v_status;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    return case v_status when 'failed' then 'loop' else 'ok' end;
end
$$;

create function pepsi.workqueue_finish(p_id bigint, p_stage text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The message is done: its row is deleted (D-75), and with its last
-- sibling its body (trigger workqueue_body_release).
-- Raises PX004/PX005 (see workqueue_refuse). Tables: workqueue (delete).
begin
    delete from pepsi.workqueue w
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
end
$$;

create function pepsi.workqueue_pause(p_id bigint, p_stage text, p_until timestamptz,
                                      p_reason text default null, p_state jsonb default null)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Parks a running message at its stage until p_until (D-92); the
-- dispatcher's paused sweep makes it pending again then. p_reason, when
-- given, is kept as state.pause_reason (cut to input_limit('reason')
-- bytes); p_state keys are merged.
-- Raises PX003 (no time, p_state not an object or over input_limit('state')),
-- PX004/PX005.
-- Tables: workqueue (update).
begin
    if p_until is null then
        raise exception 'a pause needs a time to resume' using errcode = 'PX003';
    end if;
    perform pepsi.state_patch_check(p_state);
    update pepsi.workqueue w
       set status = 'paused', timeout = p_until,
           state = w.state || coalesce(p_state, '{}')
                   || case when p_reason is null then '{}'::jsonb
                           else jsonb_build_object('pause_reason', pepsi.reason_clip(p_reason)) end
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
end
$$;

create function pepsi.failure_class_check(p_class text)
returns text
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns p_class when it is a known failure class, else raises PX007:
-- permanent (D-110), retries-exhausted (D-111), crashed (D-87),
-- timed-out (D-88), loop (more than MAX_HOPS hops, issue 12).
begin
    if p_class is null or p_class not in ('permanent', 'retries-exhausted', 'crashed', 'timed-out', 'loop') then
        raise exception 'unknown failure class "%"', pepsi.excerpt(p_class)
            using errcode = 'PX007',
                  hint = 'Use permanent, retries-exhausted, crashed, timed-out or loop.';
    end if;
    return p_class;
end
$$;

create function pepsi.workqueue_fail(p_id bigint, p_stage text, p_reason text,
                                     p_class text default 'permanent', p_state jsonb default null)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Leaves a running message failed (terminal, D-75) with state.last_error,
-- state.failed_stage and state.failure_class (D-111); a reason is cut to
-- input_limit('reason') bytes. The worker then reports a non-zero status
-- (D-79).
-- Raises PX007 (unknown class), PX003 (p_state not an object or over
-- input_limit('state')), PX004/PX005.
-- Tables: workqueue (update).
begin
    perform pepsi.failure_class_check(p_class), pepsi.state_patch_check(p_state);
    update pepsi.workqueue w
       set status = 'failed', timeout = null,
           state = w.state || coalesce(p_state, '{}')
                   || jsonb_build_object('last_error', coalesce(pepsi.reason_clip(p_reason), 'failed'),
                                         'failed_stage', w.stage,
                                         'failure_class', p_class)
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
end
$$;

revoke all on function pepsi.workqueue_refuse(bigint, text) from public;
revoke all on function pepsi.state_patch_check(jsonb) from public;
revoke all on function pepsi.failure_class_check(text) from public;
revoke all on function pepsi.workqueue_hop_refuse(text[], int) from public;
revoke all on function pepsi.workqueue_hop_check(text[], int) from public;
revoke all on function pepsi.workqueue_hop_slow(jsonb, jsonb, text, text[], text, int, int) from public;
revoke all on function pepsi.workqueue_hop(jsonb, jsonb, text, text[], text, pepsi.workqueue_status, int) from public;
revoke all on function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int) from public;
revoke all on function pepsi.workqueue_finish(bigint, text) from public;
revoke all on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) from public;
revoke all on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) from public;
grant execute on function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int) to pepsi_worker;
grant execute on function pepsi.workqueue_finish(bigint, text) to pepsi_worker;
grant execute on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) to pepsi_worker;
grant execute on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) to pepsi_worker;

commit;
