-- Deploy pepsi:workqueue_move to pg
-- requires: workqueue_results

begin;

create function pepsi.workqueue_move(p_id bigint, p_from text, p_to text, p_via text[] default null,
                                     p_max_hops int default 1000)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A stage fused into a worker's pass paused or failed (D-115): the chain
-- up to it is committed first, by moving the running message from the
-- stage it was claimed at to that stage, still running, so that the error
-- is handled there (its MAX_LIFETIME, its BOUNCE_STAGE) and a retry
-- resumes there instead of repeating the stages before it. The caller's
-- next call records the pause or failure at p_to. The move is a chain of
-- hops like an advance (p_via: the stages fused between p_from and p_to)
-- and goes through the same hop rule (workqueue_hop, issue 12): strikes
-- are cleared (they count per stage), and past p_max_hops the message
-- fails as a 'loop' at p_from instead of moving.
-- Returns 'ok' (moved, still running) or 'loop' (failed: the caller
-- records nothing more and answers non-zero).
-- Raises PX001 (p_to, or a stage in p_via), PX003 (p_max_hops out of
-- range), PX004/PX005. Tables: workqueue (update).
-- A thin wrapper over workqueue_transition ("do" move, issue 13); the
-- worker's fused pause or failure no longer calls it (it commits the move
-- and the pause/failure in one call: workqueue_commit's "at").
declare
    v_outcome text;
begin
    perform pepsi.stage_check(p_to), pepsi.workqueue_hop_check(p_via, p_max_hops);
    select t.outcome into v_outcome
      from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_from, 'move', p_next => p_to,
                                                                p_via => p_via)],
                                      p_max_hops) t;
    if v_outcome = 'refused' then
        perform pepsi.workqueue_refuse(p_id, p_from);
    end if;
    return v_outcome;
end
$$;

revoke all on function pepsi.workqueue_move(bigint, text, text, text[], int) from public;
grant execute on function pepsi.workqueue_move(bigint, text, text, text[], int) to pepsi_worker;

commit;
