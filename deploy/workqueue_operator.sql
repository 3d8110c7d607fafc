-- Deploy pepsi:workqueue_operator to pg
-- requires: workqueue_resume
-- requires: workqueue_delete
-- requires: workqueue_history
--
-- The operators' actions on messages (issue 16), beside workqueue_resume
-- (by filter) and workqueue_delete (which is also the cancel: there is no
-- second function): retry failed rows by id, reroute rows to another
-- stage, purge old failed rows into the history, and "what happened to
-- message N" (message_history). Running rows belong to their worker:
-- retry and purge skip them, reroute refuses the whole call.

begin;

create function pepsi.workqueue_ids_check(p_ids bigint[], p_what text)
returns void
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises PX003 unless p_ids holds 1 to 10000 ids, none NULL (the bound
-- of workqueue_delete); p_what names the action in the message.
begin
    if p_ids is null or cardinality(p_ids) = 0 or cardinality(p_ids) > 10000
       or array_position(p_ids, null) is not null then
        raise exception '% needs 1 to 10000 message ids, none NULL', p_what using errcode = 'PX003';
    end if;
end
$$;

create function pepsi.workqueue_retry(p_ids bigint[], p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 16): the failed or timed-out messages among p_ids
-- go back to pending at their stage, afresh: pepsi.workqueue_resume with
-- these ids and statuses {failed,timeout} (strikes, failure class,
-- failed stage and hop count cleared; NOTIFY workqueue). Ids of pending,
-- paused, running or unknown messages are skipped: the count says how
-- many moved. p_now is checked only (the move itself has no time).
-- Returns how many messages moved.
-- Raises PX003 (no ids, more than 10000, a NULL id, a NULL p_now).
-- Tables: workqueue (update, through workqueue_resume).
begin
    perform pepsi.workqueue_ids_check(p_ids, 'retry');
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    return pepsi.workqueue_resume(p_ids => p_ids, p_statuses => '{failed,timeout}');
end
$$;

comment on function pepsi.workqueue_retry(bigint[], timestamptz) is
    'Operators: failed or timed-out messages (by id) back to pending at their stage, afresh (workqueue_resume); other ids are skipped. Returns how many moved. Refuses no ids, over 10000 or a NULL id (PX003).';

create function pepsi.workqueue_reroute(p_ids bigint[], p_stage text, p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 16): the messages p_ids (pending, paused, failed or
-- timeout) go pending at stage p_stage, afresh as after workqueue_resume
-- (strikes, failure class, failed stage and hop count cleared); state
-- keeps rerouted_from (the stage it left) and rerouted_at (p_now).
-- All or nothing, like workqueue_delete: the rows are locked in id order
-- (a claim in flight is waited for), and an unknown id or a running
-- message refuses the whole call: a running message belongs to its
-- worker. The status changes go through workqueue_resume (the one
-- operator transition of rows that are not running); NOTIFY workqueue.
-- The stage need not be served yet (the anomaly check
-- unserved_stage reports messages waiting at an unserved one).
-- Returns how many messages moved.
-- Raises PX001 (an invalid stage name), PX003 (no ids, more than 10000,
-- a NULL id, a NULL p_now), PX004 (an unknown id), PX005 (a running
-- message). Tables: workqueue (update).
declare
    v_found int;
    v_bad bigint;
    v_n int;
begin
    perform pepsi.workqueue_ids_check(p_ids, 'reroute'), pepsi.stage_check(p_stage);
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
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
    -- the stage (not the status) here; the status through workqueue_resume
    update pepsi.workqueue w
       set stage = p_stage,
           state = (w.state - 'strikes' - 'failure_class' - 'failed_stage' - 'hops' - 'hop_path')
                   || jsonb_build_object('rerouted_from', w.stage, 'rerouted_at', p_now)
     where w.workqueue_id = any (p_ids);
    get diagnostics v_n = row_count;
    perform pepsi.workqueue_resume(p_ids => p_ids, p_statuses => '{failed,paused,timeout}');
    if v_n > 0 then
        notify workqueue;
    end if;
    return v_n;
end
$$;

comment on function pepsi.workqueue_reroute(bigint[], text, timestamptz) is
    'Operators: pending, paused, failed or timed-out messages (by id) go pending at another stage, afresh. All or nothing: refuses an invalid stage (PX001), no ids or over 10000 (PX003), an unknown id (PX004), a running message (PX005).';

create function pepsi.workqueue_purge(p_older_than interval, p_now timestamptz default now())
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 16): failed and timed-out messages unchanged for
-- p_older_than leave the queue: deleted (with their bodies once no
-- sibling refers to them) and, in the same statement, written to
-- pepsi.workqueue_history (outcome 'purged'); a message that carried a
-- webhook event also leaves a tombstone (workqueue_tombstones), so that
-- reconciliation does not re-inject its event as lost. "Unchanged": its
-- last claim (claimed_at, when it ran and failed) or, never claimed, its
-- arrival is older than p_now - p_older_than. Other statuses are never
-- touched. p_older_than must be at least 1 hour (a floor against purging
-- what an operator is still looking at) and at most 100 years.
-- Returns how many messages were purged.
-- Raises PX050 (p_older_than NULL, under 1 hour or over 100 years),
-- PX003 (a NULL p_now). Tables: workqueue (delete), workqueue_history
-- and workqueue_tombstones (insert).
declare
    v_n bigint;
begin
    if p_older_than is null or p_older_than < interval '1 hour' or p_older_than > interval '100 years' then
        raise exception 'purge needs an age of 1 hour to 100 years, not %', coalesce(p_older_than::text, 'NULL')
            using errcode = 'PX050';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    with gone as (
        delete from pepsi.workqueue w
         where w.status in ('failed', 'timeout')
           and coalesce(w.claimed_at, w.arrived_at) < p_now - p_older_than
        returning w.*
    ), hist as (
        insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                             arrived_at, ended_at, hops, strikes, failure_class, last_error)
        select g.workqueue_id, g.tube, g.stage, 'purged', g.sender_key, g.origin_user, g.arrived_at, p_now,
               pepsi.state_count(g.state->'hops'), pepsi.state_count(g.state->'strikes'),
               g.state->>'failure_class',
               case when g.state ? 'last_error' then pepsi.reason_clip(g.state->>'last_error') end
          from gone g
         where pepsi.workqueue_history_on()
    ), tomb as (
        insert into pepsi.workqueue_tombstones (workqueue_id, stage, status, tube, webhook_event_id, reason,
                                                deleted_by, deleted_at)
        select g.workqueue_id, g.stage, g.status::text, g.tube, g.webhook_event_id,
               format('purged: %s for more than %s', g.status, p_older_than), session_user, p_now
          from gone g
         where g.webhook_event_id is not null
    )
    select count(*) into v_n from gone;
    return v_n;
end
$$;

comment on function pepsi.workqueue_purge(interval, timestamptz) is
    'Operators: failed and timed-out messages unchanged for p_older_than leave the queue into workqueue_history (outcome purged; a tombstone when they carried a webhook event). Returns how many. Refuses an age under 1 hour or over 100 years (PX050).';

create function pepsi.message_history(p_id bigint)
returns table (source text, workqueue_id bigint, stage text, tube text, status text, at timestamptz,
               detail jsonb)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For readers (issue 16): what happened to message p_id, one row per
-- trace, oldest source first:
--   source 'queue'      it is still queued: status is its status, at its
--                       arrival; detail: sender_key, origin_user,
--                       claimed_at, timeout, hops, strikes, failure_class,
--                       failed_stage, last_error;
--   source 'history'    it left the queue: status is the outcome
--                       (finished, purged, deleted), at when; detail:
--                       sender_key, origin_user, arrived_at, hops,
--                       strikes, failure_class, last_error;
--   source 'tombstone'  an operator deleted it (or a purge, when it
--                       carried a webhook event): status is its status
--                       then, at when; detail: reason, deleted_by,
--                       webhook_event_id.
-- No row: never queued, or its history is past the retention (or off).
-- Never the body. Tables: workqueue, workqueue_history,
-- workqueue_tombstones (read).
    select 'queue', w.workqueue_id, w.stage, w.tube, w.status::text, w.arrived_at,
           jsonb_build_object('sender_key', w.sender_key, 'origin_user', w.origin_user,
                              'claimed_at', w.claimed_at, 'timeout', w.timeout,
                              'hops', pepsi.state_count(w.state->'hops'),
                              'strikes', pepsi.state_count(w.state->'strikes'),
                              'failure_class', w.state->>'failure_class',
                              'failed_stage', w.state->>'failed_stage',
                              'last_error', w.state->>'last_error')
      from pepsi.workqueue w where w.workqueue_id = p_id
    union all
    select 'history', h.workqueue_id, h.stage, h.tube, h.outcome, h.ended_at,
           jsonb_build_object('sender_key', h.sender_key, 'origin_user', h.origin_user,
                              'arrived_at', h.arrived_at, 'hops', h.hops, 'strikes', h.strikes,
                              'failure_class', h.failure_class, 'last_error', h.last_error)
      from pepsi.workqueue_history h where h.workqueue_id = p_id
    union all
    select 'tombstone', t.workqueue_id, t.stage, t.tube, t.status, t.deleted_at,
           jsonb_build_object('reason', t.reason, 'deleted_by', t.deleted_by,
                              'webhook_event_id', t.webhook_event_id)
      from pepsi.workqueue_tombstones t where t.workqueue_id = p_id
$$;

comment on function pepsi.message_history(bigint) is
    'Readers: what happened to message N: its queue row (still queued), its workqueue_history row (finished, purged, deleted) and its tombstone, one row each; never the body. No row: unknown or past the history''s retention.';

revoke all on function pepsi.workqueue_ids_check(bigint[], text) from public;
revoke all on function pepsi.workqueue_retry(bigint[], timestamptz) from public;
revoke all on function pepsi.workqueue_reroute(bigint[], text, timestamptz) from public;
revoke all on function pepsi.workqueue_purge(interval, timestamptz) from public;
revoke all on function pepsi.message_history(bigint) from public;
grant execute on function pepsi.workqueue_retry(bigint[], timestamptz) to pepsi_operator;
grant execute on function pepsi.workqueue_reroute(bigint[], text, timestamptz) to pepsi_operator;
grant execute on function pepsi.workqueue_purge(interval, timestamptz) to pepsi_operator;
grant execute on function pepsi.message_history(bigint) to pepsi_reader;

commit;
