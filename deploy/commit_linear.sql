-- Deploy pepsi:commit_linear to pg
-- requires: claim_fair_idle
--
-- The batched commit (workqueue_commit -> workqueue_transition) linear in
-- the batch (issue 19). Its UPDATE and DELETE reached the rows by primary
-- key (workqueue_id = any(ids)) and then matched each row to its op by a
-- nested loop over unnest(p_ops): every row compared with every op, 4,032
-- rows removed by the join filter for a batch of 64, 2.1 of the 2.9 ms of
-- such a commit (auto_explain, 100,000 rows in the queue). Nested loops
-- are now off for the state machine, so the match is a hash (or merge)
-- join; JIT off with them, since a plan that can only loop (the cross join
-- of one-row subqueries in the general statement) is then costed past
-- jit_above_cost and was compiled (0.7 s a call).
-- Also per row and per call: stage_check (PL/pgSQL with SET) runs only for
-- a name the inlined rule refuses, where it raises as before; and
-- pepsi.state_count loses its SET search_path, so that it is inlined into
-- the DELETE's history insert instead of called twice a finished message
-- (200,000 function-manager calls with their GUC save and restore in a
-- 100,000-message fused run).
-- Fused 3-stage pass pipeline, QUEUE_LIMIT 64 / PARALLELISM 2, 100,000
-- messages, alternated: 25.5k / 23.4k -> 37.2k / 43.7k hops/s; the
-- commit statement 4.08 -> 1.36 ms a call (54 / 52 rows). The function is
-- otherwise that of workqueue_results. CREATE OR REPLACE keeps the
-- comments and grants.

begin;

create or replace function pepsi.workqueue_transition(p_ops pepsi.transition[], p_max_hops int default 1000,
                                           p_now timestamptz default now())
returns table (workqueue_id bigint, outcome text, status pepsi.workqueue_status, code text)
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
-- one generic plan, made once per session: a custom plan of the UPDATE
-- below is made again at every call (measured: 5-6 ms a single advance)
set plan_cache_mode = force_generic_plan
-- each op is matched to its row by a hash (or merge) join: a nested loop
-- rescans the whole batch for every row, O(batch^2) (issue 19: 4,032
-- comparisons for 64 rows, 2.1 of a 64-row commit's 2.9 ms); with nested
-- loops off, plans that have no other way still take one, at a cost that
-- would start JIT compilation (0.7 s), hence jit off
set enable_nestloop = off
set jit = off
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
           -- stage_check (PL/pgSQL with SET: a few us a call) only for a
           -- name the inlined rule refuses, where it raises
           count(case when o."do" in ('advance', 'move') and not coalesce(pepsi.stage_name_valid(o.next), false)
                      then pepsi.stage_check(o.next) end) as nexts,
           count(case when o.at is not null and not pepsi.stage_name_valid(o.at)
                      then pepsi.stage_check(o.at) end) as ats,
           count(case when o."do" = 'host_error' and o.bounce is not null and not pepsi.stage_name_valid(o.bounce)
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
    -- join alone may hash the whole queue), then matched to their op by a
    -- hash join (nested loops are off: linear in the batch)
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

create or replace function pepsi.state_count(p_value jsonb)
returns int
language sql immutable parallel safe
as $$
-- A count kept in state: a JSON number or string of 1 to 9 digits, else
-- NULL (absent). SQL without SET options, so that it is inlined: its
-- callers are pepsi's functions that pin search_path (workqueue_transition,
-- workqueue_delete, workqueue_purge, message_history), which resolve its
-- operators in pg_catalog; a function with SET is called through the
-- function manager at every use, and the commit of a finish used it twice
-- a message (issue 19).
    select case when jsonb_typeof(p_value) in ('number', 'string') and (p_value #>> '{}') ~ '^[0-9]{1,9}$'
                then (p_value #>> '{}')::int end
$$;

commit;
