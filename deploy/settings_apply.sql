-- Deploy pepsi:settings_apply to pg
-- requires: settings
-- requires: workqueue_results

begin;

create function pepsi.settings_apply(p_id bigint, p_stage text, p_next text, p_address text,
                                     p_changes jsonb)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- What pepsi-stage-edit-settings commits for a settings control message,
-- in one call (D-76): the changes to p_address's per-address settings,
-- and the message advanced to p_next (finished when NULL).
-- p_changes: [{"stage": "deliver", "option": "COMMAND", "value": "cat"},
--             {"stage": "deliver", "option": "HEADERS", "value": null}]
-- (a NULL value deletes the override). The stage has checked every change
-- against the configuration before calling. Returns how many changed.
-- Raises PX001, PX002, PX003 (as settings_set), PX004/PX005.
-- Tables: settings (insert, update, delete), workqueue (update, delete).
declare
    v_change record;
    v_count int := 0;
begin
    if p_changes is null or jsonb_typeof(p_changes) <> 'array' then
        raise exception 'changes must be a JSON array' using errcode = 'PX003';
    end if;
    perform 1 from pepsi.workqueue w
      where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage
        for update;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    for v_change in select * from jsonb_to_recordset(p_changes) as c(stage text, option text, value text) loop
        if v_change.value is null then
            v_count := v_count + pepsi.settings_delete(p_address, v_change.stage, v_change.option);
        else
            perform pepsi.settings_set(p_address, v_change.stage, v_change.option, v_change.value);
            v_count := v_count + 1;
        end if;
    end loop;
    if p_next is null then
        perform pepsi.workqueue_finish(p_id, p_stage);
    else
        perform pepsi.workqueue_advance(p_id, p_stage, p_next);
    end if;
    return v_count;
end
$$;

revoke all on function pepsi.settings_apply(bigint, text, text, text, jsonb) from public;
grant execute on function pepsi.settings_apply(bigint, text, text, text, jsonb) to pepsi_worker;

commit;
