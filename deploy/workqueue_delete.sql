-- Deploy pepsi:workqueue_delete to pg
-- requires: workqueue
-- requires: workqueue_history
--
-- Deleting messages on purpose (issue 12, W-21). A message deleted by a
-- plain DELETE cannot be told from one lost by a bug, a restore or a
-- failed write: reconciliation re-injects the event of such a message
-- (lost_message) once lost_after has passed, which is right for a loss
-- and wrong for an operator who deleted the message on purpose (a test
-- event, a poison message, a customer who asked). workqueue_delete is how
-- operators delete: it leaves a tombstone per message (what it was, who
-- deleted it, why), and reconciliation and the anomaly checks honour a
-- tombstone that names a webhook event: its event is not lost, not
-- stuck, and is never re-injected. The event row itself stays as it was
-- (unprocessed: it was never delivered). Deleting the tombstone row takes
-- it back: the next pass then re-injects the event like any lost one.

begin;

create table pepsi.workqueue_tombstones (
    workqueue_id     bigint
                     constraint workqueue_tombstones_pkey primary key,
    stage            text not null,
    status           text not null,
    tube             text not null,
    webhook_event_id bigint,
    reason           text not null
                     constraint workqueue_tombstones_reason_check
                     check (btrim(reason) <> '' and octet_length(reason) <= 1000),
    deleted_by       text not null,
    deleted_at       timestamptz not null
);

comment on table pepsi.workqueue_tombstones is
    'Messages an operator deleted on purpose (workqueue_delete): what they were, who deleted them, when and why. A tombstone naming a webhook event keeps reconciliation from re-injecting that event (issue 12).';

-- reconcile_lost and the anomaly views look tombstones up by event.
create index workqueue_tombstones_event_idx on pepsi.workqueue_tombstones (webhook_event_id)
    where webhook_event_id is not null;

create function pepsi.workqueue_delete(p_ids bigint[], p_reason text, p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: deletes the messages p_ids (pending, paused, failed or
-- timeout; with their bodies once no sibling refers to them) and leaves a
-- tombstone for each in workqueue_tombstones with p_reason, the session
-- user and p_now, so that reconciliation does not re-inject the webhook
-- event a deleted message carried (issue 12). All or nothing: the rows
-- are locked first (a claim in flight is waited for), and an unknown id
-- or a running message refuses the whole call. A running message belongs
-- to its worker: wait for it, or let reconciliation requeue a stuck one.
-- Returns how many messages were deleted.
-- Raises PX003 (no ids, more than 10000, a NULL id, no reason or one
-- over 1000 bytes, a NULL p_now), PX004 (an unknown id), PX005 (a
-- running message). Tables: workqueue (delete), workqueue_tombstones
-- (insert), workqueue_history (insert: outcome 'deleted', issue 16).
-- It is also the operators' cancel (issue 16): there is no second
-- function for it.
declare
    v_found int;
    v_bad bigint;
    v_n int;
begin
    if p_ids is null or cardinality(p_ids) = 0 or cardinality(p_ids) > 10000 or array_position(p_ids, null) is not null then
        raise exception 'delete needs 1 to 10000 message ids, none NULL' using errcode = 'PX003';
    end if;
    if p_reason is null or btrim(p_reason) = '' or octet_length(p_reason) > 1000 then
        raise exception 'deleting messages needs a reason (1 to 1000 bytes)' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    -- Lock them in id order (two operators cannot deadlock), then judge
    -- the versions locked: a row claimed meanwhile is running now.
    select count(*), min(w.workqueue_id) filter (where w.status = 'running')
      into v_found, v_bad
      from (select w.workqueue_id, w.status from pepsi.workqueue w
             where w.workqueue_id = any (p_ids)
             order by w.workqueue_id
               for update) w;
    if v_found < (select count(distinct i) from unnest(p_ids) i) then
        select min(i) into v_bad from unnest(p_ids) i
         where not exists (select 1 from pepsi.workqueue w where w.workqueue_id = i);
        raise exception 'unknown message id %', v_bad using errcode = 'PX004';
    end if;
    if v_bad is not null then
        raise exception 'message % is running; its worker owns it', v_bad
            using errcode = 'PX005', hint = 'Wait until it is no longer running.';
    end if;
    with gone as (
        delete from pepsi.workqueue w
         where w.workqueue_id = any (p_ids)
        returning w.*
    ), hist as (
        -- issue 16: the history row, in the statement that deletes
        insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                             arrived_at, ended_at, hops, strikes, failure_class, last_error)
        select g.workqueue_id, g.tube, g.stage, 'deleted', g.sender_key, g.origin_user, g.arrived_at, p_now,
               pepsi.state_count(g.state->'hops'), pepsi.state_count(g.state->'strikes'),
               g.state->>'failure_class',
               case when g.state ? 'last_error' then pepsi.reason_clip(g.state->>'last_error') end
          from gone g
         where pepsi.workqueue_history_on()
    )
    insert into pepsi.workqueue_tombstones (workqueue_id, stage, status, tube, webhook_event_id, reason,
                                            deleted_by, deleted_at)
    select g.workqueue_id, g.stage, g.status::text, g.tube, g.webhook_event_id, p_reason, session_user, p_now
      from gone g;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

revoke all on table pepsi.workqueue_tombstones from public;
revoke all on function pepsi.workqueue_delete(bigint[], text, timestamptz) from public;
grant execute on function pepsi.workqueue_delete(bigint[], text, timestamptz) to pepsi_operator;
-- Operators (the schema owner) delete; dashboards may read what was deleted.
grant select on pepsi.workqueue_tombstones to pepsi_reader;

commit;
