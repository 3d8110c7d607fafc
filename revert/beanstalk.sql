-- Revert pepsi:beanstalk from pg
--
-- The replaced functions and view back to their previous definitions
-- (copied from deploy/tubes.sql, deploy/workqueue_dispatch_ops.sql,
-- deploy/reconcile.sql and deploy/workqueue.sql; comments, signatures and
-- grants are kept by CREATE OR REPLACE), the anomaly checks' metrics back,
-- then everything the change added dropped.

begin;

create or replace function pepsi.workqueue_reset_running(p_owner_slot int default 0)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The start-up sweep (D-18): every running row of the caller's owner slot
-- (p_owner_slot) was orphaned by an earlier dispatcher of that slot,
-- since the caller holds the slot's dispatcher lock; other slots' running
-- rows are their runners' (issue 14). Back to pending.
-- Returns how many. A thin wrapper over workqueue_transition ("do"
-- requeue of every running row, issue 13). Raises PX003 (p_owner_slot
-- NULL). Tables: workqueue (update).
begin
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    return (select (count(*) filter (where t.outcome = 'ok'))::int
              from pepsi.workqueue_transition(array(
                       select pepsi.transition_of(w.workqueue_id, w.stage, 'requeue')
                         from pepsi.workqueue w
                        where w.status = 'running' and w.owner_slot = p_owner_slot)) t);
end
$$;

create or replace function pepsi.reconcile_stuck(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings,
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

create or replace function pepsi.workqueue_release_due(p_now timestamptz, p_owner_slot int default 0)
returns int
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Releases due paused rows (D-93): every paused row of owner slot
-- p_owner_slot (a runner's slot, issue 14; 0 by default, every row
-- without a topology) whose timeout is at or before p_now becomes
-- pending, its timeout cleared. Returns how many.
-- The one statement that does it (issue 13), for the paused sweep
-- (workqueue_release_paused) and the claims' p_release_paused; an index
-- range scan on workqueue_paused_idx (owner_slot, timeout) that reads
-- this slot's due rows only and finds nothing when none is due. The
-- caller checks p_now and p_owner_slot. Tables: workqueue (update).
declare
    v_n int;
begin
    update pepsi.workqueue w set status = 'pending', timeout = null
     where w.status = 'paused' and w.owner_slot = p_owner_slot and w.timeout <= p_now;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

create or replace view pepsi.tubes as
with recursive live(tube) as (
    -- Loose index scan of workqueue_tube_idx: each step is one probe for
    -- the next tube after the previous one.
    (select w.tube from pepsi.workqueue w order by w.tube limit 1)
    union all
    select (select w.tube from pepsi.workqueue w where w.tube > l.tube order by w.tube limit 1)
      from live l
     where l.tube is not null
),
names(tube) as (
    select l.tube from live l where l.tube is not null
    union
    select tp.tube::text from pepsi.tube_pause tp where tp.paused_until > now()
    union
    select 'default'
)
select n.tube, loc.partition, loc.owner_slot,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'pending') as pending,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'running') as running,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'paused') as paused,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'failed') as failed,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'timeout') as timeout,
       (select tp.paused_until from pepsi.tube_pause tp
         where tp.tube = n.tube and tp.paused_until > now()) as paused_until
  from names n
       cross join lateral pepsi.tube_locate(n.tube) loc;

create or replace function pepsi.tube_stats(p_tube text, p_now timestamptz default now())
returns table (name text, current_jobs_urgent bigint, current_jobs_ready bigint,
               current_jobs_reserved bigint, current_jobs_delayed bigint, current_jobs_buried bigint,
               total_jobs bigint, pause bigint, pause_time_left bigint, partition int, owner_slot int)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats-tube for one tube (issue 14, T-15, T-32), one row:
--   current_jobs_urgent    0: pepsi has no job priorities
--   current_jobs_ready     pending rows
--   current_jobs_reserved  running rows
--   current_jobs_delayed   paused rows (a stage's pause, waiting for their
--                          timeout)
--   current_jobs_buried    failed and timed-out rows (kept for an
--                          operator, like buried jobs)
--   total_jobs             the rows the tube holds now (beanstalkd counts
--                          every job ever put; pepsi keeps no counter)
--   pause                  seconds the tube's pause was set for, 0 when
--                          not paused at p_now
--   pause_time_left        whole seconds until it ends, 0 when not paused
--   partition, owner_slot  where it lives (pepsi.tube_locate)
-- Raises PX006 for an invalid name and PX043 (NOT_FOUND) for a valid one
-- that does not exist: no row, no pause in force, and not default. A
-- look-up never creates a tube (T-15): nothing is written.
-- Tables: workqueue, tube_pause, topology, partition_map (read).
#variable_conflict use_column
declare
    v_counts bigint[];
    v_pause record;
begin
    perform pepsi.tube_check(p_tube);
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select array[count(*) filter (where w.status = 'pending'), count(*) filter (where w.status = 'running'),
                 count(*) filter (where w.status = 'paused'),
                 count(*) filter (where w.status in ('failed', 'timeout')), count(*)]
      into v_counts
      from pepsi.workqueue w where w.tube = p_tube;
    select tp.paused_at, tp.paused_until into v_pause
      from pepsi.tube_pause tp where tp.tube = p_tube and tp.paused_until > p_now;
    if v_counts[5] = 0 and v_pause.paused_until is null and p_tube <> 'default' then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    return query
    select p_tube, 0::bigint, v_counts[1], v_counts[2], v_counts[3], v_counts[4], v_counts[5],
           coalesce(extract(epoch from v_pause.paused_until - v_pause.paused_at)::bigint, 0),
           coalesce(floor(extract(epoch from v_pause.paused_until - p_now))::bigint, 0),
           loc.partition, loc.owner_slot
      from pepsi.tube_locate(p_tube) loc;
end
$$;

create or replace function pepsi.tube_pause(p_tube text, p_seconds int, p_now timestamptz default now())
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's pause-tube (issue 14, T-33): no row of p_tube is claimed
-- until p_now + p_seconds; returns that time. 0 ends a pause at once
-- (returns NULL) and notifies the workqueue channel, so the runner claims
-- the waiting rows now. A pause ends by itself when its time comes: the
-- runner's next claim after it takes the rows (at the latest its
-- POLL_INTERVAL heartbeat), and the expired row is swept. Pausing again
-- replaces the pause. Expired pauses of every tube are swept first.
-- Raises PX006 for an invalid name, PX003 for p_seconds NULL, negative or
-- over input_limit('pause_seconds') (a year), and PX043 (NOT_FOUND) for a
-- tube that does not exist (no row, no pause in force, not default),
-- leaving nothing behind: a pause never creates a tube. A tube whose last
-- row finishes while it is paused keeps its pause until it expires.
-- Tables: tube_pause (insert, update, delete); workqueue (read).
#variable_conflict use_column
declare
    v_max bigint := pepsi.input_limit('pause_seconds');
    v_until timestamptz;
begin
    perform pepsi.tube_check(p_tube);
    if p_seconds is null or p_seconds < 0 or p_seconds > v_max then
        raise exception 'pause must be 0 to % seconds, not %', v_max, coalesce(p_seconds::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    delete from pepsi.tube_pause tp where tp.paused_until <= p_now;
    if p_tube <> 'default'
       and not exists (select 1 from pepsi.workqueue w where w.tube = p_tube)
       and not exists (select 1 from pepsi.tube_pause tp where tp.tube = p_tube) then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    if p_seconds = 0 then
        delete from pepsi.tube_pause tp where tp.tube = p_tube;
        notify workqueue;
        return null;
    end if;
    v_until := p_now + make_interval(secs => p_seconds);
    insert into pepsi.tube_pause as tp (tube, paused_at, paused_until)
    values (p_tube, p_now, v_until)
        on conflict (tube) do update set paused_at = excluded.paused_at, paused_until = excluded.paused_until;
    return v_until;
end
$$;

update pepsi.anomaly_check
   set metric = replace(metric, 'on q.stage <> ''beanstalk'' and q.status = ', 'on q.status = '),
       updated_at = now()
 where name in ('oldest_pending_message', 'oldest_paused_message', 'longest_running_message', 'failed_messages');

drop function pepsi.beanstalk_stats(timestamptz), pepsi.beanstalk_list_tubes(),
    pepsi.beanstalk_stats_tube(text, timestamptz), pepsi.beanstalk_stats_job(bigint, timestamptz),
    pepsi.beanstalk_kick_job(bigint), pepsi.beanstalk_kick(text, bigint), pepsi.beanstalk_peek_state(text, text),
    pepsi.beanstalk_peek(bigint), pepsi.beanstalk_touch(bigint, bigint, timestamptz),
    pepsi.beanstalk_bury(bigint, bigint, bigint), pepsi.beanstalk_release(bigint, bigint, bigint, bigint),
    pepsi.beanstalk_delete(bigint, bigint), pepsi.beanstalk_reserve_job(bigint, bigint, timestamptz),
    pepsi.beanstalk_reserve(bigint, text[], timestamptz), pepsi.beanstalk_take(bigint, bigint, timestamptz),
    pepsi.beanstalk_put(text, bigint, bigint, bigint, bytea), pepsi.beanstalk_ignore(bigint, bigint, text),
    pepsi.beanstalk_watch(bigint, bigint, text), pepsi.beanstalk_use(bigint, bigint, text),
    pepsi.beanstalk_session_close(bigint, bigint), pepsi.beanstalk_requeue(bigint[], text, timestamptz),
    pepsi.beanstalk_session_lock(bigint, bigint), pepsi.beanstalk_session_open(bigint),
    pepsi.beanstalk_frontend_start(text), pepsi.beanstalk_reap(), pepsi.beanstalk_count(jsonb, text, jsonb),
    pepsi.beanstalk_frontend_alive(bigint), pepsi.beanstalk_lock_class(), pepsi.beanstalk_stage();

-- pepsi.messages as workqueue_enqueue_options left it (CREATE OR REPLACE
-- cannot drop a column): dropped and made again, with its grant and the
-- comments of the view and its columns
drop view pepsi.messages;
create view pepsi.messages as
select w.workqueue_id, w.tube, w.stage, w.status, w.origin_user, w.origin_addr,
       w.envelope_sender, w.recipients, w.sender_key, w.header_from, w.subject,
       w.state, w.arrived_at, w.claimed_at, w.claim_id, w.timeout,
       w.webhook_event_id, w.partition, w.owner_slot,
       (select octet_length(b.body) from pepsi.workqueue_body b where b.body_id = w.body_id) as body_bytes,
       w.priority, w.dedupe_key
  from pepsi.workqueue w;
revoke all on pepsi.messages from public;
grant select on pepsi.messages to pepsi_reader;
comment on view pepsi.messages is 'Every queued message''s envelope, state and place in the queue, never its body (issue 15): what pepsi_reader and pepsi_operator read of a message.';
comment on column pepsi.messages.workqueue_id is 'The message''s id.';
comment on column pepsi.messages.tube is 'The named queue the message belongs to (default ''default'').';
comment on column pepsi.messages.stage is 'The stage it waits at, runs at, or failed at.';
comment on column pepsi.messages.status is 'pending, running, paused (retry or run_at later), failed or timeout.';
comment on column pepsi.messages.origin_user is 'The authenticated user that sent it, when known.';
comment on column pepsi.messages.origin_addr is 'The client address it came from, when known.';
comment on column pepsi.messages.envelope_sender is 'The envelope sender (return path).';
comment on column pepsi.messages.recipients is 'The envelope recipients.';
comment on column pepsi.messages.sender_key is 'The key fair scheduling groups senders by (origin user, address or envelope sender).';
comment on column pepsi.messages.header_from is 'The From header, clipped.';
comment on column pepsi.messages.subject is 'The Subject header, clipped.';
comment on column pepsi.messages.state is 'The message''s JSON state: hops, strikes, failure class, last error, what stages recorded.';
comment on column pepsi.messages.arrived_at is 'When it was injected.';
comment on column pepsi.messages.claimed_at is 'When a dispatcher last claimed it (running rows).';
comment on column pepsi.messages.claim_id is 'The claim that holds it while running.';
comment on column pepsi.messages.timeout is 'Paused rows: when they become due; running rows: when MAX_RUNTIME runs out.';
comment on column pepsi.messages.webhook_event_id is 'The webhook event it carries, if any (pepsi.webhook_events).';
comment on column pepsi.messages.partition is 'The tube''s partition (pepsi.tube_partition).';
comment on column pepsi.messages.owner_slot is 'The owner slot whose dispatcher claims it.';
comment on column pepsi.messages.body_bytes is 'The body''s size in bytes (NULL: no body); the body itself is not readable here.';
comment on column pepsi.messages.priority is 'Within a stage, a lower value is claimed first, then by id (issue 16; -1000..1000, default 0).';
comment on column pepsi.messages.dedupe_key is 'The insert-once key it was injected with (issue 16): while it is here, an inject with that key returns its id.';

drop table pepsi.beanstalk_ref;
drop table pepsi.beanstalk_session;
drop table pepsi.beanstalk_frontend;

drop index pepsi.workqueue_bs_ready_idx;
drop index pepsi.workqueue_bs_delayed_idx;
drop index pepsi.workqueue_bs_buried_idx;
drop index pepsi.workqueue_bs_ttr_idx;
drop index pepsi.workqueue_bs_reserved_idx;
alter table pepsi.workqueue drop column bs_priority;

commit;
