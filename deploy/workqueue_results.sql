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

create function pepsi.workqueue_advance(p_id bigint, p_stage text, p_next_stage text,
                                        p_state jsonb default null)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Moves a running message from p_stage to p_next_stage, pending, in one
-- UPDATE and without NOTIFY (D-34, D-74): the worker's status line brings
-- the dispatcher to its next claim anyway. p_state keys are merged into
-- state. Strikes count per stage, so state.strikes is cleared.
-- Raises PX001 (bad next stage), PX003 (p_state not an object or over
-- input_limit('state')), PX004/PX005 (see workqueue_refuse).
-- Tables: workqueue (update).
begin
    perform pepsi.stage_check(p_next_stage), pepsi.state_patch_check(p_state);
    update pepsi.workqueue w
       set stage = p_next_stage, status = 'pending',
           state = (w.state || coalesce(p_state, '{}')) - 'strikes'
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
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
-- timed-out (D-88).
begin
    if p_class is null or p_class not in ('permanent', 'retries-exhausted', 'crashed', 'timed-out') then
        raise exception 'unknown failure class "%"', pepsi.excerpt(p_class)
            using errcode = 'PX007',
                  hint = 'Use permanent, retries-exhausted, crashed or timed-out.';
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
revoke all on function pepsi.workqueue_advance(bigint, text, text, jsonb) from public;
revoke all on function pepsi.workqueue_finish(bigint, text) from public;
revoke all on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) from public;
revoke all on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) from public;
grant execute on function pepsi.workqueue_advance(bigint, text, text, jsonb) to pepsi_worker;
grant execute on function pepsi.workqueue_finish(bigint, text) to pepsi_worker;
grant execute on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) to pepsi_worker;
grant execute on function pepsi.workqueue_fail(bigint, text, text, text, jsonb) to pepsi_worker;

commit;
