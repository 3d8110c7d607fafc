-- Deploy pepsi:workqueue_host_error to pg
-- requires: workqueue_results

begin;

create function pepsi.workqueue_host_error(
    p_id           bigint,
    p_stage        text,
    p_reason       text,
    p_max_lifetime interval default interval '120 hours',
    p_bounce_stage text default null,
    p_now          timestamptz default now())
returns pepsi.workqueue_status
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A stage hit a host error (D-103, D-104): something of the host's, not of
-- the message, failed. The running message is paused at the stage that
-- claimed it with state.last_error and state.temporary_failures.<stage>
-- counting this stage's retries; it comes back after 1, 2, 4 ... minutes,
-- at most one hour apart (D-105). Once the message is older than
-- p_max_lifetime (counted from arrival, or from state.generated_at for a
-- notice pepsi generated, D-107), it is redirected pending to
-- p_bounce_stage (D-108), or failed when there is none or the message is
-- a list copy (state.list_copy, D-109); either way with
-- state.failed_stage and state.failure_class 'retries-exhausted' (D-111).
-- The reason is cut to input_limit('reason') bytes. A state key of the
-- wrong type (a producer chooses the initial state) reads as absent.
-- Returns the new status. Raises PX001 (bad bounce stage), PX003 (bad
-- lifetime, a NULL p_now: never read as "the lifetime is over"),
-- PX004/PX005. Tables: workqueue (update).
declare
    v_row record;
    v_tries int;
    v_origin timestamptz;
    v_status pepsi.workqueue_status;
begin
    if p_max_lifetime is null or p_max_lifetime <= interval '0' then
        raise exception 'invalid max lifetime %', coalesce(p_max_lifetime::text, '<null>') using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if p_bounce_stage is not null then
        perform pepsi.stage_check(p_bounce_stage);
    end if;
    select w.state, w.arrived_at into v_row from pepsi.workqueue w
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage
       for update;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    v_tries := coalesce(pepsi.state_count(v_row.state->'temporary_failures'->p_stage), 0) + 1;
    v_origin := coalesce(pepsi.time_or_null(v_row.state->>'generated_at'), v_row.arrived_at);

    if p_now - v_origin <= p_max_lifetime then
        update pepsi.workqueue w
           set status = 'paused',
               timeout = p_now + least(interval '1 minute' * power(2, least(v_tries - 1, 10)),
                                       interval '1 hour'),
               state = w.state || jsonb_build_object(
                   'last_error', coalesce(pepsi.reason_clip(p_reason), 'host error'),
                   'temporary_failures', case when jsonb_typeof(w.state->'temporary_failures') = 'object'
                                              then w.state->'temporary_failures' else '{}' end
                                         || jsonb_build_object(p_stage, v_tries))
         where w.workqueue_id = p_id
        returning w.status into v_status;
        return v_status;
    end if;

    update pepsi.workqueue w
       set status = case when p_bounce_stage is not null
                          and not pepsi.state_flag(w.state->'list_copy')
                         then 'pending' else 'failed' end::pepsi.workqueue_status,
           stage = case when p_bounce_stage is not null
                         and not pepsi.state_flag(w.state->'list_copy')
                        then p_bounce_stage else w.stage end,
           timeout = null,
           state = (w.state - 'strikes') || jsonb_build_object(
               'last_error', coalesce(pepsi.reason_clip(p_reason), 'host error'),
               'failed_stage', p_stage,
               'failure_class', 'retries-exhausted')
     where w.workqueue_id = p_id
    returning w.status into v_status;
    return v_status;
end
$$;

revoke all on function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz) from public;
grant execute on function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz) to pepsi_worker;

commit;
