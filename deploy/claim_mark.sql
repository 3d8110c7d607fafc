-- Deploy pepsi:claim_mark to pg
-- requires: workqueue_enqueue_options
-- requires: xmin_horizon
-- requires: comments
--
-- Claims that do not walk the dead head of a stage (issue 19). While a
-- snapshot is held open (a long report, a forgotten BEGIN, a lagging
-- standby's feedback), no row version the pipeline leaves behind can be
-- removed: every row that left `pending` keeps its entry at the head of
-- the claim indexes, pointing at a tuple the old snapshot may still see,
-- so neither pruning nor the btree's LP_DEAD hints take it away. Each
-- claim walked all of them, with a heap visit each: 79 ms a claim at 80 to
-- 100 s of a 120 s hold, against 3.8 ms before it (docs/claim-mark.md).
--
-- A per-stage mark, (priority, workqueue_id), where the claim's scan
-- starts. A mark can only delay a row, never lose it:
--  * It is used only while the head of the stage is found dead: once a
--    second (pepsi.claim_mark_refresh) a claim looks for the stage's lowest
--    pending row from the head, counting the index entries it walks on
--    the way (pg_stat_get_xact_tuples_returned). Fewer than
--    claim_mark_dead_bound() dead entries: no mark, and the claims are
--    exactly what they were. More: the mark is that lowest pending row's
--    key, less claim_mark_slack() ids.
--  * That once-a-second walk from the head is what makes it safe. A row
--    that becomes pending below the mark (a requeue, a retry, a worker
--    that commits out of order, an inject whose id was taken before a
--    later one committed, a lower priority) is not claimed while the mark
--    stands, and the next refresh, at most a second later, sets the mark
--    at or below it. So a mark delays such a row by a second at most, and
--    only while the stage's head is dead; rows are never lost.
--  * After each claim the mark moves up, without a walk, to the row the
--    claim's own read saw next (the plain claim: past the last row it
--    took; the fair claim: the row one past its FIFO share), less the
--    slack, so that hops committed a little out of order are not delayed
--    at all.
-- The plain claim's scan and the fair claim's FIFO share start at the
-- mark (a row comparison, a start key of workqueue_pending_idx). The fair
-- claim's sender probes read workqueue_pending_sender_idx, where the mark
-- is not a start key but a condition the btree checks on each entry
-- before any heap visit: the dead entries below it are stepped over
-- within the index pages.
-- A mark lives in the claiming session (a setting, claim_mark_key): one
-- dispatcher claims for an owner slot, serially, on one connection (D-39,
-- D-40), and a table row written at every claim would pile up a version
-- per claim while the snapshot is held, the very thing marks work around.
-- Each refresh also writes pepsi.claim_mark (UNLOGGED: a crash empties
-- it), where DBAs see it and the fair claim reads its list of senders.

begin;

create unlogged table pepsi.claim_mark (
    stage         text        not null,
    owner_slot    int         not null,
    mark_priority smallint,
    mark_id       bigint,
    refreshed_at  timestamptz not null,
    dead_at_head  bigint      not null,
    senders       text[],
    sender_priority smallint[],
    sender_id     bigint[],
    primary key (stage, owner_slot),
    constraint claim_mark_both check ((mark_priority is null) = (mark_id is null)),
    constraint claim_mark_senders check (cardinality(senders) = cardinality(sender_priority)
                                         and cardinality(senders) = cardinality(sender_id))
);

comment on table pepsi.claim_mark is
    'The last refresh of each stage''s claim mark (issue 19), once a second, by a walk from the head: whether the head is dead, the mark it set and the fair claim''s list of senders. The claiming session moves its own copy of the mark at every claim (pepsi.claim_mark_key); a mark delays a row below it by a second at most and never loses it. Empty after a crash (UNLOGGED): no marks.';
comment on column pepsi.claim_mark.stage is
    'The stage whose claims the mark is for.';
comment on column pepsi.claim_mark.owner_slot is
    'The owner slot (issue 14) whose dispatcher claims with the mark.';
comment on column pepsi.claim_mark.mark_priority is
    'With mark_id, the (priority, workqueue_id) key where the claims start, as the last refresh set it; NULL: no mark, the claims start at the head.';
comment on column pepsi.claim_mark.mark_id is
    'With mark_priority, the key where the claims start; NULL: no mark.';
comment on column pepsi.claim_mark.refreshed_at is
    'When a walk from the head last found something new (clock_timestamp()): a walk that finds what the last one found writes nothing, so that an idle queue writes no row (D-139). Walks run about once a second, in a claim.';
comment on column pepsi.claim_mark.senders is
    'With a mark, the senders with pending rows at the last refresh, in key order (at most claim_mark_sender_bound(); NULL: more, or no mark): the fair claim''s window reads each from its own start key instead of walking the dead entries of the sender index to find it.';
comment on column pepsi.claim_mark.sender_priority is
    'With sender_id, each sender''s start key: its lowest pending row at the last refresh, less the slack.';
comment on column pepsi.claim_mark.sender_id is
    'With sender_priority, each sender''s start key.';
comment on column pepsi.claim_mark.dead_at_head is
    'How many index entries of rows no longer pending the walk that wrote the row stepped over before the lowest pending row; above claim_mark_dead_bound() the mark is used. Without a mark, a new count alone is not written.';

revoke all on pepsi.claim_mark from public;
grant select on pepsi.claim_mark to pepsi_reader;

create function pepsi.claim_mark_dead_bound()
returns int
language sql immutable parallel safe
as $$
-- Below this many dead entries the head costs less than a mark's upkeep
-- (a walk of 1,000 entries is about 0.2 ms), and a mark would only delay
-- the rows below it.
    select 1000
$$;

create function pepsi.claim_mark_slack()
returns int
language sql immutable parallel safe
as $$
-- How far below the next pending row a mark is set, in ids: hops
-- committed that much out of order are claimed at once (PARALLELISM x
-- QUEUE_LIMIT rows are in flight at a stage), and a claim walks at most
-- that many dead entries more, each a heap visit (about 3 µs under a
-- held snapshot).
    select 256
$$;

create function pepsi.claim_mark_sender_bound()
returns int
language sql immutable parallel safe
as $$
-- The most senders a refresh lists for the fair claim: listing them is a
-- probe each, once a second. A stage with more keeps its fair claim
-- walking (within the index pages, past the mark).
    select 256
$$;

create function pepsi.claim_mark_key(p_stage text, p_owner_slot int)
returns text
language sql immutable parallel safe
as $$
-- The name of the session setting that holds a stage's mark. The marks a
-- claim moves live in the claiming session, not in a table: one
-- dispatcher claims for an owner slot, serially, on one connection (D-39,
-- D-40), and a table row written at every claim would itself pile up a
-- version per claim while a snapshot is held (the thing marks work
-- around). A new session starts without marks and refreshes them.
-- (p_owner_slot::text, not "text || int": that operator is only stable,
-- and an immutable function calling it is not inlined: 18 µs a call.)
    select 'pepsi_claim_mark.m' || md5(p_stage || '/' || p_owner_slot::text)
$$;

create function pepsi.claim_mark_set(p_stage text, p_owner_slot int, p_due_at timestamptz,
                                     p_mark_priority smallint, p_mark_id bigint)
returns text
language sql
as $$
-- This session's mark of a stage: 'next refresh due (epoch ms)|priority|
-- id', the last two empty for none. A rolled-back transaction puts back the one
-- before (settings are transactional). Returns the setting: a function of
-- one SELECT whose type is its own is inlined where it is called (as void
-- it was planned anew in every transaction: 0.2 ms a claim).
    select set_config(pepsi.claim_mark_key(p_stage, p_owner_slot),
                      concat_ws('|', floor(extract(epoch from p_due_at) * 1000)::bigint,
                                coalesce(p_mark_priority::text, ''), coalesce(p_mark_id::text, '')),
                      false)
$$;

create function pepsi.claim_mark_interval_ms()
returns int
language sql stable parallel safe
as $$
-- How often a stage's mark is refreshed by a walk from its head: once a
-- second; the setting pepsi.claim_mark_interval_ms (tests) overrides it.
    select coalesce(nullif(current_setting('pepsi.claim_mark_interval_ms', true), '')::int, 1000)
$$;

create function pepsi.claim_mark_refresh(p_stage text, p_owner_slot int, p_now timestamptz,
                                         p_mark_priority smallint, p_mark_id bigint)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
-- The walk must be a scan of workqueue_pending_idx in its order (what the
-- claims do, and what the counter counts): with some statistics the
-- planner took the sender index and a sort instead, and the counter,
-- still, said the head was live.
set enable_sort = off
set enable_seqscan = off
set enable_bitmapscan = off
as $$
-- Once a second per stage and owner slot (called by claim_mark_get): finds
-- the lowest pending row from the head of workqueue_pending_idx, as the
-- claims did before marks, and counts the entries the scan returned on
-- the way (this backend's own counter of the index, read before and
-- after). Many dead entries: the mark is that row's key less the slack;
-- none pending: the mark stays where the claims moved it. Few: no mark.
-- With track_counts off the counter stays still and no mark is ever used.
-- p_mark_priority, p_mark_id: the session's mark now (NULL: none), kept
-- when the stage has no pending row. The result goes to this session's
-- mark (claim_mark_key) and to the table, where DBAs read it.
declare
    v_before bigint;
    v_walked bigint;
    v_p smallint;
    v_id bigint;
    v_on boolean;
    v_senders text[];
    v_sender_p smallint[];
    v_sender_id bigint[];
    v_started timestamptz;
begin
    v_started := clock_timestamp();
    v_before := pg_stat_get_xact_tuples_returned('pepsi.workqueue_pending_idx'::regclass);
    select q.priority, q.workqueue_id into v_p, v_id
      from pepsi.workqueue q
     where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
     order by q.priority, q.workqueue_id
     limit 1;
    v_walked := pg_stat_get_xact_tuples_returned('pepsi.workqueue_pending_idx'::regclass) - v_before
                - (case when v_id is null then 0 else 1 end);
    v_on := v_walked > pepsi.claim_mark_dead_bound();
    -- The fair claim's senders: a skip-scan of the sender index from the
    -- mark (each sender's first pending row at or past it), stopped one
    -- past the bound. Each sender's start is that row's key less the slack.
    if v_on and v_id is not null then
        with recursive s(sender_key, priority, id, k) as (
            (select q.sender_key, q.priority, q.workqueue_id, 1
               from pepsi.workqueue q
              where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                and q.sender_key > '' and (q.priority, q.workqueue_id) >= (v_p, v_id)
              order by q.sender_key, q.priority, q.workqueue_id
              limit 1)
            union all
            select n.sender_key, n.priority, n.workqueue_id, s.k + 1
              from s cross join lateral (
                       select q.sender_key, q.priority, q.workqueue_id
                         from pepsi.workqueue q
                        where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                          and q.sender_key > s.sender_key and (q.priority, q.workqueue_id) >= (v_p, v_id)
                        order by q.sender_key, q.priority, q.workqueue_id
                        limit 1) n
             where s.k <= pepsi.claim_mark_sender_bound()
        )
        select array_agg(s.sender_key order by s.sender_key), array_agg(s.priority order by s.sender_key),
               array_agg(s.id - pepsi.claim_mark_slack() order by s.sender_key)
          into v_senders, v_sender_p, v_sender_id
          from s;
        if cardinality(v_senders) > pepsi.claim_mark_sender_bound() then
            v_senders := null;
            v_sender_p := null;
            v_sender_id := null;
        end if;
    end if;
    if not v_on then
        v_p := null;
        v_id := null;
    elsif v_id is null then
        v_p := p_mark_priority;
        v_id := p_mark_id;
    else
        v_id := v_id - pepsi.claim_mark_slack();
    end if;
    -- The next refresh is due after the interval, or after 20 times what
    -- this one took when that is longer (at most 10 s): a walk over a dead
    -- head of 200,000 entries takes about 0.1 s a stage, and it must not
    -- take the claimer's time over.
    perform pepsi.claim_mark_set(p_stage, p_owner_slot,
                                 p_now + greatest(pepsi.claim_mark_interval_ms() * interval '1 ms',
                                                  least((clock_timestamp() - v_started) * 20, interval '10 s')),
                                 v_p, v_id);
    insert into pepsi.claim_mark as m (stage, owner_slot, mark_priority, mark_id, refreshed_at, dead_at_head,
                                       senders, sender_priority, sender_id)
    values (p_stage, p_owner_slot, v_p, v_id, p_now, v_walked, v_senders, v_sender_p, v_sender_id)
        on conflict (stage, owner_slot) do update
       set mark_priority = excluded.mark_priority, mark_id = excluded.mark_id,
           refreshed_at = excluded.refreshed_at, dead_at_head = excluded.dead_at_head,
           senders = excluded.senders, sender_priority = excluded.sender_priority,
           sender_id = excluded.sender_id
     -- An idle queue writes no row (D-139): a refresh that finds what the
     -- last one found leaves the row as it is; without a mark, a new count
     -- of dead entries alone (a vacuum, a scan's LP_DEAD hints) is not news.
     where (m.mark_priority, m.mark_id, m.senders, m.sender_priority, m.sender_id)
           is distinct from (excluded.mark_priority, excluded.mark_id, excluded.senders,
                             excluded.sender_priority, excluded.sender_id)
        or (excluded.mark_id is not null and m.dead_at_head is distinct from excluded.dead_at_head);
end
$$;

create function pepsi.claim_mark_get(p_stages text[], p_owner_slot int,
                                     out mark_priority smallint[], out mark_id bigint[])
language plpgsql
-- Not security definer: only the claims (security definer) call it, and
-- entering a definer frame with its own search_path cost more than its
-- work. Every name is schema-qualified or in pg_catalog.
as $$
-- This session's marks of p_stages (NULL entries: none), in p_stages'
-- order, after refreshing those whose refresh is due (or due implausibly
-- far ahead: a clock set back does not stop the refreshes).
-- Last, it writes the slot's summary (claim_mark_skip), which lets the
-- claims skip this call until a refresh is due while none of their stages
-- has a mark.
declare
    v_now timestamptz := clock_timestamp();
    v_now_ms bigint := floor(extract(epoch from v_now) * 1000)::bigint;
    v_i int;
    v_parts text[];
    v_p smallint;
    v_id bigint;
    v_due bigint;             -- the earliest refresh due among p_stages (epoch ms)
    v_marked text[];          -- the slot's marked stages, from the summary
begin
    v_marked := string_to_array(split_part(current_setting(pepsi.claim_mark_key('', p_owner_slot), true), '|', 2), ',');
    for v_i in 1 .. coalesce(cardinality(p_stages), 0) loop
        v_parts := string_to_array(current_setting(pepsi.claim_mark_key(p_stages[v_i], p_owner_slot), true), '|');
        v_p := nullif(v_parts[2], '')::smallint;
        v_id := nullif(v_parts[3], '')::bigint;
        if cardinality(v_parts) is distinct from 3
           or v_parts[1]::bigint not between v_now_ms + 1 and v_now_ms + 10000 + pepsi.claim_mark_interval_ms() then
            perform pepsi.claim_mark_refresh(p_stages[v_i], p_owner_slot, v_now, v_p, v_id);
            v_parts := string_to_array(current_setting(pepsi.claim_mark_key(p_stages[v_i], p_owner_slot), true), '|');
            v_p := nullif(v_parts[2], '')::smallint;
            v_id := nullif(v_parts[3], '')::bigint;
        end if;
        mark_priority[v_i] := v_p;
        mark_id[v_i] := v_id;
        v_due := least(v_due, v_parts[1]::bigint);
        v_marked := array_remove(v_marked, p_stages[v_i]);
        if v_id is not null then
            v_marked := v_marked || p_stages[v_i];
        end if;
    end loop;
    perform set_config(pepsi.claim_mark_key('', p_owner_slot),
                       coalesce(v_due, 0) || '|' || coalesce(array_to_string(v_marked, ','), ''), false);
end
$$;

create function pepsi.claim_mark_skip(p_stages text[], p_owner_slot int)
returns boolean
language sql
volatile
as $$
-- Whether a claim of p_stages may go without claim_mark_get (issue 19):
-- no refresh of the stages it last saw is due yet, and none of p_stages
-- has a mark (the slot's summary, claim_mark_key('', slot): 'earliest
-- refresh due (epoch ms)|marked stages', written by claim_mark_get; a
-- stage name is never empty and has no comma). In normal mode nearly
-- every claim skips it: the call cost 0.06-0.1 ms a claim, on the one
-- backend that claims for the slot. A stage not seen at the last call is
-- refreshed at the next one, when the earliest due comes (a second at
-- most): until then it has no mark, which only means a read from its head.
-- One expression, no FROM, volatile like clock_timestamp(): the planner
-- inlines it into the claim's IF.
    select coalesce(nullif(split_part(current_setting(pepsi.claim_mark_key('', p_owner_slot), true), '|', 1), '')::bigint
                        between floor(extract(epoch from clock_timestamp()) * 1000)::bigint + 1
                            and floor(extract(epoch from clock_timestamp()) * 1000)::bigint + 10000
                                + pepsi.claim_mark_interval_ms()
                    and not coalesce(p_stages && string_to_array(nullif(split_part(current_setting(
                                 pepsi.claim_mark_key('', p_owner_slot), true), '|', 2), ''), ','), false), false)
$$;

create function pepsi.claim_mark_advance(p_stages text[], p_owner_slot int,
                                         p_mark_priority smallint[], p_mark_id bigint[],
                                         p_claimed_stages text[], p_claimed_priorities smallint[],
                                         p_claimed_ids bigint[], p_next_stages text[] default null,
                                         p_next_priorities smallint[] default null,
                                         p_next_ids bigint[] default null)
returns void
language plpgsql
-- Not security definer: only the claims (security definer) call it, and
-- entering a definer frame with its own search_path cost more than its
-- work. Every name is schema-qualified or in pg_catalog.
as $$
-- After a claim, for each stage with a mark, the mark moves up, less the
-- slack, to:
--  * the stage's next row (p_next_*: the fair claim's FIFO read, one row
--    past its share: the lowest pending row at or past the mark that the
--    share did not take);
--  * else past the last row the claim took there: the plain claim takes
--    the lowest pending rows at or past the mark, so its next row is past
--    them; the fair claim's FIFO read found no row past its share, so none
--    is left at or past the mark.
-- Either is at or below the stage's next pending row, never above it: no
-- walk from the mark is needed (it was a third of the slack's heap visits
-- per claim under a held snapshot). The mark is this session's
-- (claim_mark_set): it moves at every claim without writing a row
-- version.
declare
    v_i int;
    v_p smallint;
    v_id bigint;
begin
    for v_i in 1 .. coalesce(cardinality(p_stages), 0) loop
        continue when p_mark_id[v_i] is null;
        select n.priority, n.id - pepsi.claim_mark_slack() into v_p, v_id
          from unnest(p_next_stages, p_next_priorities, p_next_ids) as n(stage, priority, id)
         where n.stage = p_stages[v_i];
        if not found then
            select c.priority, c.id + 1 - pepsi.claim_mark_slack() into v_p, v_id
              from unnest(p_claimed_stages, p_claimed_priorities, p_claimed_ids) as c(stage, priority, id)
             where c.stage = p_stages[v_i]
             order by c.priority desc, c.id desc
             limit 1;
            continue when not found;
        end if;
        if (v_p, v_id) > (p_mark_priority[v_i], p_mark_id[v_i]) then
            perform pepsi.claim_mark_set(p_stages[v_i], p_owner_slot,
                                         to_timestamp(split_part(current_setting(
                                             pepsi.claim_mark_key(p_stages[v_i], p_owner_slot)), '|', 1)::bigint / 1000.0),
                                         v_p, v_id);
        end if;
    end loop;
end
$$;

create or replace function pepsi.workqueue_claim(p_stages text[], p_caps int[], p_now timestamptz default now(),
                                      p_release_paused boolean default false, p_claim_id bigint default null,
                                      p_owner_slot int default 0)
returns table (workqueue_id bigint, stage text, sender_key text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
-- As in workqueue_claim_fair: the read is the front of an index range in
-- its order, never a whole range sorted, whatever the statistics say.
set enable_sort = off
set enable_bitmapscan = off
set jit = off
as $$
-- The plain oldest-first claim (D-38, D-41): for every stage in p_stages,
-- up to the matching p_caps entry of its pending rows, lowest priority
-- first and oldest first within a priority (issue 16), become
-- running, all in one UPDATE ... RETURNING. Returns the claimed rows.
-- p_owner_slot (issue 14): only rows of that owner slot, the caller's
-- (workqueue.owner_slot; 0 by default: every row without a topology, and
-- slot 0's with one). One dispatcher per slot calls this, serially (D-39,
-- D-40), and the slots' rows are disjoint, so no two claims compete for a
-- row: it needs no FOR UPDATE SKIP LOCKED. Each stage's scan is a LATERAL
-- subquery whose ORDER BY priority, workqueue_id LIMIT cap stops in the
-- partial index workqueue_pending_idx (stage, owner_slot, priority,
-- workqueue_id) after cap
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
-- Each stage's scan starts at its mark (pepsi.claim_mark, issue 19) while
-- its head is dead: a row below the mark waits for the next refresh, a
-- second at most; the claim then moves the mark (claim_mark_advance).
-- Tables: workqueue (update); tube_pause (read; delete with
-- p_release_paused); stage_pause (read); claim_mark (read, write).
#variable_conflict use_column
declare
    v_paused text[]; -- tubes paused at p_now (issue 14), NULL when none
    v_mark_p smallint[]; -- each stage's mark (claim_mark), NULL entries: none
    v_mark_id bigint[];
    v_ids bigint[];      -- the rows claimed, their stages, senders and priorities
    v_st text[];
    v_sk text[];
    v_pr smallint[];
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
    if not pepsi.claim_mark_skip(p_stages, p_owner_slot) then
        select m.mark_priority, m.mark_id into v_mark_p, v_mark_id
          from pepsi.claim_mark_get(p_stages, p_owner_slot) m;
    end if;

    with claimed as (
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
      from (select q.workqueue_id as id, 'pending'::pepsi.workqueue_status as seen
              from unnest(p_stages, p_caps, v_mark_p, v_mark_id) as s(stage, cap, mark_p, mark_id)
                   cross join lateral (
                       select q.workqueue_id from pepsi.workqueue q
                        where q.stage = s.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                        and (q.priority, q.workqueue_id) >= (coalesce(s.mark_p, (-32768)::smallint), coalesce(s.mark_id, (-9223372036854775808)::bigint))
                        and (v_paused is null or not exists (
                             select 1 from pepsi.workqueue t
                              where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                        order by q.priority, q.workqueue_id
                        limit s.cap) q
            offset 0) picked
     -- Each picked row by its primary key, still pending (a row cancelled
     -- since the read is skipped). The status is compared with the one the
     -- pick saw, a column (offset 0 keeps it one), not a constant: from
     -- "status = 'pending'" the planner proves the predicate of the partial
     -- claim indexes, and on a small or unanalyzed table its generic plan
     -- scanned all of workqueue_pending_idx for each id, dead entries and
     -- all (issue 19; pgTAP 70 saw 1,500 entries for a claim of 16).
     where w.workqueue_id = picked.id and w.status = picked.seen
    returning w.workqueue_id, w.stage, w.sender_key, w.priority)
    select array_agg(c.workqueue_id), array_agg(c.stage), array_agg(c.sender_key), array_agg(c.priority)
      into v_ids, v_st, v_sk, v_pr
      from claimed c;
    if exists (select 1 from unnest(v_mark_id) i where i is not null) then
        perform pepsi.claim_mark_advance(p_stages, p_owner_slot, v_mark_p, v_mark_id, v_st, v_pr, v_ids);
    end if;
    return query select c.id, c.stage, c.sender from unnest(v_ids, v_st, v_sk) as c(id, stage, sender);
end
$$;

-- The probe takes the stage's mark: a new signature.
drop function pepsi.workqueue_sender_probe(text, text, text, int, int, text[]);

create function pepsi.workqueue_sender_probe(p_stage text, p_after text, p_upto text, p_limit int,
                                             p_owner_slot int default 0, p_paused text[] default null,
                                             p_mark_priority smallint default (-32768)::smallint,
                                             p_mark_id bigint default (-9223372036854775808)::bigint)
returns table (sender_key text, ids bigint[], i bigint, last boolean, batch int, last_priority smallint)
language sql stable parallel safe
as $$
-- Reads the first p_limit pending entries of p_stage after sender
-- p_after (exclusive; '' for the first sender), in (sender_key,
-- priority, workqueue_id) order (issue 16: a sender's rows by priority,
-- then oldest first): the only index with that order, so the probe stays
-- on it; and yields every sender that starts among them, the first p_upto
-- (inclusive; NULL: no bound) at most, numbered from 1 (i), with its
-- first ids (array_agg keeps the scan's order) and the priority of the
-- last of them (last_priority: where a read of more rows of that sender
-- resumes, with its last id). last: the last sender of
-- the batch, which may have more rows (the others have none). batch: how
-- many entries the next probe should read: 4 after a batch of one sender
-- (a deep backlog: the window needs one row of it), 32 after a batch of
-- several (short backlogs: several senders per probe); a probe costs much
-- more than an entry (btree reads a leaf page at a time).
-- p_owner_slot (issue 14): only entries of that owner slot, an equality
-- of the index (stage, owner_slot, sender_key, priority, workqueue_id): the probe
-- never reads another slot's entries.
-- p_paused (issue 14): tubes whose rows are skipped (NULL: none; the
-- check then costs nothing and the scan stays index-only).
-- p_mark_priority, p_mark_id (issue 19): only entries at or past that
-- (priority, workqueue_id) key, the stage's mark (pepsi.claim_mark); the
-- btree checks it on each entry before any heap visit, so the dead
-- entries below it cost no heap visit. The defaults pass every entry;
-- NULLs pass none.
-- p_upto filters after the limit, not in the scan: the entries kept are
-- those the scan bounded by p_upto would have read (a prefix of the same
-- order), and the index condition stays a single lower bound.
    select g.sender_key, g.ids,
           row_number() over (order by g.sender_key) as i,
           lead(g.sender_key) over (order by g.sender_key) is null as last,
           case when count(*) over () = 1 then 4 else 32 end as batch,
           g.prios[cardinality(g.prios)] as last_priority
      from (select b.sender_key, array_agg(b.workqueue_id) as ids, array_agg(b.priority) as prios
              from (select q.sender_key, q.workqueue_id, q.priority
                      from pepsi.workqueue q
                     where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                       and q.sender_key > p_after
                       and (q.priority, q.workqueue_id) >= (p_mark_priority, p_mark_id)
                       and (p_paused is null or not exists (
                            select 1 from pepsi.workqueue t
                             where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
                     order by q.sender_key, q.priority, q.workqueue_id
                     limit p_limit) b
             where p_upto is null or b.sender_key <= p_upto
             group by b.sender_key) g
$$;

create function pepsi.workqueue_sender_gap(p_stage text, p_owner_slot int, p_after text, p_before text,
                                           p_upto text, p_paused text[], p_mark_priority smallint, p_mark_id bigint)
returns table (sender_key text)
language sql stable parallel safe
as $$
-- The first sender after p_after (exclusive) with a pending row of p_stage
-- at or past the mark (p_mark_priority, p_mark_id), before p_before
-- (exclusive; NULL: up to p_upto inclusive, NULL: no bound); none when
-- there is none. One branch runs (the others' conditions on the
-- parameters alone are checked once), so that each bound is a key of the
-- scan of workqueue_pending_sender_idx and the scan stops at it: an
-- empty gap costs one descent. The entries below the mark are stepped
-- over inside the index pages.
    select g.sender_key
      from ((select q.sender_key
               from pepsi.workqueue q
              where p_before is not null
                and q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                and q.sender_key > p_after and q.sender_key < p_before
                and (q.priority, q.workqueue_id) >= (p_mark_priority, p_mark_id)
                and (p_paused is null or not exists (
                     select 1 from pepsi.workqueue t
                      where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
              order by q.sender_key, q.priority, q.workqueue_id
              limit 1)
            union all
            (select q.sender_key
               from pepsi.workqueue q
              where p_before is null and p_upto is not null
                and q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                and q.sender_key > p_after and q.sender_key <= p_upto
                and (q.priority, q.workqueue_id) >= (p_mark_priority, p_mark_id)
                and (p_paused is null or not exists (
                     select 1 from pepsi.workqueue t
                      where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
              order by q.sender_key, q.priority, q.workqueue_id
              limit 1)
            union all
            (select q.sender_key
               from pepsi.workqueue q
              where p_before is null and p_upto is null
                and q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                and q.sender_key > p_after
                and (q.priority, q.workqueue_id) >= (p_mark_priority, p_mark_id)
                and (p_paused is null or not exists (
                     select 1 from pepsi.workqueue t
                      where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
              order by q.sender_key, q.priority, q.workqueue_id
              limit 1)) g
     limit 1
$$;

create function pepsi.workqueue_sender_listed(p_stage text, p_after text, p_upto text, p_senders_max int,
                                              p_owner_slot int, p_paused text[], p_senders text[],
                                              p_start_priority smallint[], p_start_id bigint[],
                                              p_mark_priority smallint, p_mark_id bigint)
returns table (sender_key text, ids bigint[], i bigint, more boolean, last_priority smallint)
language sql stable parallel safe
as $$
-- The fair claim's window from a stage's list of senders (claim_mark.
-- senders, issue 19) instead of workqueue_sender_probe's skip-scan: the
-- senders after p_after (exclusive) and up to p_upto (inclusive; NULL: no
-- bound), in key order, each with its first rows (at most 4), at most
-- p_senders_max of them, numbered from 1 (i). more: it may have rows past
-- these.
-- A listed sender's rows are read from its own start key in
-- workqueue_pending_sender_idx, or from the stage's mark (p_mark_priority,
-- p_mark_id) when that is higher (the mark moves up with every claim, the
-- list only at a refresh), so that the dead entries at the head of its
-- range are not walked. A listed sender without pending rows is left out.
-- The list is as old as its refresh: a sender that has sent since (a new
-- sender, or one whose rows arrived from an earlier stage) is not in it
-- and must rank all the same (D-53; CI of 300a8f1: e2e 51's a-fresh lost
-- to a list made while the previous burst drained). So each step of the
-- window also probes the gap between the previous sender and the next
-- listed one, from the mark: a single descent when the gap is empty, and
-- the dead entries below the mark in it are stepped over inside the index
-- pages. A sender found there is read from the mark.
    with recursive
    -- The listed senders in range, in key order (at most the bound, 256),
    -- each with its start key, raised to the mark.
    l as (
        select array_agg(l.sender order by l.sender) as s,
               array_agg(case when (l.p, l.id) >= (p_mark_priority, p_mark_id) then l.p else p_mark_priority end
                         order by l.sender) as p,
               array_agg(case when (l.p, l.id) >= (p_mark_priority, p_mark_id) then l.id else p_mark_id end
                         order by l.sender) as id
          from unnest(p_senders, p_start_priority, p_start_id) as l(sender, p, id)
         where l.sender > p_after and (p_upto is null or l.sender <= p_upto)
    ),
    -- The window's senders: at each step the first pending sender in the
    -- gap before listed sender j (not listed: j stays), else sender j
    -- itself (j moves on). Listed senders without rows are dropped below,
    -- so a few more steps than p_senders_max are taken. k = 0: the start.
    w(sender, j, listed, k) as (
        select p_after, 1, false, 0
        union all
        select coalesce(g.sender_key, l.s[w.j]), case when g.sender_key is null then w.j + 1 else w.j end,
               g.sender_key is null, w.k + 1
          from w cross join l
               left join lateral pepsi.workqueue_sender_gap(p_stage, p_owner_slot, w.sender, l.s[w.j], p_upto, p_paused,
                                                            p_mark_priority, p_mark_id) g on true
         where w.k < p_senders_max + 8 and coalesce(g.sender_key, l.s[w.j]) is not null
    )
    select x.sender_key, x.ids, row_number() over (order by x.sender_key) as i, x.more, x.last_priority
      from (select w.sender as sender_key, r.ids, cardinality(r.ids) = 4 as more,
                   r.prios[cardinality(r.prios)] as last_priority
              from w cross join l
                   -- The row comparison alone is the scan's start key; with
                   -- "sender_key = w.sender" beside it, btree started at the
                   -- head of the sender's range and checked the comparison
                   -- on every entry there (43 ms a read at 200,000 entries).
                   -- "sender_key <= w.sender" is its end key: the read
                   -- stops at the end of the sender's range, where it
                   -- walked the next sender's dead head (a sender with
                   -- fewer than 4 rows; pgTAP 70: 1,500 entries).
                   cross join lateral (
                       select array_agg(q.workqueue_id order by q.priority, q.workqueue_id) as ids,
                              array_agg(q.priority order by q.priority, q.workqueue_id) as prios
                         from (select q.workqueue_id, q.priority, q.sender_key
                                 from pepsi.workqueue q
                                where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                                  and (q.sender_key, q.priority, q.workqueue_id)
                                      >= (w.sender,
                                          case when w.listed then l.p[w.j - 1] else p_mark_priority end,
                                          case when w.listed then l.id[w.j - 1] else p_mark_id end)
                                  and q.sender_key <= w.sender
                                  and (p_paused is null or not exists (
                                       select 1 from pepsi.workqueue t
                                        where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
                                order by q.sender_key, q.priority, q.workqueue_id
                                limit 4) q
                        where q.sender_key = w.sender) r
             where w.k > 0 and r.ids is not null
             order by w.sender
             limit p_senders_max) x
$$;

create or replace function pepsi.workqueue_claim_fair(
    p_stages         text[],
    p_caps           int[],
    p_avg_usec       float8[],
    p_lead_stages    text[],
    p_lead_senders   text[],
    p_lead_usec      float8[],
    p_fifo_percent   int default 10,
    p_window_after   text[] default null,
    p_fifo_credit    int[] default null,
    p_now            timestamptz default now(),
    p_release_paused boolean default false,
    p_window_size    int default 64,
    p_claim_id       bigint default null,
    p_lead_base      float8[] default null,
    p_lead_scale     float8[] default null,
    p_lead_sync      boolean[] default null,
    p_owner_slot     int default 0)
returns table (workqueue_id bigint, stage text, sender_key text, fifo boolean,
               window_next text, window_lap boolean, fifo_credit int, lead_floor float8,
               leads_lost boolean)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
set plan_cache_mode = force_generic_plan
-- Every read of the claim is a few rows at the front of an index range,
-- in the index's order, stopped by a LIMIT or an end key. Statistics that
-- say a range holds one row (a stage or sender the last ANALYZE did not
-- see) made the planner read the whole range past the mark and sort it:
-- a sender-gap probe took workqueue_pending_idx and a sort, 1,970 entries
-- a probe (pgTAP 70 with ANALYZE; CI of 3e36bbd: 2,256 more entries a
-- claim). A sort or a bitmap is never the cheaper plan here. The sorts
-- that remain are each costed 1e10 more, which would make JIT compile
-- the plan (4.4 s at every replan): jit is off.
set enable_sort = off
set enable_bitmapscan = off
set jit = off
as $$
-- The fair claim (D-53, D-57..D-61): like workqueue_claim, for every stage
-- in p_stages up to the matching p_caps entry of its pending rows become
-- running, all in one UPDATE ... RETURNING (D-58); but which rows is
-- decided the way CFS picks a process, from the dispatcher's leads.
--
-- Parameters, one entry per stage unless said otherwise:
--   p_stages, p_caps   the stages and their free capacity (cap 0: skipped).
--   p_avg_usec         the stage's average worker time per message, > 0.
--   p_lead_stages, p_lead_senders, p_lead_usec
--                      flat arrays of (stage, sender_key, v): leads, each
--                      read as (v - base) / scale of its stage (below), in
--                      µs. A repeated (stage, sender) counts with its
--                      largest v. NULL arrays are empty arrays. What they
--                      hold depends on p_claim_id:
--                      - without a claim id, every lead there is: a sender
--                        with no entry has lead 0, level with the least
--                        served (D-54), and nothing is kept;
--                      - with a claim id (the dispatcher), the leads that
--                        changed since its previous claim: each is kept in
--                        pepsi.fair_lead for the dispatcher's incarnation
--                        (p_claim_id >> 40) before the claim reads it, or
--                        deleted when it is worth less than half the
--                        stage's average (forgotten, D-56); the claim reads
--                        the kept lead of each sender of its window, and a
--                        kept lead under half the average counts as 0. Then
--                        every lead stage must be one of p_stages.
--   p_lead_base, p_lead_scale
--                      per stage: the dispatcher's frame (runner/src/dispatch/fair.c:
--                      leads decay by halving without rewriting v). NULL
--                      (the array or an entry): base 0, scale 1, i.e. v is
--                      the lead. scale must be finite and > 0.
--   p_lead_sync        per stage, with a claim id: true when the lead
--                      arrays hold every lead of the stage; the stage's
--                      other kept leads are deleted and the stage is marked
--                      held in full by this incarnation (pepsi.fair_stage).
--                      The dispatcher sends it at its first lead, after a
--                      lost or failed claim, after leads_lost, and when it
--                      moves its frame. NULL: false.
--   p_fifo_percent     FAIR_FIFO_PERCENT, 0..100 (D-57).
--   p_window_after     where each stage's sender window starts (exclusive):
--                      the window_next returned for that stage last time;
--                      NULL (the array or an entry): the first sender.
--   p_fifo_credit      each stage's FIFO credit in hundredths of a slot,
--                      0..99: the fifo_credit returned last time; NULL (the
--                      array or an entry) counts as 99: the share rounds up.
--   p_now, p_release_paused, p_claim_id   as in workqueue_claim (claimed_at,
--                      the paused rows' clock; D-93; the claim's id, which
--                      also names the kept leads, above). Like
--                      workqueue_claim, rows of a tube paused at p_now
--                      are skipped in every scan (window, reads, FIFO
--                      share), and p_release_paused sweeps expired
--                      pauses (issue 14).
--   p_window_size      at most this many senders per stage per claim, 1..64
--                      (D-60: 64). Senders cost index probes, the main cost
--                      of a claim when many wait: a dispatcher claiming a
--                      few slots at a time may pass fewer (e.g. 4 x cap);
--                      fairness then works over more window rotations.
--
-- Per stage:
--   1. The window (D-59, D-60): the waiting senders in sender_key order,
--      from after p_window_after, wrapping around to the first, at most
--      p_window_size, found by a loose index scan of
--      workqueue_pending_sender_idx (a recursive skip-scan): each probe
--      reads the next few entries after the previous sender and yields
--      every sender that starts among them, with its oldest rows.
--   2. Ranking (D-53): the k-th oldest row of a sender with lead L ranks
--      L + k * avg, k counting from 0, smallest first, ties by workqueue_id.
--      k from 0 is "the lead before this row runs": a sender without a
--      lead and with one row ranks 0, level with the oldest row of every
--      other least-served sender (counting from 1 would add avg to every
--      rank of the stage and change no order).
--   3. Reading (D-61): a sender's rows are read oldest first, never more
--      than cap, and only as deep as a row could still win a slot: with
--      c = least(cap, senders) and L(c) the c-th smallest lead, the cap
--      best ranks are at most R = L(c) + (ceil(cap / c) - 1) * avg, so a
--      sender with lead L is read to depth floor((R - L) / avg) + 1 (at
--      least its oldest row). If fewer than cap rows rank at most R (short
--      backlogs), the senders that may have more are read on to cap. So
--      the result is exact, and the cost O(stages * senders in window *
--      cap) at worst, about one probe per sender when senders are level,
--      and never grows with any backlog's depth.
--   4. The FIFO share (D-57): of the n = least(cap, candidates) slots, f go
--      to the stage's oldest pending rows regardless of sender, where
--      t = credit + n * p_fifo_percent, f = t / 100 (integer division), and
--      t % 100 is returned as fifo_credit. Passed back claim after claim
--      this gives exactly p_fifo_percent of the stage's slots, also when
--      every claim has cap 1 (one claim in ten at 10 %). Without a credit
--      (NULL) f = ceil(n * p_fifo_percent / 100): at least one slot.
--   5. The other slots go to the best-ranked candidates not taken in 4.
--
-- Returns the claimed rows, grouped by stage in p_stages order and within
-- a stage in claim order (FIFO rows first, then by rank), with per row:
--   fifo          true when the FIFO share took the row;
-- and per stage (the same on every row of the stage):
--   window_next   pass as this stage's p_window_after next time: the last
--                 sender of a full window, NULL when the window held every
--                 waiting sender;
--   window_lap    true when the window reached the end of the sender order
--                 (always when window_next is NULL): the windows since the
--                 previous lap, this one included, have seen every waiting
--                 sender;
--   fifo_credit   pass as this stage's p_fifo_credit next time;
--   lead_floor    the smallest lead among the window's senders (no entry:
--                 0). When window_next is NULL it is the least-served
--                 waiting sender's lead, which the dispatcher subtracts
--                 from all its leads of the stage, so that they stay
--                 relative to that sender (D-48, D-54). When the window is
--                 a part of the senders, the dispatcher keeps the smallest
--                 lead_floor from one lap to the next and subtracts that at
--                 the lap (fair_level in runner/src/dispatch/fair.c).
--   leads_lost    with a claim id, true when this call did not sync the
--                 stage and pepsi.fair_stage does not say the stage's leads
--                 are held in full by this incarnation: the kept leads
--                 were lost (PostgreSQL crashed: the tables are UNLOGGED)
--                 or never sent; this claim ranked with what it found and
--                 the dispatcher should sync the stage next time.
-- A stage that returns no row had nothing pending: its state stays as it
-- was.
-- Priority (issue 16): "a sender's k-th oldest row" above is its k-th row
-- in (priority, workqueue_id) order, the order of
-- workqueue_pending_sender_idx; and the FIFO share takes the stage's rows
-- in (priority, workqueue_id) order (workqueue_pending_idx). So within a
-- sender, and in the FIFO share, a lower priority goes first; between
-- senders the ranking by lead decides, as before: a priority never lets
-- one sender take another's share.
-- The statement is planned once per session (plan_cache_mode): stages,
-- senders and limits reach every scan as LATERAL parameters, so a custom
-- plan would know nothing more, and planning costs more than a claim.
-- Besides the claim, one statement for all stages (D-58), the call writes
-- the kept leads it was sent (two statements that touch nothing when no
-- lead changed: an idle dispatcher's heartbeat writes nothing, D-139).
-- Raises PX003 when the per-stage arrays or the lead arrays differ in
-- length, a stage is listed twice, a cap is NULL or < 0, an average is not
-- a finite number > 0, a lead is NULL or not finite, a lead stage or sender
-- is NULL, a kept lead's stage is not in p_stages, a base is not finite, a
-- scale is not a finite number > 0, p_fifo_percent is outside 0..100, a
-- credit outside 0..99, p_window_size outside 1..64, or p_now or
-- p_owner_slot is NULL.
-- p_owner_slot (issue 14): only rows of that owner slot, the caller's (0
-- by default: every row without a topology); every read of workqueue
-- below is an index range of that slot (the indexes lead with stage and
-- owner_slot), so a slot never claims, nor reads, another slot's rows,
-- and its cost does not grow with the partitions it owns.
-- A paused stage (pepsi.workqueue_pause_stage, issue 16) is claimed as if
-- its cap were 0: not scanned, its window and credit returned unchanged.
-- While a stage's head is dead (issue 19), its sender probes and its FIFO
-- share start at the stage's mark (pepsi.claim_mark): a row below it waits
-- for the next refresh, a second at most; the claim then moves the mark
-- (claim_mark_advance).
-- Tables: workqueue (update), fair_lead and fair_stage (read, written
-- with a claim id), stage_pause (read), claim_mark (read, write).
#variable_conflict use_column
declare
    v_n int := cardinality(p_stages);
    v_inc bigint := p_claim_id >> 40;   -- the kept leads' incarnation; NULL: none kept
    v_paused text[]; -- tubes paused at p_now (issue 14), NULL when none
    v_mark_p smallint[]; -- each stage's mark (claim_mark, issue 19), NULL entries: none
    v_mark_id bigint[];
    v_ids bigint[];      -- the result, column by column, in its order
    v_st text[];
    v_sk text[];
    v_fifo boolean[];
    v_wnext text[];
    v_wlap boolean[];
    v_credit int[];
    v_floor float8[];
    v_lost boolean[];
    v_pr smallint[];
    v_nx_st text[];      -- each marked stage's next row (the FIFO read's one past its share)
    v_nx_p smallint[];
    v_nx_id bigint[];
begin
    if v_n is distinct from cardinality(p_caps) or v_n is distinct from cardinality(p_avg_usec)
       or (p_window_after is not null and cardinality(p_window_after) <> v_n)
       or (p_fifo_credit is not null and cardinality(p_fifo_credit) <> v_n)
       or (p_lead_base is not null and cardinality(p_lead_base) <> v_n)
       or (p_lead_scale is not null and cardinality(p_lead_scale) <> v_n)
       or (p_lead_sync is not null and cardinality(p_lead_sync) <> v_n) then
        raise exception 'stages, caps, averages, window, credit, base, scale and sync arrays differ in length'
            using errcode = 'PX003';
    end if;
    if array_position(p_caps, null) is not null or 0 > any (p_caps) then
        raise exception 'caps must be zero or more' using errcode = 'PX003';
    end if;
    if not coalesce(0 < all (p_avg_usec) and 'Infinity'::float8 > all (p_avg_usec), false) then
        raise exception 'averages must be finite and greater than zero' using errcode = 'PX003';
    end if;
    if coalesce(cardinality(p_lead_stages), 0) <> coalesce(cardinality(p_lead_senders), 0)
       or coalesce(cardinality(p_lead_stages), 0) <> coalesce(cardinality(p_lead_usec), 0)
       or array_position(p_lead_stages, null) is not null
       or array_position(p_lead_senders, null) is not null
       or array_position(p_lead_usec, null) is not null
       or not coalesce('-Infinity'::float8 < all (p_lead_usec)
                       and 'Infinity'::float8 > all (p_lead_usec), true) then
        raise exception 'lead stages, senders and leads must be arrays of one length, without NULLs or infinities'
            using errcode = 'PX003';
    end if;
    if not coalesce('-Infinity'::float8 < all (p_lead_base) and 'Infinity'::float8 > all (p_lead_base), true) then
        raise exception 'lead bases must be finite' using errcode = 'PX003';
    end if;
    if not coalesce(0 < all (p_lead_scale) and 'Infinity'::float8 > all (p_lead_scale), true) then
        raise exception 'lead scales must be finite and greater than zero' using errcode = 'PX003';
    end if;
    if v_inc is not null and p_lead_stages is not null and not (p_lead_stages <@ p_stages) then
        raise exception 'a kept lead must belong to one of the stages' using errcode = 'PX003';
    end if;
    if p_fifo_percent is null or p_fifo_percent not between 0 and 100 then
        raise exception 'fifo percent must be between 0 and 100' using errcode = 'PX003';
    end if;
    if 0 > any (p_fifo_credit) or 99 < any (p_fifo_credit) then
        raise exception 'fifo credits must be between 0 and 99' using errcode = 'PX003';
    end if;
    if p_window_size is null or p_window_size not between 1 and 64 then
        raise exception 'window size must be between 1 and 64' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be null' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be null' using errcode = 'PX003';
    end if;
    if v_n > 1 and (select count(distinct s) from unnest(p_stages) s) <> v_n then
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
    if not pepsi.claim_mark_skip(p_stages, p_owner_slot) then
        select m.mark_priority, m.mark_id into v_mark_p, v_mark_id
          from pepsi.claim_mark_get(p_stages, p_owner_slot) m;
    end if;

    -- The kept leads (with a claim id): a synced stage keeps only what this
    -- call sends; each lead sent is kept, or deleted when worth less than
    -- half an average message (D-56). Nothing runs when nothing changed.
    if v_inc is not null and true = any (p_lead_sync) then
        delete from pepsi.fair_lead f
         using unnest(p_stages, p_lead_sync) as s(stage, sync)
         where s.sync and f.stage = s.stage
           and not exists (select 1 from unnest(p_lead_stages, p_lead_senders) as l(stage, sender)
                            where l.stage = f.stage and l.sender = f.sender_key);
        insert into pepsi.fair_stage as m (stage, incarnation)
        select s.stage, v_inc from unnest(p_stages, p_lead_sync) as s(stage, sync) where s.sync
            on conflict (stage) do update set incarnation = excluded.incarnation;
    end if;
    if v_inc is not null and cardinality(p_lead_stages) > 0 then
        with l as (
            select l.stage, l.sender, max(l.v) as v
              from unnest(p_lead_stages, p_lead_senders, p_lead_usec) as l(stage, sender, v)
             group by l.stage, l.sender
        ),
        k as (
            select l.stage, l.sender, l.v,
                   (l.v - coalesce(s.base, 0)) / coalesce(s.scale, 1) >= s.avg_usec / 2 as keep
              from l join unnest(p_stages, p_avg_usec, p_lead_base, p_lead_scale)
                          as s(stage, avg_usec, base, scale) on s.stage = l.stage
        ),
        gone as (
            delete from pepsi.fair_lead f using k
             where not k.keep and f.stage = k.stage and f.sender_key = k.sender
        )
        insert into pepsi.fair_lead as f (stage, sender_key, incarnation, v)
        select k.stage, k.sender, v_inc, k.v from k where k.keep
            on conflict (stage, sender_key) do update set incarnation = excluded.incarnation, v = excluded.v;
    end if;

    with recursive
    -- The stages with free capacity.
    -- The stages with free capacity, their frames, and whether their kept
    -- leads are lost (leads_lost).
    st as (
        select s.ord::int as ord, s.stage, s.cap, s.avg_usec, s.after, coalesce(s.credit, 99) as credit,
               coalesce(s.base, 0) as base, coalesce(s.scale, 1) as scale,
               v_inc is not null and not coalesce(s.sync, false)
                 and not exists (select 1 from pepsi.fair_stage m
                                  where m.stage = s.stage and m.incarnation = v_inc) as lost,
               coalesce(s.mark_p, (-32768)::smallint) as mark_p, coalesce(s.mark_id, (-9223372036854775808)::bigint) as mark_id,
               s.mark_id is not null as marked, cm.senders, cm.sender_priority as sender_p, cm.sender_id
          from unnest(p_stages, p_caps, p_avg_usec, p_window_after, p_fifo_credit, p_lead_base, p_lead_scale,
                      p_lead_sync, v_mark_p, v_mark_id)
               with ordinality as s(stage, cap, avg_usec, after, credit, base, scale, sync, mark_p, mark_id, ord)
               left join pepsi.claim_mark cm
                      on s.mark_id is not null and cm.stage = s.stage and cm.owner_slot = p_owner_slot
         where s.cap > 0
    ),
    -- 1. The window, by a batched skip-scan of workqueue_pending_sender_idx:
    -- each step is one probe, pepsi.workqueue_sender_probe (inlined, so
    -- each is an index scan of this plan), that reads the next 16, 4 or 32
    -- entries after the previous step's last sender and yields every
    -- sender that starts among them with its oldest rows. win1 goes from
    -- p_window_after to the last sender; win2 wraps around to the first
    -- sender ('' is below every sender key) and goes on up to
    -- p_window_after.
    -- While the stage has a list of its senders (claim_mark.senders, issue
    -- 19), the window comes from that list, each sender read from its own
    -- start key (workqueue_sender_listed), and the probes do not run: more
    -- is then whether a sender may have rows past those read, and last is
    -- false (nothing to go on from).
    win1(ord, stage, n, sender, ids, last, batch, lastp, mark_p, mark_id, more) as (
        select st.ord, st.stage, f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority, st.mark_p, st.mark_id,
               f.last
          from st cross join lateral pepsi.workqueue_sender_probe(st.stage, coalesce(st.after, ''), null, 16, p_owner_slot, v_paused,
                                                                  st.mark_p, st.mark_id) f
         where st.senders is null
        union all
        select st.ord, st.stage, c.i, c.sender_key, c.ids, false, 0, c.last_priority, st.mark_p, st.mark_id, c.more
          from st cross join lateral pepsi.workqueue_sender_listed(st.stage, coalesce(st.after, ''), null, p_window_size,
                                                                   p_owner_slot, v_paused, st.senders, st.sender_p,
                                                                   st.sender_id, st.mark_p, st.mark_id) c
         where st.senders is not null
        union all
        select w.ord, w.stage, w.n + f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority, w.mark_p, w.mark_id,
               f.last
          from win1 w cross join lateral pepsi.workqueue_sender_probe(w.stage, w.sender, null, w.batch, p_owner_slot, v_paused,
                                                                      w.mark_p, w.mark_id) f
         where w.last and w.n < p_window_size
    ),
    win2(ord, stage, after, n, sender, ids, last, batch, lastp, mark_p, mark_id, more) as (
        select st.ord, st.stage, st.after, coalesce(c.n, 0) + f.i, f.sender_key, f.ids, f.last, f.batch,
               f.last_priority, st.mark_p, st.mark_id, f.last
          from st
               left join (select win1.ord, max(win1.n) as n from win1 group by win1.ord) c on c.ord = st.ord
               cross join lateral pepsi.workqueue_sender_probe(st.stage, '', st.after, 16, p_owner_slot, v_paused,
                                                               st.mark_p, st.mark_id) f
         where st.after is not null and coalesce(c.n, 0) < p_window_size and st.senders is null
        union all
        select st.ord, st.stage, st.after, coalesce(c.n, 0) + l.i, l.sender_key, l.ids, false, 0, l.last_priority,
               st.mark_p, st.mark_id, l.more
          from st
               left join (select win1.ord, max(win1.n) as n from win1 group by win1.ord) c on c.ord = st.ord
               cross join lateral pepsi.workqueue_sender_listed(st.stage, '', st.after, p_window_size, p_owner_slot,
                                                                v_paused, st.senders, st.sender_p, st.sender_id,
                                                                st.mark_p, st.mark_id) l
         where st.after is not null and coalesce(c.n, 0) < p_window_size and st.senders is not null
        union all
        select w.ord, w.stage, w.after, w.n + f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority, w.mark_p, w.mark_id,
               f.last
          from win2 w cross join lateral pepsi.workqueue_sender_probe(w.stage, w.sender, w.after, w.batch, p_owner_slot, v_paused,
                                                                      w.mark_p, w.mark_id) f
         where w.last and w.n < p_window_size
    ),
    -- The leads passed in, without a claim id (with one they are kept).
    leads as (
        select l.stage, l.sender, max(l.v) as v
          from unnest(p_lead_stages, p_lead_senders, p_lead_usec) as l(stage, sender, v)
         where v_inc is null
         group by l.stage, l.sender
    ),
    -- The window's senders (n = 1 .. p_window_size within the stage), their
    -- oldest rows read so far, whether that is all of them, their leads:
    -- passed in, or kept (one probe of fair_lead_pkey per sender; a kept
    -- lead under half an average is forgotten, D-56).
    ws as (
        select w.ord, w.n, w.sender, w.ids, w.lastp, not w.more as complete, w.wrapped,
               case when v_inc is null then coalesce((l.v - st.base) / st.scale, 0)
                    when (k.v - st.base) / st.scale >= st.avg_usec / 2 then (k.v - st.base) / st.scale
                    else 0 end as lead_usec
          from (select win1.ord, win1.stage, win1.n, win1.sender, win1.ids, win1.lastp, win1.more, false as wrapped
                  from win1 where win1.n <= p_window_size
                union all
                select win2.ord, win2.stage, win2.n, win2.sender, win2.ids, win2.lastp, win2.more, true
                  from win2 where win2.n <= p_window_size) w
               join st on st.ord = w.ord
               left join leads l on l.stage = w.stage and l.sender = w.sender
               left join lateral (
                   select f.v from pepsi.fair_lead f
                    where v_inc is not null and f.stage = w.stage and f.sender_key = w.sender
                      and f.incarnation = v_inc) k on true
    ),
    -- Per stage: the lead floor, the window's state, and what the bound R
    -- of step 3 needs: c and the c-th smallest lead.
    sb as (
        select ws.ord, min(ws.lead_usec) as lead_floor,
               max(ws.sender) filter (where ws.n = p_window_size) as window_next,
               count(*) < p_window_size or bool_or(ws.wrapped) as window_lap,
               least(min(st.cap), count(*))::int as c,
               (array_agg(ws.lead_usec order by ws.lead_usec))[least(min(st.cap), count(*))::int]
                 as lead_c
          from ws join st on st.ord = ws.ord
         group by ws.ord
    ),
    -- 3. Each sender's depth: the rows that rank at most
    -- R = lead_c + (ceil(cap / c) - 1) * avg, at most cap.
    wd as (
        select ws.ord, ws.n, ws.sender, ws.ids, ws.lastp, ws.complete, ws.lead_usec, st.stage, st.cap, st.avg_usec,
               least(st.cap, greatest(1, floor((sb.lead_c + ((st.cap + sb.c - 1) / sb.c - 1) * st.avg_usec
                                                - ws.lead_usec) / st.avg_usec + 1e-9)::int + 1)) as depth
          from ws join sb on sb.ord = ws.ord join st on st.ord = ws.ord
    ),
    -- Read each sender to its depth where the window has not (the row
    -- comparison is the start key and "sender_key <= sender" the end key:
    -- a read stops at the end of its sender's range, not after walking the
    -- next sender's dead head, issue 19).
    rd as (
        select r.*, sum(least(cardinality(r.ids), r.depth)) over (partition by r.ord) as stage_le_r
          from (select wd.*
                  from wd where wd.complete or cardinality(wd.ids) >= wd.depth
                union all
                select wd.ord, wd.n, wd.sender, wd.ids || coalesce(m.ids, '{}'),
                       coalesce(m.prios[cardinality(m.prios)], wd.lastp),
                       cardinality(m.ids) is distinct from wd.depth - cardinality(wd.ids),
                       wd.lead_usec, wd.stage, wd.cap, wd.avg_usec, wd.depth
                  from wd cross join lateral (
                           select array_agg(r.workqueue_id) as ids, array_agg(r.priority) as prios
                             from (select q.workqueue_id, q.sender_key, q.priority
                                     from pepsi.workqueue q
                                    where q.stage = wd.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                                      and (q.sender_key, q.priority, q.workqueue_id)
                                          > (wd.sender, wd.lastp, wd.ids[cardinality(wd.ids)])
                                      and q.sender_key <= wd.sender
                                      and (v_paused is null or not exists (
                                           select 1 from pepsi.workqueue t
                                            where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                                    order by q.sender_key, q.priority, q.workqueue_id
                                    limit wd.depth - cardinality(wd.ids)) r
                            where r.sender_key = wd.sender) m
                 where not wd.complete and cardinality(wd.ids) < wd.depth) r
    ),
    -- 2. The candidates ranked L + k * avg, k from 0: each sender's rows to
    -- its depth. Every row that ranks at most R has been read; if fewer
    -- than cap do, every row read counts, and the senders that may have
    -- more are read on to cap.
    cand as (
        select rd.ord, c.id, rd.lead_usec + (c.k - 1) * rd.avg_usec as rank
          from rd cross join lateral
               unnest(rd.ids[1:case when rd.stage_le_r < rd.cap then rd.cap else rd.depth end])
                   with ordinality as c(id, k)
        union all
        select rd.ord, c.id, rd.lead_usec + (cardinality(rd.ids) + c.k - 1) * rd.avg_usec
          from rd cross join lateral (
                   select array_agg(r.workqueue_id) as ids
                     from (select q.workqueue_id, q.sender_key
                             from pepsi.workqueue q
                            where q.stage = rd.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                              and (q.sender_key, q.priority, q.workqueue_id)
                                  > (rd.sender, rd.lastp, rd.ids[cardinality(rd.ids)])
                              and q.sender_key <= rd.sender
                              and (v_paused is null or not exists (
                                   select 1 from pepsi.workqueue t
                                    where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                            order by q.sender_key, q.priority, q.workqueue_id
                            limit rd.cap - cardinality(rd.ids)) r
                    where r.sender_key = rd.sender) m
               cross join lateral unnest(m.ids) with ordinality as c(id, k)
         where rd.stage_le_r < rd.cap and not rd.complete and cardinality(rd.ids) < rd.cap
    ),
    -- 4. The FIFO share of the n slots, and the credit carried over.
    share as (
        select st.ord, st.stage, st.cap, sb.window_next, sb.window_lap, sb.lead_floor, st.lost, st.mark_p, st.mark_id,
               st.marked,
               (st.credit + least(x.n, st.cap) * p_fifo_percent) / 100 as f,
               (st.credit + least(x.n, st.cap) * p_fifo_percent) % 100 as credit_next
          from (select cand.ord, count(*)::int as n from cand group by cand.ord) x
               join st on st.ord = x.ord
               join sb on sb.ord = x.ord
    ),
    -- The stage's oldest rows of this slot: the first f entries of its
    -- (stage, owner_slot) range of workqueue_pending_idx. With a mark, one
    -- more (extra): not taken by the share, it is where the mark moves
    -- (claim_mark_advance), so that moving it needs no walk of its own.
    oldest as (
        select share.ord, share.stage, r.workqueue_id as id, r.priority, r.n > share.f as extra
          from share cross join lateral (
                   select x.workqueue_id, x.priority, row_number() over (order by x.priority, x.workqueue_id) as n
                     from (select q.workqueue_id, q.priority
                             from pepsi.workqueue q
                            where q.stage = share.stage and q.owner_slot = p_owner_slot
                              and q.status = 'pending' and (share.f > 0 or share.marked)
                              and (q.priority, q.workqueue_id) >= (share.mark_p, share.mark_id)
                              and (v_paused is null or not exists (
                                   select 1 from pepsi.workqueue t
                                    where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                            order by q.priority, q.workqueue_id
                            limit share.f + case when share.marked then 1 else 0 end) x) r
    ),
    -- 5. FIFO rows first, then the best ranks; each row once; cap per stage.
    pick as (
        select x.ord, x.id, x.fifo, x.pos, 'pending'::pepsi.workqueue_status as seen
          from (select u.ord, u.id, u.fifo,
                       row_number() over (partition by u.ord order by u.fifo desc, u.rank, u.id) as pos
                  from (select oldest.ord, oldest.id, true as fifo, 0::float8 as rank from oldest
                         where not oldest.extra
                        union all
                        select cand.ord, cand.id, false, cand.rank from cand
                         where not exists (select 1 from oldest where oldest.id = cand.id and not oldest.extra)) u) x
               join share on share.ord = x.ord
         where x.pos <= share.cap
    ),
    claimed as (
        update pepsi.workqueue w
           set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
          from pick
         -- A join on the ids (a primary-key probe each, as the plain claim
         -- does), not "= any (array)": with that, on a small or unanalyzed
         -- table, the generic plan ANDed a bitmap of the whole partial
         -- index workqueue_pending_sender_idx, dead entries and all
         -- (issue 19). The status is compared with the one the pick saw (a
         -- column of the CTE), not the constant, for the same reason: from
         -- "status = 'pending'" the planner proves the partial indexes'
         -- predicate and scanned all of workqueue_pending_sender_idx for
         -- each id (pgTAP 70: 1,500 entries for a claim of 16).
         where w.workqueue_id = pick.id
           and w.status = pick.seen
        -- The pick's columns come back with each row: joining claimed to
        -- pick again was planned as a nested loop over the CTE (the UPDATE
        -- is estimated at one row), cap x cap comparisons: 1.9 ms of a
        -- 6 ms fair claim of 64 rows in normal mode.
        returning w.workqueue_id, w.stage, w.sender_key, w.priority, pick.ord, pick.pos, pick.fifo
    )
    select array_agg(c.workqueue_id order by c.ord, c.pos), array_agg(c.stage order by c.ord, c.pos),
           array_agg(c.sender_key order by c.ord, c.pos), array_agg(c.fifo order by c.ord, c.pos),
           array_agg(share.window_next order by c.ord, c.pos),
           array_agg(share.window_lap order by c.ord, c.pos),
           array_agg(share.credit_next order by c.ord, c.pos),
           array_agg(share.lead_floor order by c.ord, c.pos), array_agg(share.lost order by c.ord, c.pos),
           array_agg(c.priority order by c.ord, c.pos),
           (select array_agg(o.stage order by o.ord) from oldest o where o.extra),
           (select array_agg(o.priority order by o.ord) from oldest o where o.extra),
           (select array_agg(o.id order by o.ord) from oldest o where o.extra)
      into v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost, v_pr, v_nx_st, v_nx_p, v_nx_id
      from claimed c
           join share on share.ord = c.ord;
    if exists (select 1 from unnest(v_mark_id) i where i is not null) then
        perform pepsi.claim_mark_advance(p_stages, p_owner_slot, v_mark_p, v_mark_id, v_st, v_pr, v_ids,
                                         v_nx_st, v_nx_p, v_nx_id);
    end if;
    return query
    select r.id, r.stage, r.sender, r.fifo, r.wnext, r.wlap, r.credit, r.floor, r.lost
      from unnest(v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost)
           with ordinality as r(id, stage, sender, fifo, wnext, wlap, credit, floor, lost, ord)
     order by r.ord;
end
$$;

comment on function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int) is
    'The plain claim: per stage, up to cap pending rows of the owner slot, lowest priority first then oldest (issue 16), become running in one UPDATE; the scan starts at the stage''s mark while its head is dead (issue 19).';
comment on function pepsi.workqueue_sender_probe(text, text, text, int, int, text[], smallint, bigint) is
    'One step of the fair claim''s sender window: the next senders after p_after with their first rows at or past the stage''s mark, in (priority, workqueue_id) order (issue 16), and the last row''s priority.';
comment on function pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[],
                                               int[], timestamptz, boolean, int, bigint, float8[], float8[],
                                               boolean[], int) is
    'The fair claim (D-53, D-57..D-61): ranks each sender''s rows (in priority, then id order, issue 16) by lead, with a FIFO share taken lowest priority first; reads start at the stage''s mark while its head is dead (issue 19).';
comment on function pepsi.workqueue_sender_listed(text, text, text, int, int, text[], text[], smallint[], bigint[], smallint, bigint) is
    'The fair claim''s window from a stage''s list of senders while its head is dead (issue 19): each listed sender''s first rows read from its own start key; the gaps between listed senders probed from the mark for senders new since the list.';
comment on function pepsi.workqueue_sender_gap(text, int, text, text, text, text[], smallint, bigint) is
    'The first sender after p_after and before p_before (or up to p_upto) with a pending row at or past the stage''s mark: the fair claim''s probe of a gap between listed senders (issue 19).';
comment on function pepsi.claim_mark_sender_bound() is
    'The most senders a refresh lists for the fair claim (issue 19): 256.';
comment on function pepsi.claim_mark_dead_bound() is
    'How many dead index entries at the head of a stage make the claims use a mark (issue 19): 1,000.';
comment on function pepsi.claim_mark_slack() is
    'How many ids below the next pending row a mark is set (issue 19): 256; hops that much out of order are not delayed.';
comment on function pepsi.claim_mark_key(text, int) is
    'The name of the session setting that holds this session''s mark of a stage and owner slot (issue 19).';
comment on function pepsi.claim_mark_set(text, int, timestamptz, smallint, bigint) is
    'Sets this session''s mark of a stage: when its next refresh is due and its key (NULL: none) (issue 19).';
comment on function pepsi.claim_mark_interval_ms() is
    'How often a stage''s mark is refreshed, in ms (issue 19): 1,000, or the setting pepsi.claim_mark_interval_ms.';
comment on function pepsi.claim_mark_refresh(text, int, timestamptz, smallint, bigint) is
    'Once a second per stage: the walk from the head of the stage that finds its lowest pending row and counts the dead entries before it; sets or clears the session''s mark and writes it to claim_mark (issue 19).';
comment on function pepsi.claim_mark_skip(text[], int) is
    'Whether a claim may go without claim_mark_get: no refresh due yet and none of its stages marked (issue 19).';
comment on function pepsi.claim_mark_get(text[], int) is
    'This session''s marks of the stages (NULL: none), refreshing those a second old (issue 19).';
comment on function pepsi.claim_mark_advance(text[], int, smallint[], bigint[], text[], smallint[], bigint[], text[], smallint[], bigint[]) is
    'After a claim: each marked stage''s mark moves up to the next row the fair claim''s FIFO read saw, or past the rows the claim took, less the slack; no walk (issue 19).';

revoke all on function pepsi.workqueue_sender_probe(text, text, text, int, int, text[], smallint, bigint) from public;
revoke all on function pepsi.claim_mark_dead_bound() from public;
revoke all on function pepsi.claim_mark_sender_bound() from public;
revoke all on function pepsi.workqueue_sender_listed(text, text, text, int, int, text[], text[], smallint[], bigint[], smallint, bigint) from public;
revoke all on function pepsi.workqueue_sender_gap(text, int, text, text, text, text[], smallint, bigint) from public;
revoke all on function pepsi.claim_mark_slack() from public;
revoke all on function pepsi.claim_mark_refresh(text, int, timestamptz, smallint, bigint) from public;
revoke all on function pepsi.claim_mark_key(text, int) from public;
revoke all on function pepsi.claim_mark_set(text, int, timestamptz, smallint, bigint) from public;
revoke all on function pepsi.claim_mark_interval_ms() from public;
revoke all on function pepsi.claim_mark_get(text[], int) from public;
revoke all on function pepsi.claim_mark_skip(text[], int) from public;
revoke all on function pepsi.claim_mark_advance(text[], int, smallint[], bigint[], text[], smallint[], bigint[], text[], smallint[], bigint[]) from public;

commit;
