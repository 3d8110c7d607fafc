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
-- A thin wrapper over workqueue_transition ("do" host_error, issue 13).
declare
    v record;
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
    select t.outcome, t.status into v
      from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'host_error', p_reason => p_reason,
                                                                p_lifetime => p_max_lifetime,
                                                                p_bounce => p_bounce_stage)],
                                      p_now => p_now) t;
    if v.outcome = 'refused' then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    return v.status;
end
$$;

revoke all on function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz) from public;
grant execute on function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz) to pepsi_worker;

commit;
