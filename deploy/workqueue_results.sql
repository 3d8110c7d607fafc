-- Deploy pepsi:workqueue_results to pg
-- requires: workqueue
-- requires: workqueue_history
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
-- stages p_via that it fused on the way. Every advance goes through here,
-- from the one state machine (workqueue_transition, issue 13: advance,
-- move, and the move of a fused pause or failure), which checks the
-- arguments first (workqueue_hop_check) and writes the one row this
-- returns.
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

create type pepsi.transition as (
    id        bigint,
    stage     text,
    "do"      text,
    at        text,
    next      text,
    via       text[],
    state     jsonb,
    until     timestamptz,
    reason    text,
    class     text,
    kind      text,
    lifetime  interval,
    bounce    text,
    claim_id  bigint
);

comment on type pepsi.transition is
    'One transition of a running row for pepsi.workqueue_transition (issue 13): the row (id, stage[, claim_id]), what to do and its arguments.';

create function pepsi.transition_paused_state(p_state jsonb, p_patch jsonb, p_reason text)
returns jsonb
language sql immutable
as $$
-- The state of a message paused by a stage (D-92): the patch merged and
-- the reason, when given, kept as pause_reason. The one statement of the
-- rule for workqueue_transition's two paths; language sql without SET,
-- so it is inlined.
    select p_state || coalesce(p_patch, '{}')
           || case when p_reason is null then '{}'::jsonb
                   else jsonb_build_object('pause_reason', pepsi.reason_clip(p_reason)) end
$$;

create function pepsi.transition_failed_state(p_state jsonb, p_patch jsonb, p_reason text, p_stage text,
                                              p_class text)
returns jsonb
language sql immutable
as $$
-- The state of a message a stage failed (D-111): the patch merged,
-- last_error, failed_stage and failure_class (default permanent). Shared
-- by workqueue_transition's two paths; inlined like the one above.
    select p_state || coalesce(p_patch, '{}')
           || jsonb_build_object('last_error', coalesce(pepsi.reason_clip(p_reason), 'failed'),
                                 'failed_stage', p_stage,
                                 'failure_class', coalesce(p_class, 'permanent'))
$$;

create function pepsi.transition_of(p_id bigint, p_stage text, p_do text, p_at text default null,
                                    p_next text default null, p_via text[] default null,
                                    p_state jsonb default null, p_until timestamptz default null,
                                    p_reason text default null, p_class text default null,
                                    p_kind text default null, p_lifetime interval default null,
                                    p_bounce text default null, p_claim_id bigint default null)
returns pepsi.transition
language sql immutable
as $$
-- Builds one pepsi.transition by name (the wrappers' way to call
-- workqueue_transition); language sql without SET, so it is inlined.
    select row(p_id, p_stage, p_do, p_at, p_next, p_via, p_state, p_until, p_reason, p_class, p_kind,
               p_lifetime, p_bounce, p_claim_id)::pepsi.transition
$$;

create function pepsi.workqueue_transition(p_ops pepsi.transition[], p_max_hops int default 1000,
                                           p_now timestamptz default now())
returns table (workqueue_id bigint, outcome text, status pepsi.workqueue_status, code text)
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
-- one generic plan, made once per session: a custom plan of the UPDATE
-- below is made again at every call (measured: 5-6 ms a single advance)
set plan_cache_mode = force_generic_plan
as $$
-- The state machine of a running message (issue 13): the ONE place where
-- a running row changes status. Every public function that changes a
-- running row is a thin wrapper over it (workqueue_advance, _finish,
-- _pause, _fail, _host_error, _move, _commit, _requeue, _defer,
-- _strike, _unclaim, _reset_running, and settings_apply through
-- workqueue_advance/_finish); `make lint` fails on any other
-- "update pepsi.workqueue ... set status" of a running row.
--
-- p_ops: one pepsi.transition per message (build it with
-- pepsi.transition_of); its row must be running at stage (and, when
-- claim_id is given, carry that claim id), else it is refused. One
-- UPDATE for every row it rewrites and one DELETE for the finished
-- ones, in one statement; each row is reached by a primary-key probe
-- (unnest of the ops), never by a join against the whole batch.
--   "do"         what becomes of the row:
--   advance      to next, pending, through the hop rule (workqueue_hop:
--                via = the fused stages, 1 + cardinality(via) hops,
--                state patch merged, strikes cleared; past p_max_hops
--                failed as a 'loop' instead)
--   move         to next, still running, through the same hop rule (the
--                chain of a fused stage that pauses or fails, D-115)
--   finish       the row is deleted (D-75); the same statement writes
--                its pepsi.workqueue_history row (outcome 'finished',
--                issue 16) unless the history is off
--   pause        paused until "until", state.pause_reason (D-92)
--   fail         failed with last_error = reason, failed_stage and
--                failure_class = class (default permanent; D-111)
--   host_error   paused with backoff 1, 2, 4 ... min (at most 1 h) and
--                state.temporary_failures.<stage> counted; once older than
--                lifetime (from arrival or state.generated_at, D-107)
--                pending at bounce (D-108) or failed (none, or a list
--                copy: D-109), failure_class retries-exhausted
--   strike       kind crash|hang: paused 1, then 2 min; the third strike
--                failed/crashed or timeout/timed-out (D-84..D-88)
--   requeue      back to pending, untouched (D-89, D-90, D-18); with a
--                reason, kept as last_error (reconcile_stuck)
--   defer        paused until "until" with last_error = reason (D-100)
-- "at" (pause, fail, host_error only): the fused stage where that
-- happened. The row is first moved there through the hop rule (via: the
-- stages fused between stage and at), then paused or failed there, in
-- the same statement: a worker that dies in between cannot leave the row
-- running at a stage its dispatcher does not know. If the move passes
-- p_max_hops the message fails as a 'loop' and nothing more is done.
-- Every result but pause/defer/strike/host-error pauses clears timeout
-- (it means "when a paused row is due", nothing else). Reasons are cut
-- to input_limit('reason') bytes.
-- Returns one row per op, in the order of p_ops: outcome 'ok', 'loop' (a hop of this op failed
-- the message as a loop) or 'refused' with code PX004 (no such id) or
-- PX005 (not running at that stage / with that claim id); status, the
-- row's new status (NULL when finished or refused).
-- Raises, before any row is touched: PX001 (bad next, at, bounce or via
-- stage), PX003 (unknown "do", pause/defer without until, host_error
-- without a positive lifetime, strike kind not crash/hang, "at" with
-- another "do", state not an object or over input_limit('state'), an id
-- twice, p_max_hops out of range, p_now NULL), PX007 (unknown failure
-- class). Not granted to anyone: only the wrappers call it.
-- Tables: workqueue (update, delete), workqueue_history (insert).
#variable_conflict use_column
declare
    v record;
    v_rewrites bigint[];
    v_finishes bigint[];
    v_op pepsi.transition;
    v_status pepsi.workqueue_status;
    v_done boolean;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if cardinality(p_ops) = 1 then
        v_op := p_ops[1];   -- once: each p_ops[1] copies the element out of the array
    end if;
    if v_op."do" in ('advance', 'finish', 'pause', 'fail') and v_op.at is null
       and (v_op."do" <> 'pause' or v_op.until is not null)
       and p_max_hops between 1 and 100000000
       and (v_op.state is null or (jsonb_typeof(v_op.state) = 'object'
                                   and octet_length(v_op.state::text) <= pepsi.input_limit('state'))) then
        -- The single advance, finish, pause or fail of an unfused worker,
        -- the commonest calls: the same rules as the batch below (the hop
        -- rule, the state helpers above), written for one row (a
        -- primary-key UPDATE or DELETE, no unnest, no join), because the
        -- general statement costs four to five times the CPU of a one-row
        -- call (backend CPU measured: 66 against 350 us a single pause).
        -- Only a well-formed op takes it; the general path below raises
        -- for any other.
        if v_op."do" = 'finish' then
            -- the row leaves the queue and its history row is written by
            -- the same statement (issue 16: pepsi.workqueue_history)
            with d as (
                delete from pepsi.workqueue w
                 where w.workqueue_id = v_op.id and w.status = 'running' and w.stage = v_op.stage
                   and (v_op.claim_id is null or w.claim_id = v_op.claim_id)
                returning w.*
            ), h as (
                insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                                     arrived_at, ended_at, hops, strikes, failure_class, last_error)
                select d.workqueue_id, d.tube, d.stage, 'finished', d.sender_key, d.origin_user, d.arrived_at, p_now,
                       pepsi.state_count(d.state->'hops'), pepsi.state_count(d.state->'strikes'),
                       d.state->>'failure_class',
                       case when d.state ? 'last_error' then pepsi.reason_clip(d.state->>'last_error') end
                  from d
                 where pepsi.workqueue_history_on()
            )
            select count(*) > 0 into v_done from d;
        elsif v_op."do" in ('pause', 'fail') then
            if v_op."do" = 'fail' then
                perform pepsi.failure_class_check(coalesce(v_op.class, 'permanent'));
            end if;
            update pepsi.workqueue w
               set (status, timeout, state) = (
                   select case v_op."do" when 'pause' then 'paused' else 'failed' end::pepsi.workqueue_status,
                          case v_op."do" when 'pause' then v_op.until end,
                          case v_op."do" when 'pause' then pepsi.transition_paused_state(w.state, v_op.state, v_op.reason)
                               else pepsi.transition_failed_state(w.state, v_op.state, v_op.reason, w.stage, v_op.class)
                          end)
             where w.workqueue_id = v_op.id and w.status = 'running' and w.stage = v_op.stage
               and (v_op.claim_id is null or w.claim_id = v_op.claim_id)
            returning w.status into v_status;
            v_done := found;
        else
            perform pepsi.stage_check(v_op.next), pepsi.workqueue_hop_check(v_op.via, p_max_hops);
            update pepsi.workqueue w
               set (stage, status, timeout, state) = (
                   select h.o_stage, h.o_status, null::timestamptz, h.o_state
                     from pepsi.workqueue_hop(w.state, v_op.state, w.stage, v_op.via, v_op.next, 'pending',
                                              p_max_hops) h)
             where w.workqueue_id = v_op.id and w.status = 'running' and w.stage = v_op.stage
               and (v_op.claim_id is null or w.claim_id = v_op.claim_id)
            returning w.status into v_status;
            v_done := found;
        end if;
        -- the result row through the OUT columns: no query of its own
        workqueue_id := v_op.id;
        if v_done then
            outcome := case when v_op."do" = 'advance' and v_status = 'failed' then 'loop' else 'ok' end;
            status := v_status;
        else
            outcome := 'refused';
            code := case when exists (select 1 from pepsi.workqueue q where q.workqueue_id = v_op.id)
                         then 'PX005' else 'PX004' end;
        end if;
        return next;
        return;
    end if;
    select count(*) as n, count(o.id) as ids, count(distinct o.id) as distinct_ids,
           count(*) filter (where o."do" is null
                               or o."do" not in ('advance', 'move', 'finish', 'pause', 'fail', 'host_error',
                                                 'strike', 'requeue', 'defer')
                               or (o."do" in ('pause', 'defer') and o.until is null)
                               or (o."do" = 'host_error' and (o.lifetime is null or o.lifetime <= interval '0'))
                               or (o."do" = 'strike' and (o.kind is null or o.kind not in ('crash', 'hang')))
                               or (o.at is not null and o."do" not in ('pause', 'fail', 'host_error'))
                               or (o.state is not null and jsonb_typeof(o.state) <> 'object')) as bad,
           max(octet_length(o.state::text)) as max_state,
           -- the checks raise PX001/PX003/PX007; CASE keeps each to its rows
           count(case when o."do" in ('advance', 'move') then pepsi.stage_check(o.next) end) as nexts,
           count(case when o.at is not null then pepsi.stage_check(o.at) end) as ats,
           count(case when o."do" = 'host_error' and o.bounce is not null
                      then pepsi.stage_check(o.bounce) end) as bounces,
           count(case when o."do" = 'fail' then pepsi.failure_class_check(coalesce(o.class, 'permanent')) end) as fails,
           count(case when o.via is not null then pepsi.workqueue_hop_check(o.via, p_max_hops) end) as fused,
           count(*) filter (where o."do" not in ('advance', 'finish') or o.claim_id is not null) as others,
           coalesce(array_agg(o.id) filter (where o."do" <> 'finish'), '{}') as rewrites,
           coalesce(array_agg(o.id) filter (where o."do" = 'finish'), '{}') as finishes
      into v
      from unnest(p_ops) o;
    if v.max_state is not null and v.max_state > pepsi.input_limit('state') then
        perform pepsi.size_error(null, 'state', v.max_state, 'a state patch');
    end if;
    if v.bad > 0 then
        raise exception 'malformed result in a batch of %', v.n
            using errcode = 'PX003',
                  detail = 'Each result needs "do" one of advance, move, finish, pause, fail, host_error, strike, requeue, defer; a pause or deferral an "until"; a host error a lifetime; a strike a kind; "at" only with pause, fail, host_error; "state" an object.';
    end if;
    if v.ids <> v.distinct_ids then
        raise exception 'a message appears twice in one batch' using errcode = 'PX003';
    end if;
    if v.n = 0 then
        return;
    end if;
    perform pepsi.workqueue_hop_check(null, p_max_hops);
    -- the rows are reached through "workqueue_id = any(ids)": a primary-key
    -- probe per op whatever the planner guesses of the batch's size (a
    -- join alone may hash the whole queue), then matched to their op
    v_rewrites := v.rewrites;
    v_finishes := v.finishes;

    if v.others = 0 then
        -- The hot path, a worker's advances and finishes: the same rules
        -- (the hop rule, timeout cleared) in a statement of a third of
        -- the general one's size, which costs a third less per call
        -- (measured, a single advance: 270 against 380 us of CPU on a
        -- loaded machine). Its DELETE and result are the general ones.
        return query
        with upd as (
            update pepsi.workqueue w
               set (stage, status, timeout, state) = (
                   select h.o_stage, h.o_status, null::timestamptz, h.o_state
                     from pepsi.workqueue_hop(w.state, o.state, w.stage, o.via, o.next, 'pending', p_max_hops) h)
              from unnest(p_ops) o
             where w.workqueue_id = any(v_rewrites) and w.workqueue_id = o.id
               and w.status = 'running' and w.stage = o.stage
            returning w.workqueue_id, w.status, w.status = 'failed' as looped
        ), del as (
            delete from pepsi.workqueue w
             using unnest(p_ops) o
             where w.workqueue_id = any(v_finishes) and w.workqueue_id = o.id
               and w.status = 'running' and w.stage = o.stage and o."do" = 'finish'
               and (o.claim_id is null or w.claim_id = o.claim_id)
            returning w.*
        ), hist as (
            -- issue 16: the history row, in the statement that deletes
            insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                                 arrived_at, ended_at, hops, strikes, failure_class, last_error)
            select d.workqueue_id, d.tube, d.stage, 'finished', d.sender_key, d.origin_user, d.arrived_at, p_now,
                   pepsi.state_count(d.state->'hops'), pepsi.state_count(d.state->'strikes'),
                   d.state->>'failure_class',
                   case when d.state ? 'last_error' then pepsi.reason_clip(d.state->>'last_error') end
              from del d
             where pepsi.workqueue_history_on()
        ), done as (
            select u.workqueue_id, u.status, u.looped from upd u
            union all
            select d.workqueue_id, null, false from del d
        )
        select o.id,
               case when d.workqueue_id is null then 'refused' when d.looped then 'loop' else 'ok' end,
               d.status,
               case when d.workqueue_id is not null then null
                    when exists (select 1 from pepsi.workqueue q where q.workqueue_id = o.id) then 'PX005'
                    else 'PX004' end
          from unnest(p_ops) with ordinality o
          -- FULL JOIN (every done row has its op): never a nested loop over the batch
          full join done d on d.workqueue_id = o.id
         order by o.ordinality;
        return;
    end if;

    return query
    with upd as (
        update pepsi.workqueue w
           set (stage, status, timeout, state) = (
               select case when b.done then b.stage
                           when o."do" = 'host_error' and not b.alive and b.bounced then o.bounce
                           else b.stage end,
                      case when b.done then b.status::text
                           when o."do" in ('pause', 'defer') then 'paused'
                           when o."do" = 'fail' then 'failed'
                           when o."do" = 'requeue' then 'pending'
                           when o."do" = 'strike' then case when b.strikes < 3 then 'paused'
                                                            when o.kind = 'crash' then 'failed'
                                                            else 'timeout' end
                           when b.alive then 'paused'
                           when b.bounced then 'pending'
                           else 'failed' end::pepsi.workqueue_status,
                      case when b.done then null
                           when o."do" in ('pause', 'defer') then o.until
                           when o."do" = 'strike' then case when b.strikes < 3
                                                            then p_now + make_interval(mins => b.strikes) end
                           when o."do" = 'host_error' and b.alive
                           then p_now + least(interval '1 minute' * power(2, least(b.tries - 1, 10)),
                                              interval '1 hour') end,
                      case when b.done then b.state
                           when o."do" = 'pause' then pepsi.transition_paused_state(b.state, o.state, o.reason)
                           when o."do" = 'fail'
                           then pepsi.transition_failed_state(b.state, o.state, o.reason, b.stage, o.class)
                           when o."do" = 'defer' then b.state
                               || jsonb_build_object('last_error', coalesce(pepsi.reason_clip(o.reason), 'deferred'))
                           when o."do" = 'requeue' then b.state
                               || case when o.reason is null then '{}'::jsonb
                                       else jsonb_build_object('last_error', pepsi.reason_clip(o.reason)) end
                           when o."do" = 'strike' then b.state
                               || jsonb_build_object('strikes', b.strikes,
                                                     'last_error', coalesce(pepsi.reason_clip(o.reason), o.kind))
                               || case when b.strikes < 3 then '{}'::jsonb
                                       else jsonb_build_object('failed_stage', b.stage,
                                                               'failure_class', case o.kind when 'crash' then 'crashed'
                                                                                            else 'timed-out' end) end
                           when b.alive then b.state || jsonb_build_object(
                               'last_error', coalesce(pepsi.reason_clip(o.reason), 'host error'),
                               'temporary_failures', case when jsonb_typeof(b.state->'temporary_failures') = 'object'
                                                          then b.state->'temporary_failures' else '{}' end
                                                     || jsonb_build_object(b.stage, b.tries))
                           else (b.state - 'strikes') || jsonb_build_object(
                               'last_error', coalesce(pepsi.reason_clip(o.reason), 'host error'),
                               'failed_stage', b.stage,
                               'failure_class', 'retries-exhausted')
                      end
                 from (select m.*,
                              case when o."do" = 'strike'
                                   then coalesce(pepsi.state_count(m.state->'strikes'), 0) + 1 end as strikes,
                              case when o."do" = 'host_error'
                                   then coalesce(pepsi.state_count(m.state->'temporary_failures'->m.stage), 0) + 1
                              end as tries,
                              o."do" = 'host_error'
                                  and p_now - coalesce(pepsi.time_or_null(m.state->>'generated_at'), w.arrived_at)
                                      <= o.lifetime as alive,
                              o.bounce is not null and not pepsi.state_flag(m.state->'list_copy') as bounced
                         from (select case when g.hop then h.o_stage else w.stage end as stage,
                                      case when g.hop then h.o_state else w.state end as state,
                                      h.o_status as status,
                                      g.hop and (o."do" in ('advance', 'move') or h.o_status = 'failed') as done
                                 from (select o."do" in ('advance', 'move') or o.at is not null as hop) g,
                                      pepsi.workqueue_hop(w.state, case when o.at is null then o.state end, w.stage,
                                                          o.via, coalesce(o.at, o.next),
                                                          case o."do" when 'advance' then 'pending'
                                                                      else 'running' end::pepsi.workqueue_status,
                                                          p_max_hops) h) m) b)
          from unnest(p_ops) o
         where w.workqueue_id = any(v_rewrites) and w.workqueue_id = o.id
           and w.status = 'running' and w.stage = o.stage and o."do" <> 'finish'
           and (o.claim_id is null or w.claim_id = o.claim_id)
        returning w.workqueue_id, w.status,
                  case when (o."do" in ('advance', 'move') or o.at is not null) and w.status = 'failed'
                            and jsonb_typeof(w.state->'hops') = 'number'
                       then (w.state->'hops')::numeric > p_max_hops else false end as looped
    ), del as (
        delete from pepsi.workqueue w
         using unnest(p_ops) o
         where w.workqueue_id = any(v_finishes) and w.workqueue_id = o.id
           and w.status = 'running' and w.stage = o.stage and o."do" = 'finish'
           and (o.claim_id is null or w.claim_id = o.claim_id)
        returning w.*
    ), hist as (
        -- issue 16: the history row, in the statement that deletes
        insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                             arrived_at, ended_at, hops, strikes, failure_class, last_error)
        select d.workqueue_id, d.tube, d.stage, 'finished', d.sender_key, d.origin_user, d.arrived_at, p_now,
               pepsi.state_count(d.state->'hops'), pepsi.state_count(d.state->'strikes'),
               d.state->>'failure_class',
               case when d.state ? 'last_error' then pepsi.reason_clip(d.state->>'last_error') end
          from del d
         where pepsi.workqueue_history_on()
    ), done as (
        select u.workqueue_id, u.status, u.looped from upd u
        union all
        select d.workqueue_id, null, false from del d
    )
    select o.id,
           case when d.workqueue_id is null then 'refused' when d.looped then 'loop' else 'ok' end,
           d.status,
           case when d.workqueue_id is not null then null
                when exists (select 1 from pepsi.workqueue q where q.workqueue_id = o.id) then 'PX005'
                else 'PX004' end
      from unnest(p_ops) with ordinality o
      -- FULL JOIN (every done row has its op): never a nested loop over the batch
      full join done d on d.workqueue_id = o.id
     order by o.ordinality;
end
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
-- A thin wrapper over workqueue_transition ("do" advance, issue 13).
declare
    v_outcome text;
begin
    perform pepsi.stage_check(p_next_stage), pepsi.state_patch_check(p_state),
            pepsi.workqueue_hop_check(p_via, p_max_hops);
    select t.outcome into v_outcome
      from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'advance', p_next => p_next_stage,
                                                                p_via => p_via, p_state => p_state)],
                                      p_max_hops) t;
    if v_outcome = 'refused' then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    return v_outcome;
end
$$;

create function pepsi.workqueue_finish(p_id bigint, p_stage text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The message is done: its row is deleted (D-75), and with its last
-- sibling its body (trigger workqueue_body_release); its row of
-- pepsi.workqueue_history is written by the same statement (issue 16).
-- Raises PX004/PX005 (see workqueue_refuse). Tables: workqueue (delete).
-- A thin wrapper over workqueue_transition ("do" finish, issue 13).
begin
    if (select t.outcome from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'finish')]) t)
       = 'refused' then
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
-- A thin wrapper over workqueue_transition ("do" pause, issue 13).
-- Tables: workqueue (update).
begin
    if p_until is null then
        raise exception 'a pause needs a time to resume' using errcode = 'PX003';
    end if;
    perform pepsi.state_patch_check(p_state);
    if (select t.outcome
          from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'pause', p_until => p_until,
                                                                    p_reason => p_reason, p_state => p_state)]) t)
       = 'refused' then
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
-- A thin wrapper over workqueue_transition ("do" fail, issue 13).
-- Tables: workqueue (update).
begin
    perform pepsi.failure_class_check(p_class), pepsi.state_patch_check(p_state);
    if (select t.outcome
          from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'fail', p_reason => p_reason,
                                                                    p_class => p_class, p_state => p_state)]) t)
       = 'refused' then
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
revoke all on function pepsi.transition_paused_state(jsonb, jsonb, text),
                       pepsi.transition_failed_state(jsonb, jsonb, text, text, text) from public;
revoke all on function pepsi.transition_of(bigint, text, text, text, text, text[], jsonb, timestamptz, text, text,
                                           text, interval, text, bigint) from public;
revoke all on function pepsi.workqueue_transition(pepsi.transition[], int, timestamptz) from public;
revoke all on function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int) from public;
revoke all on function pepsi.workqueue_finish(bigint, text) from public;
revoke all on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) from public;
revoke all on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) from public;
grant execute on function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int) to pepsi_worker;
grant execute on function pepsi.workqueue_finish(bigint, text) to pepsi_worker;
grant execute on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) to pepsi_worker;
grant execute on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) to pepsi_worker;

commit;
