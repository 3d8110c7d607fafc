-- Deploy pepsi:workqueue_move to pg
-- requires: workqueue_results

begin;

create function pepsi.workqueue_move(p_id bigint, p_from text, p_to text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A stage fused into a worker's pass paused or failed (D-115): the chain
-- up to it is committed first, by moving the running message from the
-- stage it was claimed at to that stage, still running, so that the error
-- is handled there (its MAX_LIFETIME, its BOUNCE_STAGE) and a retry
-- resumes there instead of repeating the stages before it. The caller's
-- next call records the pause or failure at p_to. Strikes count per stage
-- and are cleared, as an advance clears them.
-- Raises PX001 (p_to), PX004/PX005. Tables: workqueue (update).
begin
    perform pepsi.stage_check(p_to);
    update pepsi.workqueue w
       set stage = p_to, state = w.state - 'strikes'
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_from;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_from);
    end if;
end
$$;

revoke all on function pepsi.workqueue_move(bigint, text, text) from public;
grant execute on function pepsi.workqueue_move(bigint, text, text) to pepsi_worker;

commit;
