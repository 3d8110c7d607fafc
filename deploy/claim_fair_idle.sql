-- Deploy pepsi:claim_fair_idle to pg
-- requires: claim_plain_generic
--
-- The fair claim takes every waiting row without ranking when no stage
-- has more eligible pending rows than its cap (issue 19): with one
-- message in the pipeline, or any backlog a claim empties, there is no
-- competition for slots and the ranking (D-53) decides nothing, yet the
-- claim started its whole plan (about 160 nodes, 1.9M instructions) and
-- probed the senders. The check reads cap + 1 entries a stage at most;
-- when one stage has more, the claim goes on as before. The function is
-- otherwise that of claim_commit_async. CREATE OR REPLACE keeps the
-- comments and grants.

begin;

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
--                        pg_temp.fair_lead for the dispatcher's incarnation
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
--                      held in full by this incarnation (pg_temp.fair_stage).
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
--                 stage and pg_temp.fair_stage does not say the stage's leads
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
-- The kept leads live in the calling session's temporary tables
-- pg_temp.fair_lead and pg_temp.fair_stage (issue 19, fair_lead_session),
-- made by pepsi.fair_lead_open at the session's first claim in the shape
-- of pepsi.fair_lead and pepsi.fair_stage: PostgreSQL prunes a temporary
-- table against its own session's snapshot only, so a snapshot held open
-- elsewhere does not pile up a version of a lead per claim. A new session
-- has none: its first claim with a claim id answers leads_lost, as after
-- a crash, and the dispatcher sends every lead again.
-- An idle claim (issue 19, claim_fair_idle): when no stage has more
-- eligible pending rows than its cap and p_window_size (read from the
-- mark, paused tubes' rows skipped, as the FIFO share reads: at most
-- least(cap, p_window_size) + 1 entries a stage), the claim takes them
-- all, oldest first, without the window and the ranking: every waiting
-- row gets a slot, so there is nothing to rank (D-53 orders rows
-- competing for slots; here none compete), and they have at most
-- p_window_size senders (D-60). The rows, the per-stage columns and the
-- kept leads are what the full claim returns for them: window_next NULL
-- and window_lap true (the window held every waiting sender),
-- fifo_credit by the same arithmetic, the oldest f rows marked fifo,
-- lead_floor the least lead among the senders claimed, leads_lost as
-- below. What it saves is starting the full statement's plan (about 160
-- nodes) and its probes: most of a claim with one message waiting. The
-- check runs only when the session's previous fair claim filled no
-- stage (took fewer than least(cap, p_window_size) rows of each): under
-- load a claim goes straight to the full statement and reads nothing
-- more. The session setting pepsi.claim_fair_full remembers it ('1':
-- some stage was filled, or no claim yet; '0': none); a caller who sets
-- it only chooses whether the check runs, never what is claimed. A stage
-- whose senders start below the mark (claim_mark with a list) is judged
-- from the mark: rows below it wait for the next refresh, as the FIFO
-- share's do.
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
    v_idle boolean := false; -- the idle claim applies (no stage has more rows than its cap)
    v_idle_ids bigint[]; -- its rows (the update takes them by id; the result is sorted there)
    v_pending pepsi.workqueue_status := 'pending';
    v_full boolean;      -- this claim filled a stage
    v_i int;
    v_nx_id bigint[];
begin
    -- The claim commits without waiting for its WAL to reach the disk
    -- (issue 19): a claim lost in a crash leaves its rows pending, which
    -- is what the dispatcher makes of its running rows after a restart
    -- anyway (D-18, workqueue_unclaim), and the WAL is written in order:
    -- a worker's durable commit after it makes the claim durable too. The
    -- wait was 0.4 ms of the claim's round trip with one message in the
    -- pipeline (bench/run latency). Only when the claim is its
    -- transaction's first write: a caller who wrote before it in the same
    -- transaction keeps the durability it asked for.
    if pg_catalog.pg_current_xact_id_if_assigned() is null then
        perform pg_catalog.set_config('synchronous_commit', 'off', true);
    end if;
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

    -- The session's kept leads (fair_lead_open): one catalogue probe a
    -- claim. The tables are written by this definer function, so one of
    -- that name made by anyone else (its owner is the caller, or it has a
    -- trigger or rule) is refused there, never written to.
    if (select count(*) from pg_catalog.pg_class c
         where c.oid in (pg_catalog.to_regclass('pg_temp.fair_lead'), pg_catalog.to_regclass('pg_temp.fair_stage'))
           and c.relowner = (select r.oid from pg_catalog.pg_roles r where r.rolname = current_user)
           and c.relkind = 'r' and not c.relhastriggers and not c.relhasrules and not c.relrowsecurity) <> 2 then
        perform pepsi.fair_lead_open();
    end if;

    -- The kept leads (with a claim id): a synced stage keeps only what this
    -- call sends; each lead sent is kept, or deleted when worth less than
    -- half an average message (D-56). Nothing runs when nothing changed.
    if v_inc is not null and true = any (p_lead_sync) then
        delete from pg_temp.fair_lead f
         using unnest(p_stages, p_lead_sync) as s(stage, sync)
         where s.sync and f.stage = s.stage
           and not exists (select 1 from unnest(p_lead_stages, p_lead_senders) as l(stage, sender)
                            where l.stage = f.stage and l.sender = f.sender_key);
        insert into pg_temp.fair_stage as m (stage, incarnation)
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
            delete from pg_temp.fair_lead f using k
             where not k.keep and f.stage = k.stage and f.sender_key = k.sender
        )
        insert into pg_temp.fair_lead as f (stage, sender_key, incarnation, v)
        select k.stage, k.sender, v_inc, k.v from k where k.keep
            on conflict (stage, sender_key) do update set incarnation = excluded.incarnation, v = excluded.v;
    end if;


    -- The idle claim (see the head comment), when the previous claim
    -- filled no stage: every stage's eligible rows, least(cap,
    -- p_window_size) + 1 at most, each stage's scan the front of its
    -- workqueue_pending_idx range from the mark, as the plain claim reads.
    if pg_catalog.current_setting('pepsi.claim_fair_full', true) = '0' then
        select coalesce(bool_and(c.n <= c.cap), true), array_agg(c.id)
          into v_idle, v_idle_ids
          from (select s.ord, least(s.cap, p_window_size) as cap, q.workqueue_id as id, q.priority,
                       count(*) over (partition by s.ord) as n
                  from unnest(p_stages, p_caps, v_mark_p, v_mark_id) with ordinality as s(stage, cap, mark_p, mark_id, ord)
                       cross join lateral (
                           select q.workqueue_id, q.priority from pepsi.workqueue q
                            where q.stage = s.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                              and (q.priority, q.workqueue_id)
                                  >= (coalesce(s.mark_p, (-32768)::smallint), coalesce(s.mark_id, (-9223372036854775808)::bigint))
                              and (v_paused is null or not exists (
                                   select 1 from pepsi.workqueue t
                                    where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                            order by q.priority, q.workqueue_id
                            limit least(s.cap, p_window_size) + 1) q
                 where s.cap > 0) c;
    end if;
    if v_idle then
        with claimed as (
            update pepsi.workqueue w
               set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
             -- Each row by a probe of the primary key (bitmaps are off):
             -- not a join, which the generic plan made a hash join over a
             -- sequential scan of workqueue; the status compared with a
             -- variable, not the constant, from which the planner would
             -- prove the partial indexes' predicate and read one of them
             -- whole (the full claim's update says more).
             where w.workqueue_id = any (v_idle_ids) and w.status = v_pending
            returning w.workqueue_id, w.stage, w.sender_key, w.priority
        ),
        -- Per stage: how many were claimed (the FIFO share's n), the FIFO
        -- share f and the credit carried over, as the full claim counts.
        per as (
            select s.ord, s.stage, s.avg_usec, coalesce(s.base, 0) as base, coalesce(s.scale, 1) as scale,
                   (coalesce(s.credit, 99) + least(x.n, s.cap) * p_fifo_percent) / 100 as f,
                   (coalesce(s.credit, 99) + least(x.n, s.cap) * p_fifo_percent) % 100 as credit_next,
                   v_inc is not null and not coalesce(s.sync, false)
                     and not exists (select 1 from pg_temp.fair_stage m
                                      where m.stage = s.stage and m.incarnation = v_inc) as lost
              from unnest(p_stages, p_caps, p_avg_usec, p_fifo_credit, p_lead_base, p_lead_scale, p_lead_sync)
                   with ordinality as s(stage, cap, avg_usec, credit, base, scale, sync, ord)
                   join (select claimed.stage, count(*)::int as n from claimed group by claimed.stage) x
                     on x.stage = s.stage
        ),
        -- Each claimed sender's lead, read as the full claim reads it:
        -- passed in (no claim id) or kept (a kept lead under half an
        -- average counts as 0).
        sl as (
            select per.ord, min(case when v_inc is null then coalesce((l.v - per.base) / per.scale, 0)
                                     when (k.v - per.base) / per.scale >= per.avg_usec / 2
                                         then (k.v - per.base) / per.scale
                                     else 0 end) as lead_floor
              from (select distinct claimed.stage, claimed.sender_key from claimed) c
                   join per on per.stage = c.stage
                   left join lateral (
                       select max(l.v) as v
                         from unnest(p_lead_stages, p_lead_senders, p_lead_usec) as l(stage, sender, v)
                        where v_inc is null and l.stage = c.stage and l.sender = c.sender_key) l on true
                   left join lateral (
                       select f.v from pg_temp.fair_lead f
                        where v_inc is not null and f.stage = c.stage and f.sender_key = c.sender_key
                          and f.incarnation = v_inc) k on true
             group by per.ord
        )
        select array_agg(r.workqueue_id), array_agg(r.stage), array_agg(r.sender_key), array_agg(r.fifo),
               array_agg(null::text), array_agg(true), array_agg(r.credit_next), array_agg(r.lead_floor),
               array_agg(r.lost), array_agg(r.priority)
          into v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost, v_pr
          from (select c.workqueue_id, c.stage, c.sender_key, c.priority,
                       row_number() over (partition by per.ord order by c.priority, c.workqueue_id) <= per.f as fifo,
                       per.credit_next, sl.lead_floor, per.lost
                  from claimed c join per on per.stage = c.stage join sl on sl.ord = per.ord
                 order by per.ord, c.priority, c.workqueue_id) r;
        -- Every row at or past the mark was taken: the mark moves past the
        -- last (no next row).
        if cardinality(array_remove(v_mark_id, null)) > 0 then
            perform pepsi.claim_mark_advance(p_stages, p_owner_slot, v_mark_p, v_mark_id, v_st, v_pr, v_ids);
        end if;
        perform pg_catalog.set_config('pepsi.claim_fair_full', '0', false);
        return query
        select r.id, r.stage, r.sender, r.fifo, r.wnext, r.wlap, r.credit, r.floor, r.lost
          from unnest(v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost)
               as r(id, stage, sender, fifo, wnext, wlap, credit, floor, lost);
        return;
    end if;

    with recursive
    -- The stages with free capacity.
    -- The stages with free capacity, their frames, and whether their kept
    -- leads are lost (leads_lost).
    st as (
        select s.ord::int as ord, s.stage, s.cap, s.avg_usec, s.after, coalesce(s.credit, 99) as credit,
               coalesce(s.base, 0) as base, coalesce(s.scale, 1) as scale,
               v_inc is not null and not coalesce(s.sync, false)
                 and not exists (select 1 from pg_temp.fair_stage m
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
    -- p_window_after, in workqueue_sender_wrap (claim_fair_wrap): the
    -- same steps, outside this plan, which is started at every claim.
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
    -- win2: the wrap-around, a call (workqueue_sender_wrap) made only for
    -- a stage whose window started after a sender and did not fill up.
    win2(ord, stage, n, sender, ids, lastp, more) as (
        select st.ord, st.stage, w.n, w.sender_key, w.ids, w.last_priority, w.more
          from st
               left join (select win1.ord, max(win1.n) as n from win1 group by win1.ord) c on c.ord = st.ord
               cross join lateral pepsi.workqueue_sender_wrap(st.stage, st.after, coalesce(c.n, 0)::int, p_window_size,
                                                              p_owner_slot, v_paused, st.senders, st.sender_p,
                                                              st.sender_id, st.mark_p, st.mark_id) w
         where st.after is not null and coalesce(c.n, 0) < p_window_size
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
                   select f.v from pg_temp.fair_lead f
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
    -- One sort of the claimed rows, then plain aggregates, which keep the
    -- order of their input: an aggregate with its own ORDER BY sorts its
    -- input again, each one (PostgreSQL 15), ten sorts a claim.
    select array_agg(c.workqueue_id), array_agg(c.stage), array_agg(c.sender_key), array_agg(c.fifo),
           array_agg(c.window_next), array_agg(c.window_lap), array_agg(c.credit_next),
           array_agg(c.lead_floor), array_agg(c.lost), array_agg(c.priority),
           (select array_agg(o.stage order by o.ord) from oldest o where o.extra),
           (select array_agg(o.priority order by o.ord) from oldest o where o.extra),
           (select array_agg(o.id order by o.ord) from oldest o where o.extra)
      into v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost, v_pr, v_nx_st, v_nx_p, v_nx_id
      from (select c.workqueue_id, c.stage, c.sender_key, c.fifo, share.window_next, share.window_lap,
                   share.credit_next, share.lead_floor, share.lost, c.priority
              from claimed c
                   join share on share.ord = c.ord
             order by c.ord, c.pos) c;
    -- A plain expression, not a query: no executor run when no stage is
    -- marked (v_mark_id NULL or all NULLs), i.e. in normal mode.
    if cardinality(array_remove(v_mark_id, null)) > 0 then
        perform pepsi.claim_mark_advance(p_stages, p_owner_slot, v_mark_p, v_mark_id, v_st, v_pr, v_ids,
                                         v_nx_st, v_nx_p, v_nx_id);
    end if;
    -- Did this claim fill a stage (least(cap, p_window_size) rows)? Then
    -- the next claim skips the idle check (see the head comment). Simple
    -- expressions in a loop over the stages, not a query: no executor
    -- start on every claim.
    v_full := false;
    for v_i in 1 .. v_n loop
        if p_caps[v_i] > 0
           and coalesce(cardinality(array_positions(v_st, p_stages[v_i])), 0) >= least(p_caps[v_i], p_window_size) then
            v_full := true;
            exit;
        end if;
    end loop;
    perform pg_catalog.set_config('pepsi.claim_fair_full', case when v_full then '1' else '0' end, false);
    return query
    select r.id, r.stage, r.sender, r.fifo, r.wnext, r.wlap, r.credit, r.floor, r.lost
      from unnest(v_ids, v_st, v_sk, v_fifo, v_wnext, v_wlap, v_credit, v_floor, v_lost)
           as r(id, stage, sender, fifo, wnext, wlap, credit, floor, lost);
end
$$;

commit;
