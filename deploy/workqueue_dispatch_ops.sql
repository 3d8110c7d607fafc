-- Deploy pepsi:workqueue_dispatch_ops to pg
-- requires: workqueue_results
--
-- The dispatcher's writes besides the claim: giving back rows that never
-- ran, the start-up sweep, the paused sweep and strikes.
--
-- Each takes p_owner_slot int (issue 14): the caller's owner slot,
-- compared with workqueue.owner_slot; 0 by default (every row without a
-- topology); NULL raises PX003. A row of another slot is another runner's:
-- it is never selected, whatever its status or claim (the filter is in
-- each wrapper's row selection; the transition itself is
-- pepsi.workqueue_transition's, one state machine).

begin;

create function pepsi.workqueue_requeue(p_ids bigint[], p_stages text[], p_owner_slot int default 0)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Sets running rows back to pending: ids that were claimed or pipelined to
-- a worker but never ran (D-89, D-90, D-95, shutdown D-08). p_stages[i] is
-- the stage id p_ids[i] was handed out for; a row that has meanwhile moved
-- on (its worker advanced it, then died before answering) is left alone,
-- even if it is running again at its next stage. Returns how many moved.
-- NULL arrays are no ids (0). Raises PX003 when the arrays differ in
-- length. Tables: workqueue (update).
declare
    v_count int;
begin
    if cardinality(p_ids) is distinct from cardinality(p_stages) then
        raise exception 'ids and stages differ in length' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    -- a thin wrapper over workqueue_transition ("do" requeue, issue 13)
    select count(*) filter (where t.outcome = 'ok') into v_count
      from pepsi.workqueue_transition(array(
               select pepsi.transition_of(r.id, r.stage, 'requeue')
                 from (select distinct on (r.id) r.id, r.stage
                         from unnest(p_ids, p_stages) as r(id, stage)
                        where r.id is not null
                          and exists (select 1 from pepsi.workqueue w
                                       where w.workqueue_id = r.id and w.owner_slot = p_owner_slot)) r)) t;
    return v_count;
end
$$;

create function pepsi.workqueue_unclaim(p_claim_ids bigint[], p_owner_slot int default 0)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Gives back the rows of claims whose answers the dispatcher never read
-- (its connection dropped while they ran): every claim carries an id the
-- dispatcher chose before sending it (pepsi.claim_incarnation), so any
-- number of lost claims are given back in one call (issue 12). Rows that
-- have moved on since are not running with that claim id. Returns how
-- many moved. Raises PX003 (p_claim_ids or p_owner_slot NULL).
-- Tables: workqueue (update).
declare
    v_count int;
begin
    if p_claim_ids is null or p_owner_slot is null then
        raise exception 'p_claim_ids and p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    -- a thin wrapper over workqueue_transition ("do" requeue of the rows
    -- running with those claim ids, issue 13)
    select count(*) filter (where t.outcome = 'ok') into v_count
      from pepsi.workqueue_transition(array(
               select pepsi.transition_of(w.workqueue_id, w.stage, 'requeue', p_claim_id => w.claim_id)
                 from pepsi.workqueue w
                where w.status = 'running' and w.claim_id = any(p_claim_ids)
                  and w.owner_slot = p_owner_slot)) t;
    return v_count;
end
$$;

create function pepsi.workqueue_reset_running(p_owner_slot int default 0)
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

create function pepsi.workqueue_release_paused(p_now timestamptz default now(), p_owner_slot int default 0)
returns table (released int, next_timeout timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The paused sweep (D-93): due paused rows become pending; returns how
-- many, and the earliest timeout still ahead (NULL when none), which is
-- when the dispatcher should sweep next. Both parts run in the same
-- transaction, so the rows being released are not counted as ahead (they
-- are pending when the second part reads). The release itself is
-- pepsi.workqueue_release_due, shared with the claims (issue 13). Only
-- rows of owner slot p_owner_slot (issue 14), both parts an index range of
-- workqueue_paused_idx (owner_slot, timeout): another slot's paused rows,
-- due or not, are never read.
-- Raises PX003 (p_now or p_owner_slot NULL). Tables: workqueue (update).
#variable_conflict use_column
declare
    v_released int;
begin
    if p_now is null or p_owner_slot is null then
        raise exception 'p_now and p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    v_released := pepsi.workqueue_release_due(p_now, p_owner_slot);
    return query
    select v_released,
           (select min(w.timeout) from pepsi.workqueue w
             where w.status = 'paused' and w.owner_slot = p_owner_slot and w.timeout > p_now);
end
$$;

create function pepsi.workqueue_defer(p_ids bigint[], p_stages text[], p_until timestamptz, p_reason text,
                                      p_owner_slot int default 0)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Pauses running rows until p_until without blaming them: the worker lost
-- its database connection (status 74, D-100); the paused sweep returns
-- them to the same stage. p_stages[i] is the stage p_ids[i] ran at: a row
-- whose advance committed just before the connection dropped, and that is
-- now running at its next stage, is left alone. state.last_error keeps
-- p_reason (cut to input_limit('reason') bytes). Returns how many rows
-- moved (NULL arrays: none). Raises PX003 (no time, arrays of different
-- lengths, p_owner_slot NULL). Tables: workqueue (update).
declare
    v_count int;
begin
    if p_until is null then
        raise exception 'a deferral needs a time to resume' using errcode = 'PX003';
    end if;
    if cardinality(p_ids) is distinct from cardinality(p_stages) then
        raise exception 'ids and stages differ in length' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    -- a thin wrapper over workqueue_transition ("do" defer, issue 13)
    select count(*) filter (where t.outcome = 'ok') into v_count
      from pepsi.workqueue_transition(array(
               select pepsi.transition_of(r.id, r.stage, 'defer', p_until => p_until, p_reason => p_reason)
                 from (select distinct on (r.id) r.id, r.stage
                         from unnest(p_ids, p_stages) as r(id, stage)
                        where r.id is not null
                          and exists (select 1 from pepsi.workqueue w
                                       where w.workqueue_id = r.id and w.owner_slot = p_owner_slot)) r)) t;
    return v_count;
end
$$;

create function pepsi.workqueue_strike(p_id bigint, p_stage text, p_kind text, p_reason text,
                                       p_now timestamptz default now(), p_owner_slot int default 0)
returns pepsi.workqueue_status
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Charges a strike to the head message of a worker that crashed
-- (p_kind 'crash', D-81) or hung past MAX_RUNTIME ('hang', D-82).
-- First strike: paused for 1 minute (D-84); second: 2 minutes (D-85);
-- third: terminal, failed/crashed after a crash (D-87) or
-- timeout/timed-out after a hang (D-88). state.strikes counts and
-- state.last_error holds p_reason (D-86; cut to input_limit('reason')
-- bytes); a strikes value that is not a count (a producer's initial
-- state) reads as none. Returns the new status; NULL, touching nothing,
-- when the row is not of owner slot p_owner_slot (another slot's, issue
-- 14). Raises PX003 (unknown kind, NULL p_now or p_owner_slot),
-- PX004/PX005.
-- Tables: workqueue (update).
declare
    v record;
begin
    if p_now is null or p_owner_slot is null then
        raise exception 'p_now and p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    if p_kind is null or p_kind not in ('crash', 'hang') then
        raise exception 'unknown strike kind "%"', pepsi.excerpt(p_kind)
            using errcode = 'PX003', hint = 'Use crash or hang.';
    end if;
    if exists (select 1 from pepsi.workqueue w where w.workqueue_id = p_id and w.owner_slot <> p_owner_slot) then
        return null;
    end if;
    -- a thin wrapper over workqueue_transition ("do" strike, issue 13)
    select t.outcome, t.status into v
      from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, p_stage, 'strike', p_kind => p_kind,
                                                                p_reason => p_reason)],
                                      p_now => p_now) t;
    if v.outcome = 'refused' then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    return v.status;
end
$$;

revoke all on function pepsi.workqueue_requeue(bigint[], text[], int) from public;
revoke all on function pepsi.workqueue_unclaim(bigint[], int) from public;
revoke all on function pepsi.workqueue_reset_running(int) from public;
revoke all on function pepsi.workqueue_release_paused(timestamptz, int) from public;
revoke all on function pepsi.workqueue_defer(bigint[], text[], timestamptz, text, int) from public;
revoke all on function pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int) from public;
grant execute on function pepsi.workqueue_requeue(bigint[], text[], int) to pepsi_runner;
grant execute on function pepsi.workqueue_unclaim(bigint[], int) to pepsi_runner;
grant execute on function pepsi.workqueue_reset_running(int) to pepsi_runner;
grant execute on function pepsi.workqueue_release_paused(timestamptz, int) to pepsi_runner;
grant execute on function pepsi.workqueue_defer(bigint[], text[], timestamptz, text, int) to pepsi_runner;
grant execute on function pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int) to pepsi_runner;

commit;
