-- Deploy pepsi:settings_apply to pg
-- requires: settings
-- requires: user_address
-- requires: workqueue_results

begin;

create function pepsi.settings_apply(p_id bigint, p_stage text, p_next text, p_address text,
                                     p_changes jsonb, p_via text[] default null,
                                     p_max_hops int default 1000,
                                     out changed int, out outcome text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- What pepsi-stage-edit-settings commits for a settings control message,
-- in one call (D-76): the changes to p_address's per-address settings,
-- and the message advanced to p_next (finished when NULL).
-- p_changes: [{"stage": "deliver", "option": "HEADERS", "value": "yes"},
--             {"stage": "deliver", "option": "HEADERS", "value": null}]
-- (a NULL value deletes the override). Returns how many changed, and the
-- outcome of the advance: 'ok', or 'loop' when it went past p_max_hops
-- and failed the message as a loop instead (workqueue_advance, with
-- p_via the stages fused before p_stage's decision; issue 12): the
-- changes are kept then, and the worker answers non-zero.
--
-- Who may change what is decided here, from the row itself, not from
-- what the worker says (issue 11): the message's authenticated origin
-- user must own p_address (pepsi.user_address_owns), and no change may
-- touch an operator-only option (pepsi.settings_option_operator_only; the
-- stage's USER_OPTIONS allow-list is checked by the worker before). A
-- refusal changes nothing and leaves the message running, for the worker
-- to fail it permanently; its message names neither the address's owner
-- nor any setting's value. updated_by records 'user:<origin_user>'.
-- Raises PX030 (no authenticated origin user, or it does not own
-- p_address), PX031 (an operator-only option), PX001/PX002/PX003 (as
-- settings_set), PX004/PX005 (not running at p_stage).
-- Tables: settings (insert, update, delete), workqueue (update, delete).
declare
    v_user text;
    v_change record;
begin
    changed := 0;
    outcome := 'ok';
    if p_changes is null or jsonb_typeof(p_changes) <> 'array'
       or exists (select 1 from jsonb_array_elements(p_changes) c
                   where jsonb_typeof(c) <> 'object'
                      or jsonb_typeof(c->'stage') is distinct from 'string'
                      or jsonb_typeof(c->'option') is distinct from 'string'
                      or coalesce(jsonb_typeof(c->'value'), 'null') not in ('string', 'null')) then
        raise exception 'changes must be a JSON array of {"stage": text, "option": text, "value": text or null}'
            using errcode = 'PX003';
    end if;
    select w.origin_user into v_user from pepsi.workqueue w
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage
       for update;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    if coalesce(v_user, '') = '' then
        raise exception 'a settings control message needs an authenticated origin user'
            using errcode = 'PX030';
    end if;
    if not pepsi.user_address_owns(v_user, p_address) then
        raise exception 'user "%" may not change the settings of this address', v_user
            using errcode = 'PX030',
                  hint = 'An operator grants addresses with pepsi.user_address_add(login, address).';
    end if;
    for v_change in select * from jsonb_to_recordset(p_changes) as c(stage text, option text, value text) loop
        if pepsi.settings_option_operator_only(v_change.option) then
            raise exception 'option "%" can only be set by an operator', left(coalesce(v_change.option, '<null>'), 64)
                using errcode = 'PX031';
        end if;
        if v_change.value is null then
            changed := changed + pepsi.settings_delete(p_address, v_change.stage, v_change.option);
        else
            perform pepsi.settings_put(p_address, v_change.stage, v_change.option, v_change.value,
                                       'user:' || v_user);
            changed := changed + 1;
        end if;
    end loop;
    if p_next is null then
        perform pepsi.workqueue_finish(p_id, p_stage);
    else
        outcome := pepsi.workqueue_advance(p_id, p_stage, p_next, null, p_via, p_max_hops);
    end if;
end
$$;

revoke all on function pepsi.settings_apply(bigint, text, text, text, jsonb, text[], int) from public;
grant execute on function pepsi.settings_apply(bigint, text, text, text, jsonb, text[], int) to pepsi_worker;

commit;
