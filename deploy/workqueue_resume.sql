-- Deploy pepsi:workqueue_resume to pg
-- requires: workqueue_results

begin;

create function pepsi.workqueue_resume(
    p_ids           bigint[] default null,
    p_stage         text default null,
    p_failure_class text default null,
    p_tube          text default null,
    p_statuses      pepsi.workqueue_status[] default '{failed,paused,timeout}')
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: sends failed, paused or timed-out rows back to pending at
-- their stage, chosen by ids and/or by filter (stage, failure class,
-- tube, statuses; all given filters must match). At least one of ids,
-- stage, failure class or tube is required, so that a bare call cannot
-- resume the whole queue by accident. The strike count, failure class,
-- failed stage and hop count (state.hops, state.hop_path: a message failed
-- as a loop gets MAX_HOPS hops again, issue 12) are cleared (the message
-- starts afresh); last_error stays as history. Running rows are never touched. NOTIFY workqueue once when
-- anything moved (D-33). Returns how many rows moved.
-- Raises PX003 (no selector, or a status that cannot be resumed).
-- Tables: workqueue (update).
declare
    v_count int;
begin
    if p_ids is null and p_stage is null and p_failure_class is null and p_tube is null then
        raise exception 'resume needs ids or a filter (stage, failure class, tube)'
            using errcode = 'PX003';
    end if;
    if p_statuses is null or cardinality(p_statuses) = 0
       or 'pending' = any(p_statuses) or 'running' = any(p_statuses) then
        raise exception 'only failed, paused and timeout rows can be resumed' using errcode = 'PX003';
    end if;
    update pepsi.workqueue w
       set status = 'pending', timeout = null,
           state = w.state - 'strikes' - 'failure_class' - 'failed_stage' - 'hops' - 'hop_path'
     where w.status = any(p_statuses)
       and (p_ids is null or w.workqueue_id = any(p_ids))
       and (p_stage is null or w.stage = p_stage)
       and (p_failure_class is null or w.state->>'failure_class' = p_failure_class)
       and (p_tube is null or w.tube = p_tube);
    get diagnostics v_count = row_count;
    if v_count > 0 then
        notify workqueue;
    end if;
    return v_count;
end
$$;

-- For operators: the dispatcher never resumes, so pepsi_runner has no
-- grant (issue 11; README "Roles"); pepsi_operator does (issue 15).
revoke all on function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]) from public;
grant execute on function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]) to pepsi_operator;

commit;
