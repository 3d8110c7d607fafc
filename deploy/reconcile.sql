-- Deploy pepsi:reconcile to pg
-- requires: webhook_backfill
-- requires: workqueue_dispatch_ops
-- requires: workqueue_delete
--
-- The reconciliation pass (W-20..W-28): pepsi.reconcile() re-reads what
-- is recorded and compares it with what happened to it, repairs what it
-- safely can and flags the rest. Every finding is a row of
-- reconcile_findings saying what was found, on which object, and what
-- was done.
--
--   kind                    found                                       done
--   lost_message            an event of a pipeline provider, not        reinjected: a new message
--                           processed, with no message at all, older     at the provider's stage
--                           than lost_after (its message was deleted     (W-21)
--                           or never made), and no tombstone: a
--                           message an operator deleted on purpose
--                           (workqueue_delete) is not lost
--   message_failed          an unprocessed event whose message failed    flagged (resume the message)
--                           or timed out
--   unprocessed_stale       an event of a pulled provider not processed  flagged (the pullers are
--                           after stale_after                            behind or gone)
--   stuck_running           a message running far past its stage's       requeued (pending again)
--                           limit: MAX_RUNTIME x (QUEUE_LIMIT + 1) +
--                           running_margin
--   stuck_paused            a message paused past its timeout by more    released (pending again)
--                           than paused_grace (no paused sweep ran)
--   processed_with_message  a processed event whose message still        flagged
--                           exists
--   message_without_event   a message naming an event that is not        flagged
--                           stored
--   payload_mismatch        a processed event whose stored payload no    flagged (W-22)
--                           longer matches what its destination got
--   gap                     an id of the provider's sequence missing     recorded (re-checked by
--                           (webhook_gaps)                               later passes)
--   backfill                a gap still missing after a retry            backfill_requested
--   backfill_failed         a back-fill request that failed              flagged
--
-- The downstream-state check (W-22), concretely: when an event is marked
-- processed, processed_digest records the SHA-256 of what its destination
-- received: the body of the message whose finish marked it (the pipeline:
-- that message's body is what every stage read and sent on), or the
-- payload itself (pull mode: the puller read the row). A fresh reading is
-- the SHA-256 of the payload stored now. They differ when the payload
-- changed after processing (the upsert never does that: a bug, a manual
-- UPDATE, a restore that mixed versions) or when a redelivery refreshed
-- the payload (W-11) after the message was made, so the destination got
-- the older version. Neither can be repaired without a person (which
-- version is right?), so it is flagged. The check reads processed events
-- in a rolling window of digest_batch rows per pass (a cursor over
-- webhook_event_id that wraps around), so a pass costs the same however
-- large the table grows, and every event is re-read every few passes.
--
-- Findings that need a person stay open (resolved_at NULL) and are not
-- recorded again while open; a later pass resolves them when the
-- condition is gone. Repairs are resolved when made.
--
-- One pass at a time (W-26, W-27): a pass takes the transaction-level
-- advisory lock pepsi.lock_key('reconcile') with a try-lock and returns at once,
-- doing nothing, when another session holds it. Transaction-level, not
-- session-level, on purpose: the lock must be held until the pass's
-- writes are committed, or a second pass could start, not see the
-- first's re-injections and re-inject the same events again; it is
-- released by the commit or rollback that ends the pass, so an error
-- cannot leave it behind. The key shares its class ("peps") with
-- the dispatcher lock, whose second key is an owner slot (0 or more), so
-- the negative -1 cannot collide. Called inside a longer transaction,
-- the lock is held until that transaction ends.
--
-- Cost: a pass reads the running rows of the workqueue sequentially, the
-- messages that carry a webhook event through the partial index
-- workqueue_webhook_event_idx (issue 13: the link is the column
-- workqueue.webhook_event_id, never state->>'webhook_event'), which the
-- lost-message anti-join also reads (a probe per event, or one ordered
-- pass over the index when the events are many), the unprocessed events
-- through webhook_events_unprocessed_idx, the paused rows through
-- workqueue_paused_idx, one window of the gap scan per provider, and a
-- bounded batch of digests; every step stops at batch_limit findings.
-- That index holds only the messages made from webhook events, so the
-- claims and the hops of every other message pay nothing for it (a hop
-- of a webhook message, never HOT, adds it one entry). It runs on a schedule
-- (RECONCILE_INTERVAL) and when notified, never in the claim.

begin;

-- ---- the downstream state of processed events ----

alter table pepsi.webhook_events add column processed_digest bytea;

comment on column pepsi.webhook_events.processed_digest is
    'SHA-256 of what the destination received when the event was processed: the finishing message''s body (pipeline) or the payload (pull). reconcile() compares it with the payload stored now (W-22).';

update pepsi.webhook_events e set processed_digest = sha256(e.payload)
 where e.processed_at is not null;

create function pepsi.webhook_event_delivered()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Row trigger after DELETE on workqueue for a finished webhook message
-- (the same WHEN as workqueue_webhook_finished). Its name sorts first, so
-- PostgreSQL runs it before workqueue_webhook_finished for each row, and
-- before the statement trigger that deletes bodies: it leaves the SHA-256
-- of the message's body, the bytes the destination received, in the
-- transaction-local setting pepsi.delivered_digest as
-- "<webhook_event_id>:<hex>", where webhook_event_digest finds it when
-- workqueue_webhook_finished marks the event. Tables: workqueue_body (read).
declare
    v_digest bytea;
begin
    select sha256(coalesce(b.body, ''::bytea)) into v_digest
      from pepsi.workqueue_body b where b.body_id = old.body_id;
    perform set_config('pepsi.delivered_digest',
                       case when v_digest is null then ''
                            else old.webhook_event_id || ':' || encode(v_digest, 'hex') end,
                       true);
    return null;
end
$$;

create trigger workqueue_webhook_delivered
    after delete on pepsi.workqueue
    for each row
    when (old.status = 'running' and old.webhook_event_id is not null)
    execute function pepsi.webhook_event_delivered();

create function pepsi.webhook_event_digest()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Row trigger before UPDATE OF processed_at on webhook_events: an event
-- being marked processed gets processed_digest, the SHA-256 of what the
-- destination received (the finishing message's body, left by
-- webhook_event_delivered, else the payload); an event unmarked loses it.
begin
    if new.processed_at is null then
        new.processed_digest := null;
    elsif current_setting('pepsi.delivered_digest', true) like new.webhook_event_id || ':%' then
        new.processed_digest := decode(split_part(current_setting('pepsi.delivered_digest', true), ':', 2), 'hex');
    else
        new.processed_digest := sha256(new.payload);
    end if;
    return new;
end
$$;

create trigger webhook_events_processed_digest
    before update of processed_at on pepsi.webhook_events
    for each row
    when (old.processed_at is distinct from new.processed_at)
    execute function pepsi.webhook_event_digest();

-- ---- settings, runs and findings ----

create table pepsi.reconcile_settings (
    singleton           boolean not null default true
                        constraint reconcile_settings_pkey primary key
                        constraint reconcile_settings_singleton_check check (singleton),
    lost_after          interval not null default interval '5 minutes'
                        constraint reconcile_settings_lost_after_check check (lost_after >= interval '0'),
    stale_after         interval not null default interval '1 hour'
                        constraint reconcile_settings_stale_after_check check (stale_after >= interval '0'),
    running_margin      interval not null default interval '5 minutes'
                        constraint reconcile_settings_running_margin_check check (running_margin >= interval '0'),
    default_max_runtime interval not null default interval '10 minutes'
                        constraint reconcile_settings_default_max_runtime_check check (default_max_runtime > interval '0'),
    default_queue_limit int not null default 4
                        constraint reconcile_settings_default_queue_limit_check check (default_queue_limit between 1 and 1024),
    paused_grace        interval not null default interval '5 minutes'
                        constraint reconcile_settings_paused_grace_check check (paused_grace >= interval '0'),
    digest_batch        int not null default 10000
                        constraint reconcile_settings_digest_batch_check check (digest_batch between 0 and 10000000),
    batch_limit         int not null default 1000
                        constraint reconcile_settings_batch_limit_check check (batch_limit between 1 and 1000000),
    retention           interval not null default interval '30 days'
                        constraint reconcile_settings_retention_check check (retention >= interval '1 hour'),
    digest_cursor       bigint not null default 0,
    updated_at          timestamptz not null default now()
);

comment on table pepsi.reconcile_settings is
    'One row: the thresholds of reconciliation passes (change with reconcile_configure) and the digest check''s cursor.';

insert into pepsi.reconcile_settings default values;

create table pepsi.reconcile_runs (
    run_id      bigint generated always as identity
                constraint reconcile_runs_pkey primary key,
    trigger     text not null
                constraint reconcile_runs_trigger_check
                check (trigger in ('schedule', 'notify', 'manual')),
    started_at  timestamptz not null,
    finished_at timestamptz,
    duration_ms numeric,
    findings    int not null default 0,
    stamp       bigint
);

comment on table pepsi.reconcile_runs is
    'One row per reconciliation pass that ran (a pass that found the lock taken leaves none): what started it, when, how long it took, how many findings.';

create table pepsi.reconcile_findings (
    finding_id       bigint generated always as identity
                     constraint reconcile_findings_pkey primary key,
    run_id           bigint not null
                     constraint reconcile_findings_run_id_fkey references pepsi.reconcile_runs (run_id),
    kind             text not null
                     constraint reconcile_findings_kind_check
                     check (kind in ('lost_message', 'message_failed', 'unprocessed_stale', 'stuck_running',
                                     'stuck_paused', 'processed_with_message', 'message_without_event',
                                     'payload_mismatch', 'gap', 'backfill', 'backfill_failed')),
    object           text not null,
    provider         text,
    external_id      text,
    webhook_event_id bigint,
    workqueue_id     bigint,
    action           text not null
                     constraint reconcile_findings_action_check
                     check (action in ('reinjected', 'requeued', 'released', 'flagged', 'recorded',
                                       'backfill_requested')),
    detail           jsonb not null default '{}',
    found_at         timestamptz not null,
    resolved_at      timestamptz,
    resolution       text
);

comment on table pepsi.reconcile_findings is
    'What reconciliation passes found and did. object names what was found (event:<id>, message:<id>, <provider>/<external_id>); open findings (resolved_at NULL) are not recorded twice.';

-- An open finding is recorded once, however many passes see it.
create unique index reconcile_findings_open_key on pepsi.reconcile_findings (kind, object)
    where resolved_at is null;
create index reconcile_findings_run_id_idx on pepsi.reconcile_findings (run_id);

create function pepsi.reconcile_configure(p_changes jsonb)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: changes the keys of p_changes (a JSON object) and keeps
-- the others: lost_after, stale_after, running_margin,
-- default_max_runtime, paused_grace, retention (intervals as text, e.g.
-- "10 minutes"), default_queue_limit, digest_batch, batch_limit
-- (integers). Takes effect at the next pass. history_retention (issue
-- 16): how long pepsi.workqueue_history keeps a day, "0" (history off:
-- nothing written from now on, every day dropped at the next pass) or 1
-- to 366 days; kept in workqueue_history_settings.
-- Raises PX003 (not an object, unknown key, a value of the wrong type or
-- out of range), PX051 (history_retention not an interval, or neither 0
-- nor 1 to 366 days). Tables: reconcile_settings,
-- workqueue_history_settings (update).
declare
    v_row pepsi.reconcile_settings;
    v_bad text;
    v_history interval;
begin
    if p_changes is null or jsonb_typeof(p_changes) <> 'object' then
        raise exception 'changes must be a JSON object' using errcode = 'PX003';
    end if;
    select k into v_bad from jsonb_object_keys(p_changes) k
     where k not in ('lost_after', 'stale_after', 'running_margin', 'default_max_runtime', 'default_queue_limit',
                     'paused_grace', 'digest_batch', 'batch_limit', 'retention', 'history_retention')
     limit 1;
    if found then
        raise exception 'unknown reconcile setting "%"', v_bad using errcode = 'PX003';
    end if;
    if p_changes ? 'history_retention' then
        begin
            v_history := (p_changes->>'history_retention')::interval;
        exception when others then
            v_history := null;
        end;
        if v_history is null or jsonb_typeof(p_changes->'history_retention') <> 'string'
           or not (v_history = interval '0' or v_history between interval '1 day' and interval '366 days') then
            raise exception 'history_retention must be "0" (off) or 1 to 366 days, not %', p_changes->'history_retention'
                using errcode = 'PX051';
        end if;
        update pepsi.workqueue_history_settings s set retention = v_history, updated_at = now();
        p_changes := p_changes - 'history_retention';
    end if;
    select * into v_row from pepsi.reconcile_settings for update;
    begin
        v_row := jsonb_populate_record(v_row, p_changes);
        update pepsi.reconcile_settings s
           set lost_after = v_row.lost_after, stale_after = v_row.stale_after,
               running_margin = v_row.running_margin, default_max_runtime = v_row.default_max_runtime,
               default_queue_limit = v_row.default_queue_limit, paused_grace = v_row.paused_grace,
               digest_batch = v_row.digest_batch, batch_limit = v_row.batch_limit,
               retention = v_row.retention, updated_at = now();
    exception when others then
        raise exception 'invalid reconcile settings %: %', p_changes, sqlerrm using errcode = 'PX003';
    end;
end
$$;

-- ---- the steps of a pass ----

create function pepsi.reconcile_flag(p_run bigint, p_now timestamptz, p_kinds text[], p_rows jsonb,
                                     p_complete boolean)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Records the rows of p_rows (objects with kind, object, provider,
-- external_id, webhook_event_id, workqueue_id, detail) as flagged
-- findings, unless that finding is open already. When p_rows is the
-- complete set of what kinds p_kinds found this pass (not cut off by a
-- batch limit), open findings of those kinds that are no longer there are
-- resolved (resolution "cleared"). Returns how many were recorded.
-- Tables: reconcile_findings (insert, update).
declare
    v_n int;
begin
    insert into pepsi.reconcile_findings (run_id, kind, object, provider, external_id, webhook_event_id,
                                          workqueue_id, action, detail, found_at)
    select p_run, r.kind, r.object, r.provider, r.external_id, r.webhook_event_id, r.workqueue_id, 'flagged',
           coalesce(r.detail, '{}'), p_now
      from jsonb_to_recordset(coalesce(p_rows, '[]')) as r(kind text, object text, provider text, external_id text,
                                                           webhook_event_id bigint, workqueue_id bigint, detail jsonb)
    on conflict (kind, object) where resolved_at is null do nothing;
    get diagnostics v_n = row_count;
    if p_complete then
        update pepsi.reconcile_findings f set resolved_at = p_now, resolution = 'cleared'
         where f.kind = any (p_kinds) and f.resolved_at is null and f.action = 'flagged'
           and not exists (select 1 from jsonb_to_recordset(coalesce(p_rows, '[]')) as r(kind text, object text)
                            where r.kind = f.kind and r.object = f.object);
    end if;
    return v_n;
end
$$;

create function pepsi.reconcile_lost(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Lost messages (W-21): events of pipeline providers, not processed,
-- older than lost_after, with no message at all (an anti-join on
-- workqueue_webhook_event_idx, issue 13: never a scan of the queue) and
-- no tombstone (a message of the event deleted on purpose with
-- workqueue_delete: issue 12, the operator's decision stands). Each gets a new message like
-- the one the ingest made (body = payload, header block = headers, state
-- naming the event, origin webhook:<provider>, arrived at received_at) at
-- the provider's current stage and tube; its finish marks the event
-- processed, once. Event rows are locked (SKIP LOCKED), so a concurrent
-- writer is never waited for. NOTIFY workqueue when any was made.
-- Returns how many. Tables: workqueue_body, workqueue (insert, through
-- workqueue_create), reconcile_findings (insert); webhook_events (read, row locks),
-- webhook_provider, workqueue_tombstones (read).
declare
    v_n int;
begin
    with lost as materialized (
        select e.webhook_event_id, e.provider, e.external_id, e.payload, e.headers, e.received_at,
               p.stage, p.tube
          from pepsi.webhook_events e
          join pepsi.webhook_provider p on p.provider = e.provider
         where e.processed_at is null
           and p.stage is not null
           and e.received_at < p_now - p_s.lost_after
           and not exists (select 1 from pepsi.workqueue w
                            where w.webhook_event_id = e.webhook_event_id)
           and not exists (select 1 from pepsi.workqueue_tombstones t
                            where t.webhook_event_id = e.webhook_event_id)
         order by e.webhook_event_id
         limit p_s.batch_limit
           for update of e skip locked
    ), routed as materialized (
        select l.*, row_number() over (order by l.webhook_event_id) as n
          from lost l
    ), msgs as (
        -- The messages, made by the one function that makes them
        -- (workqueue_create, issue 13), in event order.
        select c.workqueue_id, r.webhook_event_id as event_id
          from pepsi.workqueue_create(array(
                   select pepsi.webhook_event_item(r.webhook_event_id, r.provider, r.external_id, r.payload, r.headers,
                                                   r.received_at, r.stage, r.tube,
                                                   jsonb_build_object('reinjected_by_run', p_run))
                     from routed r
                    order by r.n)) with ordinality as c(workqueue_id, n)
          join routed r on r.n = c.n
    )
    insert into pepsi.reconcile_findings (run_id, kind, object, provider, external_id, webhook_event_id,
                                          workqueue_id, action, detail, found_at, resolved_at, resolution)
    select p_run, 'lost_message', 'event:' || r.webhook_event_id, r.provider, r.external_id, r.webhook_event_id,
           m.workqueue_id, 'reinjected', jsonb_build_object('stage', r.stage, 'received_at', r.received_at),
           p_now, p_now, 'repaired'
      from routed r
      join msgs m on m.event_id = r.webhook_event_id;
    get diagnostics v_n = row_count;
    if v_n > 0 then
        notify workqueue;
    end if;
    return v_n;
end
$$;

create function pepsi.reconcile_stuck(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings,
                                      p_limits jsonb)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Messages stuck running or paused far past their stage's limits:
--   running longer than MAX_RUNTIME x (QUEUE_LIMIT + 1) + running_margin
--   since claimed (a message waits behind at most QUEUE_LIMIT others in
--   its worker, each killed after MAX_RUNTIME, so no live dispatcher
--   keeps one running that long): requeued, pending again, with
--   state.last_error saying why. p_limits is {"<stage>": {"max_runtime_ms":
--   N, "queue_limit": N}} from the runner's configuration; other stages
--   use default_max_runtime and default_queue_limit.
--   paused with a timeout more than paused_grace ago (the paused sweep
--   did not run): released, pending again.
-- Rows are locked with SKIP LOCKED: a row a worker is finishing right now
-- is left to it. NOTIFY workqueue when any moved. Returns how many.
-- Tables: workqueue (update), reconcile_findings (insert).
declare
    v_n int;
    v_m int;
begin
    with stuck as (
        select w.workqueue_id, w.stage, w.claimed_at, a.allowed
          from pepsi.workqueue w
         cross join lateral (
               select coalesce((p_limits->w.stage->>'max_runtime_ms')::bigint * interval '1 millisecond',
                               p_s.default_max_runtime)
                      * (coalesce((p_limits->w.stage->>'queue_limit')::int, p_s.default_queue_limit) + 1)
                      + p_s.running_margin as allowed) a
         where w.status = 'running'
           and coalesce(w.claimed_at, '-infinity') < p_now - a.allowed
         order by w.workqueue_id
         limit p_s.batch_limit
           for update of w skip locked
    ), moved as (
        -- requeued through the state machine (issue 13), rows locked above
        select s.workqueue_id, s.stage, s.claimed_at, s.allowed
          from pepsi.workqueue_transition(array(
                   select pepsi.transition_of(s.workqueue_id, s.stage, 'requeue', p_reason =>
                              format('reconcile: running since %s, past its stage limit of %s', s.claimed_at, s.allowed))
                     from stuck s)) t
          join stuck s on s.workqueue_id = t.workqueue_id
         where t.outcome = 'ok'
    )
    insert into pepsi.reconcile_findings (run_id, kind, object, workqueue_id, action, detail, found_at,
                                          resolved_at, resolution)
    select p_run, 'stuck_running', 'message:' || m.workqueue_id, m.workqueue_id, 'requeued',
           jsonb_build_object('stage', m.stage, 'claimed_at', m.claimed_at, 'allowed', m.allowed::text),
           p_now, p_now, 'repaired'
      from moved m;
    get diagnostics v_n = row_count;

    -- workqueue_paused_idx leads with the owner slot (issue 14), so the
    -- oldest overdue rows are read slot by slot, each a range scan of
    -- (slot, timeout) that stops at batch_limit, then merged: the cost
    -- follows the overdue rows, not every paused row of the queue. The
    -- slots: those of the map, and 0 (every row without a topology).
    with overdue as (
        select o.workqueue_id, o.timeout
          from (select m.owner_slot from pepsi.partition_map m
                union select 0) sl
         cross join lateral (
               select w.workqueue_id, w.timeout from pepsi.workqueue w
                where w.owner_slot = sl.owner_slot and w.status = 'paused'
                  and w.timeout < p_now - p_s.paused_grace
                order by w.timeout
                limit p_s.batch_limit
                  for update skip locked) o
         order by o.timeout
         limit p_s.batch_limit
    ), moved as (
        update pepsi.workqueue w set status = 'pending', timeout = null
          from overdue o
         where w.workqueue_id = o.workqueue_id
        returning w.workqueue_id, w.stage, o.timeout
    )
    insert into pepsi.reconcile_findings (run_id, kind, object, workqueue_id, action, detail, found_at,
                                          resolved_at, resolution)
    select p_run, 'stuck_paused', 'message:' || m.workqueue_id, m.workqueue_id, 'released',
           jsonb_build_object('stage', m.stage, 'timeout', m.timeout), p_now, p_now, 'repaired'
      from moved m;
    get diagnostics v_m = row_count;
    if v_n + v_m > 0 then
        notify workqueue;
    end if;
    return v_n + v_m;
end
$$;

create function pepsi.reconcile_links(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The messages that carry a webhook event (webhook_event_id, read through
-- its partial index: issue 13) against their events: a message naming an event that is not stored
-- (message_without_event), a processed event whose message still exists
-- (processed_with_message: which path delivered it cannot be known
-- here), an unprocessed event whose message failed or timed out
-- (message_failed: resume the message). Then events of pulled providers
-- not processed after stale_after (unprocessed_stale). All flagged.
-- Returns how many findings are new. Tables: reconcile_findings; workqueue,
-- webhook_events, webhook_provider (read).
declare
    v_rows jsonb;
    v_count int;
    v_n int;
begin
    with msgs as materialized (
        select w.workqueue_id, w.stage, w.status::text as status, w.state->>'last_error' as last_error,
               w.webhook_event_id as event_id,
               w.state->>'webhook_provider' as provider, w.state->>'external_id' as external_id
          from pepsi.workqueue w
         where w.webhook_event_id is not null
    ), judged as (
        select m.*, e.processed_at,
               case when e.webhook_event_id is null then 'message_without_event'
                    when e.processed_at is not null then 'processed_with_message'
                    when m.status in ('failed', 'timeout') then 'message_failed'
               end as kind
          from msgs m
          left join pepsi.webhook_events e on e.webhook_event_id = m.event_id
    ), picked as (
        select j.* from judged j where j.kind is not null order by j.workqueue_id limit p_s.batch_limit
    )
    select coalesce(jsonb_agg(jsonb_build_object(
               'kind', p.kind,
               'object', case when p.kind = 'message_without_event' then 'message:' || p.workqueue_id
                              else 'event:' || p.event_id end,
               'provider', p.provider, 'external_id', p.external_id, 'webhook_event_id', p.event_id,
               'workqueue_id', p.workqueue_id,
               'detail', jsonb_build_object('stage', p.stage, 'status', p.status, 'last_error', p.last_error,
                                            'processed_at', p.processed_at))), '[]'),
           count(*)
      into v_rows, v_count
      from picked p;
    v_n := pepsi.reconcile_flag(p_run, p_now, array['message_without_event', 'processed_with_message', 'message_failed'],
                                v_rows, v_count < p_s.batch_limit);

    select coalesce(jsonb_agg(jsonb_build_object(
               'kind', 'unprocessed_stale', 'object', 'event:' || s.webhook_event_id, 'provider', s.provider,
               'external_id', s.external_id, 'webhook_event_id', s.webhook_event_id,
               'detail', jsonb_build_object('received_at', s.received_at))), '[]'),
           count(*)
      into v_rows, v_count
      from (select e.webhook_event_id, e.provider, e.external_id, e.received_at
              from pepsi.webhook_events e
              join pepsi.webhook_provider p on p.provider = e.provider
             where e.processed_at is null and p.stage is null
               and e.received_at < p_now - p_s.stale_after
             order by e.received_at
             limit p_s.batch_limit) s;
    return v_n + pepsi.reconcile_flag(p_run, p_now, array['unprocessed_stale'], v_rows, v_count < p_s.batch_limit);
end
$$;

create function pepsi.reconcile_digests(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The downstream-state check (W-22, see the top of this change) over the
-- next digest_batch processed events after digest_cursor: a mismatch
-- between processed_digest and the SHA-256 of the payload now is flagged
-- (payload_mismatch); open mismatches in the range that now match are
-- resolved. The cursor moves past the range, and back to the start once
-- the end of the table is reached. Returns how many findings are new.
-- Tables: reconcile_findings, reconcile_settings (update); webhook_events (read).
declare
    v_rows jsonb;
    v_last bigint;
    v_count int;
    v_n int;
begin
    if p_s.digest_batch = 0 then
        return 0;
    end if;
    with batch as (
        select e.webhook_event_id, e.provider, e.external_id, e.processed_digest, sha256(e.payload) as now_digest
          from pepsi.webhook_events e
         where e.webhook_event_id > p_s.digest_cursor and e.processed_at is not null
         order by e.webhook_event_id
         limit p_s.digest_batch
    )
    select coalesce(jsonb_agg(jsonb_build_object(
               'kind', 'payload_mismatch', 'object', 'event:' || b.webhook_event_id, 'provider', b.provider,
               'external_id', b.external_id, 'webhook_event_id', b.webhook_event_id,
               'detail', jsonb_build_object('delivered_sha256', encode(b.processed_digest, 'hex'),
                                            'stored_sha256', encode(b.now_digest, 'hex'))))
             filter (where b.processed_digest is not null and b.processed_digest <> b.now_digest), '[]'),
           max(b.webhook_event_id), count(*)
      into v_rows, v_last, v_count
      from batch b;
    v_n := pepsi.reconcile_flag(p_run, p_now, array['payload_mismatch'], v_rows, false);
    update pepsi.reconcile_findings f set resolved_at = p_now, resolution = 'cleared'
     where f.kind = 'payload_mismatch' and f.resolved_at is null
       and f.webhook_event_id > p_s.digest_cursor and f.webhook_event_id <= coalesce(v_last, p_s.digest_cursor)
       and not exists (select 1 from jsonb_to_recordset(v_rows) as r(object text) where r.object = f.object);
    update pepsi.reconcile_settings s
       set digest_cursor = case when v_count < p_s.digest_batch then 0 else v_last end;
    return v_n;
end
$$;

create function pepsi.reconcile_gaps(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Gap detection and back-fill, in this order: re-check the unresolved
-- gaps (arrived, tombstoned), request back-fills for the gaps still
-- missing after a retry and handle failed requests
-- (webhook_backfill_due), then scan each provider's next window for new
-- gaps (webhook_gaps_detect). Findings: gap (recorded), backfill
-- (backfill_requested), backfill_failed (flagged); they are resolved with
-- the gap's outcome (arrived, found, tombstoned) once it is resolved,
-- whether by a pass or by the back-fill's answer. Returns how many
-- findings are new. Tables: reconcile_findings; see the functions named.
declare
    v_n int := 0;
    v_m int;
begin
    perform pepsi.webhook_gaps_recheck(p_now);

    insert into pepsi.reconcile_findings (run_id, kind, object, provider, external_id, workqueue_id, action,
                                          detail, found_at)
    select p_run, d.kind, d.provider || '/' || d.external_id, d.provider, d.external_id, d.workqueue_id,
           d.action, d.detail, p_now
      from pepsi.webhook_backfill_due(p_now, p_s.batch_limit) d
    on conflict (kind, object) where resolved_at is null do nothing;
    get diagnostics v_m = row_count;
    v_n := v_n + v_m;

    insert into pepsi.reconcile_findings (run_id, kind, object, provider, external_id, action, detail, found_at)
    select p_run, 'gap', d.provider || '/' || d.external_id, d.provider, d.external_id, 'recorded',
           jsonb_build_object('number', d.number), p_now
      from pepsi.webhook_gaps_detect(p_now) d
    on conflict (kind, object) where resolved_at is null do nothing;
    get diagnostics v_m = row_count;
    v_n := v_n + v_m;

    update pepsi.reconcile_findings f set resolved_at = g.resolved_at, resolution = g.state
      from pepsi.webhook_gaps g
     where f.kind in ('gap', 'backfill', 'backfill_failed') and f.resolved_at is null
       and g.provider = f.provider and g.external_id = f.external_id and g.resolved_at is not null;
    return v_n;
end
$$;

create function pepsi.reconcile_retention(p_now timestamptz, p_s pepsi.reconcile_settings)
returns void
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Forgets what is older than the retention: resolved findings, resolved
-- gaps, and runs left without findings; and keeps the message history's
-- partitions (pepsi.workqueue_history_maintain, issue 16: today's and
-- tomorrow's made, days past history_retention dropped). Tables:
-- reconcile_findings, webhook_gaps, reconcile_runs (delete);
-- workqueue_history (partitions).
    delete from pepsi.reconcile_findings f where f.resolved_at < p_now - p_s.retention;
    delete from pepsi.webhook_gaps g where g.resolved_at < p_now - p_s.retention;
    delete from pepsi.reconcile_runs r
     where r.started_at < p_now - p_s.retention
       and not exists (select 1 from pepsi.reconcile_findings f where f.run_id = r.run_id);
    select pepsi.workqueue_history_maintain(p_now);
$$;

create function pepsi.reconcile_stamp()
returns bigint
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A number that moves whenever the data a reconciliation pass reads
-- changes: the rows inserted, updated and deleted in those tables, from
-- the cumulative statistics (which may lag a few seconds, so a change
-- shows up at the latest one pass later; it never goes unseen).
-- Tables: pg_stat_all_tables (read).
    select coalesce(sum(s.n_tup_ins + s.n_tup_upd + s.n_tup_del), 0)::bigint
      from pg_catalog.pg_stat_all_tables s
     where s.schemaname = 'pepsi'
       and s.relname in ('workqueue', 'workqueue_body', 'webhook_events', 'webhook_tombstones',
                         'webhook_id_sequence', 'webhook_gaps', 'webhook_provider', 'webhook_event_refresh',
                         'workqueue_tombstones')
$$;

create function pepsi.reconcile_unchanged(p_stamp bigint default pepsi.reconcile_stamp())
returns boolean
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Whether a pass now would look at what the last one saw: the same stamp,
-- no message running (a running row can become stuck by time alone) and
-- no redelivery waiting to be applied (its row may have been freed by a
-- rollback, which changes no statistics). Tables: reconcile_runs,
-- workqueue, webhook_event_refresh (read).
    select coalesce((select r.stamp = p_stamp from pepsi.reconcile_runs r order by r.run_id desc limit 1), false)
       and not exists (select 1 from pepsi.workqueue w where w.status = 'running')
       and not exists (select 1 from pepsi.webhook_event_refresh r)
$$;

create function pepsi.reconcile(p_now timestamptz default now(), p_trigger text default 'manual',
                                p_limits jsonb default null, p_if_changed boolean default false)
returns table (ran boolean, run_id bigint, findings int, unchanged boolean)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- One reconciliation pass (W-20..W-28; see the top of this change). First
-- the try-lock: when another pass holds it, returns (false, NULL, 0) at
-- once, having done nothing (W-27). Otherwise records a run (p_trigger:
-- schedule, notify or manual), then: redeliveries that found their event
-- busy applied now that its row is free (webhook_event_refresh_apply:
-- the newest one, unless the event was processed meanwhile), lost
-- messages re-injected (with that newest payload), stuck
-- running and paused messages requeued, messages checked against their
-- events, stale pulled events, a batch of digests (W-22), gaps and
-- back-fills, retention; returns (true, the run's id, its new findings).
-- p_limits: the runner's per-stage MAX_RUNTIME and QUEUE_LIMIT
-- ({"stage": {"max_runtime_ms": N, "queue_limit": N}}). Passes are
-- repeatable (W-28): what one misses (a row locked at the time, a batch
-- cut off) the next one sees. The lock is released when the caller's
-- transaction ends. With p_if_changed (the runner's scheduled passes),
-- a pass over data that has not changed since the last pass (the same
-- pepsi.reconcile_stamp(), nothing running) is skipped without a write,
-- returning (false, NULL, 0, true): an idle queue stays idle (D-139,
-- issue 12); reconcile_staleness reads 0 meanwhile.
-- Raises PX003 (no clock, unknown trigger, limits that are not such an
-- object). Tables: reconcile_runs, reconcile_findings,
-- reconcile_settings, workqueue, workqueue_body, webhook_events,
-- webhook_event_refresh, webhook_gaps, webhook_id_sequence,
-- webhook_tombstones, workqueue_tombstones.
declare
    v_s pepsi.reconcile_settings;
    v_run bigint;
    v_n int := 0;
    v_t0 timestamptz := clock_timestamp();
    v_stamp bigint;
begin
    if p_now is null then
        raise exception 'p_now must not be null' using errcode = 'PX003';
    end if;
    if p_trigger is null or p_trigger not in ('schedule', 'notify', 'manual') then
        raise exception 'unknown reconcile trigger "%"', coalesce(p_trigger, '<null>')
            using errcode = 'PX003', hint = 'Use schedule, notify or manual.';
    end if;
    if p_limits is not null and (jsonb_typeof(p_limits) <> 'object' or exists (
            select 1 from jsonb_each(p_limits) l
             where jsonb_typeof(l.value) <> 'object'
                or (l.value ? 'max_runtime_ms' and (l.value->>'max_runtime_ms') !~ '^[0-9]{1,12}$')
                or (l.value ? 'queue_limit' and (l.value->>'queue_limit') !~ '^[0-9]{1,6}$'))) then
        raise exception 'limits must be {"<stage>": {"max_runtime_ms": N, "queue_limit": N}}' using errcode = 'PX003';
    end if;
    if not (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('reconcile') k) then
        return query select false, null::bigint, 0, false;
        return;
    end if;
    v_stamp := pepsi.reconcile_stamp();
    if coalesce(p_if_changed, false) and pepsi.reconcile_unchanged(v_stamp) then
        return query select false, null::bigint, 0, true;
        return;
    end if;
    select * into v_s from pepsi.reconcile_settings;
    insert into pepsi.reconcile_runs as r (trigger, started_at, stamp) values (p_trigger, p_now, v_stamp)
    returning r.run_id into v_run;

    perform pepsi.webhook_event_refresh_apply(null, v_s.batch_limit);
    v_n := v_n + pepsi.reconcile_lost(v_run, p_now, v_s);
    v_n := v_n + pepsi.reconcile_stuck(v_run, p_now, v_s, p_limits);
    v_n := v_n + pepsi.reconcile_links(v_run, p_now, v_s);
    v_n := v_n + pepsi.reconcile_digests(v_run, p_now, v_s);
    v_n := v_n + pepsi.reconcile_gaps(v_run, p_now, v_s);
    perform pepsi.reconcile_retention(p_now, v_s);

    update pepsi.reconcile_runs r
       set finished_at = p_now + (clock_timestamp() - v_t0),
           duration_ms = round((extract(epoch from clock_timestamp() - v_t0) * 1000)::numeric, 3),
           findings = v_n
     where r.run_id = v_run;
    return query select true, v_run, v_n, false;
end
$$;

create view pepsi.reconcile_open as
-- What reconciliation flagged and a person should look at: open findings,
-- newest first (gaps waiting for a retry or a back-fill are open too).
select f.finding_id, f.kind, f.object, f.action, f.provider, f.external_id, f.webhook_event_id,
       f.workqueue_id, f.detail, f.found_at, f.run_id
  from pepsi.reconcile_findings f
 where f.resolved_at is null
 order by f.found_at desc, f.finding_id desc;

comment on view pepsi.reconcile_open is
    'Open reconciliation findings: flagged for a person, or gaps and back-fills under way.';

revoke all on table pepsi.reconcile_settings, pepsi.reconcile_runs, pepsi.reconcile_findings,
                    pepsi.reconcile_open from public;
revoke all on function pepsi.webhook_event_delivered() from public;
revoke all on function pepsi.webhook_event_digest() from public;
revoke all on function pepsi.reconcile_configure(jsonb) from public;
revoke all on function pepsi.reconcile_flag(bigint, timestamptz, text[], jsonb, boolean) from public;
revoke all on function pepsi.reconcile_lost(bigint, timestamptz, pepsi.reconcile_settings) from public;
revoke all on function pepsi.reconcile_stuck(bigint, timestamptz, pepsi.reconcile_settings, jsonb) from public;
revoke all on function pepsi.reconcile_links(bigint, timestamptz, pepsi.reconcile_settings) from public;
revoke all on function pepsi.reconcile_digests(bigint, timestamptz, pepsi.reconcile_settings) from public;
revoke all on function pepsi.reconcile_gaps(bigint, timestamptz, pepsi.reconcile_settings) from public;
revoke all on function pepsi.reconcile_retention(timestamptz, pepsi.reconcile_settings) from public;
revoke all on function pepsi.reconcile_stamp() from public;
revoke all on function pepsi.reconcile_unchanged(bigint) from public;
revoke all on function pepsi.reconcile(timestamptz, text, jsonb, boolean) from public;
grant execute on function pepsi.reconcile(timestamptz, text, jsonb, boolean) to pepsi_runner;
grant select on pepsi.reconcile_settings, pepsi.reconcile_runs, pepsi.reconcile_findings, pepsi.reconcile_open
    to pepsi_reader;

commit;
