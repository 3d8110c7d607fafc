-- Deploy pepsi:workqueue_split to pg
-- requires: workqueue_results
-- requires: workqueue_inject

begin;

create function pepsi.workqueue_split(p_id bigint, p_stage text, p_groups jsonb)
returns bigint[]
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Splits a running message whose recipients resolve to different
-- per-address overrides for the stage about to run (D-124), in one call:
-- p_groups is a JSON array of recipient arrays that together hold each of
-- the message's recipients exactly once. The first group stays on the
-- message (still running, for the caller to go on with); every other group
-- becomes a new pending message at the same stage with the same envelope,
-- state, webhook event (webhook_event_id), arrival and body (shared, not
-- copied: the body goes with its last message). No NOTIFY (D-34): the
-- caller's status line brings the dispatcher to claim them. Returns the new ids, in group order.
-- Raises PX003 (groups malformed, fewer than two, or not the recipients),
-- PX004/PX005. Tables: workqueue (update; insert through workqueue_create).
declare
    v_row pepsi.workqueue%rowtype;
    v_groups text[][];
    v_items pepsi.workqueue_item[];
    v_bodies bigint[];
begin
    select * into v_row from pepsi.workqueue w
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage
       for update;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    if p_groups is null or jsonb_typeof(p_groups) <> 'array' or jsonb_array_length(p_groups) < 2
       or exists (select 1 from jsonb_array_elements(p_groups) g
                   where jsonb_typeof(g) <> 'array' or jsonb_array_length(g) = 0) then
        raise exception 'a split needs at least two non-empty groups of recipients' using errcode = 'PX003';
    end if;
    -- The groups must hold exactly the message's recipients, each once.
    if (select array_agg(r order by r) from jsonb_array_elements(p_groups) g, jsonb_array_elements_text(g) r)
       is distinct from (select array_agg(r order by r) from unnest(v_row.recipients) r) then
        raise exception 'the groups are not the recipients of message %', p_id
            using errcode = 'PX003', detail = 'Each recipient must be in exactly one group.';
    end if;

    update pepsi.workqueue w
       set recipients = array(select jsonb_array_elements_text(p_groups->0))
     where w.workqueue_id = p_id;

    -- The other groups: copies sharing the body (workqueue_create, issue 13).
    select array_agg(i.item order by i.n), array_agg(v_row.body_id order by i.n)
      into v_items, v_bodies
      from (select e.n, row(v_row.stage, v_row.tube, null, null, v_row.envelope_sender,
                            array(select jsonb_array_elements_text(e.g)), v_row.origin_user, v_row.origin_addr,
                            v_row.state - 'strikes', v_row.subject, v_row.header_from,
                            v_row.arrived_at, v_row.webhook_event_id)::pepsi.workqueue_item as item
              from jsonb_array_elements(p_groups) with ordinality as e(g, n)
             where e.n > 1) i;
    return array(select c from pepsi.workqueue_create(v_items, v_bodies) c);
end
$$;

revoke all on function pepsi.workqueue_split(bigint, text, jsonb) from public;
grant execute on function pepsi.workqueue_split(bigint, text, jsonb) to pepsi_worker;

commit;
