-- Deploy pepsi:workqueue_claim to pg
-- requires: workqueue
-- requires: tubes
-- requires: stage_pause

begin;

create sequence pepsi.claim_incarnation_seq;

create function pepsi.claim_incarnation()
returns bigint
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A number no dispatcher has had before: its claims are numbered
-- incarnation * 2^40 + n, so a claim id is known before the claim is sent
-- and stays unique across restarts (issue 12). Tables: none (a sequence).
    select nextval('pepsi.claim_incarnation_seq')
$$;

create function pepsi.workqueue_claim(p_stages text[], p_caps int[], p_now timestamptz default now(),
                                      p_release_paused boolean default false, p_claim_id bigint default null,
                                      p_owner_slot int default 0)
returns table (workqueue_id bigint, stage text, sender_key text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The plain oldest-first claim (D-38, D-41): for every stage in p_stages,
-- up to the matching p_caps entry of its oldest pending rows become
-- running, all in one UPDATE ... RETURNING. Returns the claimed rows.
-- p_owner_slot (issue 14): only rows of that owner slot, the caller's
-- (workqueue.owner_slot; 0 by default: every row without a topology, and
-- slot 0's with one). One dispatcher per slot calls this, serially (D-39,
-- D-40), and the slots' rows are disjoint, so no two claims compete for a
-- row: it needs no FOR UPDATE SKIP LOCKED. Each stage's scan is a LATERAL
-- subquery whose ORDER BY workqueue_id LIMIT cap stops in the partial
-- index workqueue_pending_idx (stage, owner_slot, workqueue_id) after cap
-- rows, however deep the backlog, this slot's or another's, and however
-- many partitions the slot owns: a claim costs its caps plus one index
-- probe per stage.
-- With p_release_paused, due paused rows of the slot first become pending
-- (D-93), so that the dispatcher's POLL_INTERVAL heartbeat is one round
-- trip that is also the paused sweep; the probe is an index range scan on
-- workqueue_paused_idx (owner_slot, timeout) that finds nothing when
-- nothing is due.
-- p_claim_id is stored with each row: pepsi.workqueue_unclaim gives back
-- the rows of a claim whose answer was lost. p_now is claimed_at and the
-- paused rows' clock: the dispatcher leaves it to the database, so that
-- one clock decides (issue 12); tests move it.
-- NULL stage and cap arrays claim nothing. Raises PX003 when the arrays differ in
-- length, a cap is NULL or < 0, a stage is NULL or listed twice, or p_now
-- or p_owner_slot is NULL.
-- A paused tube's rows (pepsi.tube_pause, issue 14) are skipped until
-- p_now reaches the pause's end; with p_release_paused expired pauses are
-- swept (pepsi.tube_pause_current). The check is a sub-select on the
-- row's id behind "v_paused is null", so that with no tube paused the
-- scan stays index-only and pays nothing; while one is, each row scanned
-- costs a primary-key probe (the scan steps over the paused tube's rows).
-- A paused stage (pepsi.workqueue_pause_stage, issue 16) is claimed
-- as if its cap were 0.
-- Tables: workqueue (update); tube_pause (read; delete with
-- p_release_paused); stage_pause (read).
#variable_conflict use_column
declare
    v_paused text[]; -- tubes paused at p_now (issue 14), NULL when none
begin
    if cardinality(p_stages) is distinct from cardinality(p_caps) then
        raise exception 'stages and caps differ in length (% and %)',
            coalesce(cardinality(p_stages)::text, '<null>'), coalesce(cardinality(p_caps)::text, '<null>')
            using errcode = 'PX003';
    end if;
    if exists (select 1 from unnest(p_caps) c where c is null or c < 0) then
        raise exception 'caps must be zero or more' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    if array_position(p_stages, null) is not null then
        raise exception 'a stage is NULL' using errcode = 'PX003';
    end if;
    if cardinality(p_stages) > 1
       and (select count(distinct s) from unnest(p_stages) s) <> cardinality(p_stages) then
        raise exception 'a stage is listed twice' using errcode = 'PX003';
    end if;

    -- A paused stage (pepsi.stage_pause, issue 16) is not claimed: its cap
    -- becomes 0. With no stage paused this is one probe of an empty table.
    if exists (select 1 from pepsi.stage_pause) then
        p_caps := pepsi.stage_pause_caps(p_stages, p_caps);
    end if;
    if p_release_paused then
        perform pepsi.workqueue_release_due(p_now, p_owner_slot);
    end if;
    v_paused := pepsi.tube_pause_current(p_now, p_release_paused);

    return query
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
      from (select q.workqueue_id as id
              from unnest(p_stages, p_caps) as s(stage, cap)
                   cross join lateral (
                       select q.workqueue_id from pepsi.workqueue q
                        where q.stage = s.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                        and (v_paused is null or not exists (
                             select 1 from pepsi.workqueue t
                              where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                        order by q.workqueue_id
                        limit s.cap) q) picked
     where w.workqueue_id = picked.id and w.status = 'pending'
    returning w.workqueue_id, w.stage, w.sender_key;
end
$$;

revoke all on function pepsi.claim_incarnation() from public;
revoke all on function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int) from public;
revoke all on sequence pepsi.claim_incarnation_seq from public;
grant execute on function pepsi.claim_incarnation() to pepsi_runner;
grant execute on function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int) to pepsi_runner;

commit;
