-- Deploy pepsi:webhook_gaps to pg
-- requires: webhook_tombstones
--
-- Gap detection (W-29, W-30, W-36): an event that never reached the
-- ingress leaves no row to reconcile, so each provider may describe the
-- sequence its external ids form, and a pass compares the ids that
-- sequence implies with those stored:
--
--   kind       ids                             example (prefix, width)
--   none       no sequence: no gap detection   UUIDs, hashes
--   integer    decimal, no leading zeros       1, 2, ... 10, 11
--   prefixed   prefix + decimal zero-padded    evt_0001 ... evt_9999, evt_10000
--              to width digits (a number       ('evt_', 4); prefix '' gives
--              longer than width is written    plain zero-padded numbers
--              in full)
--
-- Only the canonical spelling of a number is part of the sequence
-- ('evt_042' is not number 42 when the width is 4): any other id (a test
-- event, an id of another form) is outside it and never causes a gap.
--
-- The anti-join (W-29) is generate_external_id_sequence() against
-- webhook_events, excluding webhook_tombstones, written with NOT EXISTS on
-- both sides: NOT IN (subquery) returns nothing at all once the subquery
-- yields a NULL, and NOT EXISTS has no such trap (W-30). Each pass scans a
-- bounded window (W-36) that advances:
--   - the window starts at scan_from and holds at most window_size ids;
--   - it ends at the highest number seen by the previous pass, so an id
--     just above the newest delivery has had one pass interval to arrive
--     (providers deliver out of order, W-01) before it counts as missing;
--   - the high water is raised from the events stored since the last pass
--     only (a range of the primary key), never from the whole table;
--   - after the scan, scan_from moves past the window: the window's cost
--     is its size, not the table's, and a provider far behind catches up
--     one window per pass.
-- A missing id becomes a row of webhook_gaps (state open). Later passes
-- re-check open gaps by key: arrived (the delivery came after all),
-- tombstoned, or, still missing after a retry, a back-fill request
-- (webhook_backfill).

begin;

create table pepsi.webhook_id_sequence (
    provider           text
                       constraint webhook_id_sequence_pkey primary key,
    kind               text not null
                       constraint webhook_id_sequence_kind_check
                       check (kind in ('none', 'integer', 'prefixed')),
    prefix             text not null default ''
                       constraint webhook_id_sequence_prefix_check
                       check (octet_length(prefix) <= 100),
    width              int not null default 0
                       constraint webhook_id_sequence_width_check
                       check (width between 0 and 18),
    window_size        int not null default 10000
                       constraint webhook_id_sequence_window_size_check
                       check (window_size between 1 and 1000000),
    retry_after        interval not null default interval '10 minutes'
                       constraint webhook_id_sequence_retry_after_check
                       check (retry_after >= interval '0'),
    backfill_stage     pepsi.stage_name,
    backfill_tube      pepsi.tube_name not null default 'default',
    max_attempts       int not null default 3
                       constraint webhook_id_sequence_max_attempts_check
                       check (max_attempts between 1 and 100),
    scan_from          bigint not null default 1
                       constraint webhook_id_sequence_scan_from_check
                       check (scan_from >= 0),
    high_water         bigint,
    scanned_event_id   bigint not null default 0,
    enabled            boolean not null default true,
    updated_at         timestamptz not null default now(),
    constraint webhook_id_sequence_shape_check
        check ((kind <> 'integer' or (prefix = '' and width = 0))
               and (kind <> 'prefixed' or width >= 1))
);

comment on table pepsi.webhook_id_sequence is
    'Per webhook provider: the sequence its external ids form (none, integer, prefixed), the gap scan''s window and where it stands, and where back-fill requests go. Written with webhook_id_sequence_set and webhook_id_sequence_rewind.';
comment on column pepsi.webhook_id_sequence.scan_from is
    'The next number the gap scan looks at; every number below it was scanned.';
comment on column pepsi.webhook_id_sequence.high_water is
    'The highest number among the stored events read so far; the next pass''s window ends here.';
comment on column pepsi.webhook_id_sequence.scanned_event_id is
    'Events with a webhook_event_id up to this were read for the high water.';
comment on column pepsi.webhook_id_sequence.retry_after is
    'How long a gap stays open, re-checked by later passes, before a back-fill is requested (W-33).';

create table pepsi.webhook_gaps (
    provider      text not null,
    external_id   text not null,
    number        bigint,
    state         text not null default 'open'
                  constraint webhook_gaps_state_check
                  check (state in ('open', 'backfill', 'failed', 'arrived', 'found', 'tombstoned')),
    first_seen_at timestamptz not null,
    checked_at    timestamptz not null,
    attempts      int not null default 0,
    workqueue_id  bigint,
    requested_at  timestamptz,
    resolved_at   timestamptz,
    detail        text,
    constraint webhook_gaps_pkey primary key (provider, external_id),
    constraint webhook_gaps_resolved_check
        check ((state in ('arrived', 'found', 'tombstoned')) = (resolved_at is not null))
);

comment on table pepsi.webhook_gaps is
    'Ids of a provider''s sequence found missing, and what became of them: open (re-checked), backfill (requested, workqueue_id), failed (the back-fill failed), arrived (the delivery came after all), found (stored by the back-fill), tombstoned.';

-- The passes re-check what is unresolved, per provider.
create index webhook_gaps_unresolved_idx on pepsi.webhook_gaps (provider, number)
    where resolved_at is null;

create function pepsi.webhook_external_id_format(p_kind text, p_prefix text, p_width int, p_number bigint)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The external id of number p_number in a sequence of kind p_kind:
-- integer: the decimal number; prefixed: p_prefix and the number
-- zero-padded to p_width digits (written in full when it is longer).
-- NULL for kind none or a negative number.
    select case when p_number >= 0 then
               case p_kind
                   when 'integer' then p_number::text
                   when 'prefixed' then p_prefix || case when length(p_number::text) >= p_width then p_number::text
                                                         else lpad(p_number::text, p_width, '0') end
               end
           end
$$;

create function pepsi.webhook_external_id_number(p_kind text, p_prefix text, p_width int, p_external_id text)
returns bigint
language plpgsql immutable parallel safe
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The number of p_external_id in a sequence of kind p_kind, or NULL when
-- the id is not the canonical spelling of a number of that sequence
-- (webhook_external_id_format of the result gives p_external_id back).
-- plpgsql, not sql: the casts run only after the checks before them.
declare
    v_digits text;
    v_number bigint;
begin
    if p_kind = 'integer' then
        v_digits := p_external_id;
    elsif p_kind = 'prefixed' and left(p_external_id, length(p_prefix)) = p_prefix then
        v_digits := substr(p_external_id, length(p_prefix) + 1);
    else
        return null;
    end if;
    if v_digits !~ '^[0-9]{1,18}$' then
        return null;
    end if;
    v_number := v_digits::bigint;
    if pepsi.webhook_external_id_format(p_kind, p_prefix, p_width, v_number) is distinct from p_external_id then
        return null;
    end if;
    return v_number;
end
$$;

create function pepsi.webhook_id_sequence_set(
    p_provider       text,
    p_kind           text,
    p_prefix         text default '',
    p_width          int default 0,
    p_scan_from      bigint default null,
    p_window_size    int default 10000,
    p_retry_after    interval default interval '10 minutes',
    p_backfill_stage text default null,
    p_backfill_tube  text default 'default',
    p_max_attempts   int default 3,
    p_enabled        boolean default true)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: describes the id sequence of p_provider (kind none,
-- integer or prefixed with p_prefix and p_width, see the top of this
-- change) and how gaps are handled: the window of one scan, how long a
-- gap waits before a back-fill (p_retry_after), the stage and tube of
-- back-fill requests (NULL stage: gaps are only flagged) and how many
-- requests an id gets. p_scan_from is where the scan starts (the
-- provider's first number; default 1 for a new row, unchanged for an
-- existing one). A new sequence takes its high water from the events
-- already stored (one read of the provider's ids), so its first scan
-- covers them; setting it again keeps the scan's position.
-- Raises PX001 (bad stage), PX006 (bad tube), PX011 (unknown provider),
-- PX021 (bad sequence or limits). Tables: webhook_id_sequence.
begin
    if not exists (select 1 from pepsi.webhook_provider p where p.provider = p_provider) then
        raise exception 'unknown webhook provider "%"', pepsi.excerpt(p_provider) using errcode = 'PX011';
    end if;
    if p_kind is null or p_kind not in ('none', 'integer', 'prefixed') then
        raise exception 'unknown id sequence kind "%"', coalesce(p_kind, '<null>')
            using errcode = 'PX021', hint = 'Use none, integer or prefixed.';
    end if;
    if p_kind = 'integer' and (coalesce(p_prefix, '') <> '' or coalesce(p_width, 0) <> 0) then
        raise exception 'an integer id sequence has no prefix and no width' using errcode = 'PX021';
    end if;
    if p_kind = 'prefixed' and (p_prefix is null or octet_length(p_prefix) > 100 or p_width is null
                                or p_width not between 1 and 18) then
        raise exception 'a prefixed id sequence needs a prefix (at most 100 bytes) and a width of 1 to 18 digits'
            using errcode = 'PX021';
    end if;
    if p_window_size is null or p_window_size not between 1 and 1000000 then
        raise exception 'window size must lie between 1 and 1000000' using errcode = 'PX021';
    end if;
    if p_retry_after is null or p_retry_after < interval '0' then
        raise exception 'retry_after must not be negative' using errcode = 'PX021';
    end if;
    if p_max_attempts is null or p_max_attempts not between 1 and 100 then
        raise exception 'max attempts must lie between 1 and 100' using errcode = 'PX021';
    end if;
    if p_scan_from is not null and p_scan_from < 0 then
        raise exception 'scan_from must not be negative' using errcode = 'PX021';
    end if;
    if p_backfill_stage is not null then
        perform pepsi.stage_check(p_backfill_stage);
    end if;
    perform pepsi.tube_check(coalesce(p_backfill_tube, 'default'));
    insert into pepsi.webhook_id_sequence as s
        (provider, kind, prefix, width, window_size, retry_after, backfill_stage, backfill_tube,
         max_attempts, scan_from, enabled)
    values (p_provider, p_kind, case when p_kind = 'prefixed' then p_prefix else '' end,
            case when p_kind = 'prefixed' then p_width else 0 end, p_window_size, p_retry_after,
            p_backfill_stage, coalesce(p_backfill_tube, 'default'), p_max_attempts,
            coalesce(p_scan_from, 1), coalesce(p_enabled, true))
    on conflict (provider) do nothing;
    if found then
        -- A new sequence starts from the events already stored: one read
        -- of the provider's ids for the high water, the newest event id
        -- as the cursor.
        update pepsi.webhook_id_sequence s
           set high_water = (select max(pepsi.webhook_external_id_number(s.kind, s.prefix, s.width, e.external_id))
                               from pepsi.webhook_events e where e.provider = p_provider),
               scanned_event_id = coalesce((select max(e.webhook_event_id) from pepsi.webhook_events e), 0)
         where s.provider = p_provider;
        return;
    end if;
    update pepsi.webhook_id_sequence s
       set kind = p_kind, prefix = case when p_kind = 'prefixed' then p_prefix else '' end,
           width = case when p_kind = 'prefixed' then p_width else 0 end,
           window_size = p_window_size, retry_after = p_retry_after,
           backfill_stage = p_backfill_stage, backfill_tube = coalesce(p_backfill_tube, 'default'),
           max_attempts = p_max_attempts, scan_from = coalesce(p_scan_from, s.scan_from),
           enabled = coalesce(p_enabled, true), updated_at = now()
     where s.provider = p_provider;
end
$$;

create function pepsi.webhook_id_sequence_rewind(p_provider text, p_scan_from bigint)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: the next gap scans of p_provider start again at
-- p_scan_from (say, to re-scan a range after removing tombstones).
-- Tombstoned ids and stored events are never flagged; gaps already known
-- are not recorded twice. Raises PX021 (no sequence, negative number).
-- Tables: webhook_id_sequence (update).
begin
    if p_scan_from is null or p_scan_from < 0 then
        raise exception 'scan_from must not be negative' using errcode = 'PX021';
    end if;
    update pepsi.webhook_id_sequence s set scan_from = p_scan_from, updated_at = now()
     where s.provider = p_provider;
    if not found then
        raise exception 'webhook provider "%" has no id sequence', pepsi.excerpt(p_provider)
            using errcode = 'PX021';
    end if;
end
$$;

create function pepsi.generate_external_id_sequence(p_provider text, p_from bigint, p_to bigint)
returns setof text
language plpgsql stable
security definer
rows 10000
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The external ids that p_provider's sequence implies for the numbers
-- p_from to p_to, in order (W-29). The spec's generate_external_id_sequence($1, $2)
-- with the provider first, since ids are keyed per provider. A window
-- holds at most 1 000 000 ids (W-36); p_to below p_from is an empty window.
-- Raises PX003 (NULL or negative bounds, a window too large), PX011
-- (unknown provider), PX021 (the provider has no sequence, or kind none).
-- Tables: webhook_id_sequence, webhook_provider (read).
declare
    v_seq pepsi.webhook_id_sequence;
begin
    if p_from is null or p_to is null or p_from < 0 then
        raise exception 'invalid id window % to %', coalesce(p_from::text, '<null>'), coalesce(p_to::text, '<null>')
            using errcode = 'PX003';
    end if;
    if p_to - p_from >= 1000000 then
        raise exception 'an id window holds at most 1000000 ids, not %', p_to - p_from + 1
            using errcode = 'PX003', hint = 'Scan in bounded windows (W-36).';
    end if;
    select * into v_seq from pepsi.webhook_id_sequence s where s.provider = p_provider;
    if not found or v_seq.kind = 'none' then
        if not exists (select 1 from pepsi.webhook_provider p where p.provider = p_provider) then
            raise exception 'unknown webhook provider "%"', pepsi.excerpt(p_provider) using errcode = 'PX011';
        end if;
        raise exception 'webhook provider "%" has no id sequence', p_provider using errcode = 'PX021';
    end if;
    return query
    select pepsi.webhook_external_id_format(v_seq.kind, v_seq.prefix, v_seq.width, n)
      from generate_series(p_from, p_to) n;
end
$$;

create function pepsi.webhook_gaps_find(p_provider text, p_from bigint, p_to bigint)
returns table (external_id text, number bigint)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
set enable_hashjoin = off
set enable_mergejoin = off
as $$
-- The gap anti-join (W-29, W-30): the ids of p_provider's sequence from
-- p_from to p_to that have no event and no tombstone, in order. NOT
-- EXISTS on both sides: NULL-safe, unlike the article's NOT IN, and each
-- probe is one look-up in a (provider, external_id) index. Hash and merge
-- joins are off for this function: the planner would otherwise hash all
-- of the provider's events (measured: a sequential scan of the table for
-- a window of 10 000 ids), and the cost must follow the window's size,
-- not the table's (W-36).
-- Raises as generate_external_id_sequence.
-- Tables: webhook_events, webhook_tombstones, webhook_id_sequence (read).
    select expected.external_id, p_from + expected.n - 1
      from pepsi.generate_external_id_sequence(p_provider, p_from, p_to)
           with ordinality as expected(external_id, n)
     where not exists (select 1 from pepsi.webhook_events e
                        where e.provider = p_provider and e.external_id = expected.external_id)
       and not exists (select 1 from pepsi.webhook_tombstones t
                        where t.provider = p_provider and t.external_id = expected.external_id)
     order by expected.n
$$;

create function pepsi.webhook_gaps_recheck(p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Resolves the unresolved gaps whose event is now stored (arrived: the
-- delivery came late, or the original came while a back-fill was under
-- way) or whose id was tombstoned meanwhile. One look-up per unresolved
-- gap. Returns how many were resolved. Part of each reconciliation pass.
-- Raises PX003 (a NULL p_now).
-- Tables: webhook_gaps (update); webhook_events, webhook_tombstones (read).
declare
    v_count int;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    with r as (
        select g.provider, g.external_id,
               case when exists (select 1 from pepsi.webhook_events e
                                  where e.provider = g.provider and e.external_id = g.external_id) then 'arrived'
                    when exists (select 1 from pepsi.webhook_tombstones t
                                  where t.provider = g.provider and t.external_id = g.external_id) then 'tombstoned'
               end as outcome
          from pepsi.webhook_gaps g
         where g.resolved_at is null
    ), done as (
        update pepsi.webhook_gaps g
           set state = r.outcome, resolved_at = p_now, checked_at = p_now
          from r
         where g.provider = r.provider and g.external_id = r.external_id and r.outcome is not null
        returning 1)
    select count(*)::int into v_count from done;
    return v_count;
end
$$;

create function pepsi.webhook_gaps_detect(p_now timestamptz default now())
returns table (provider text, external_id text, number bigint)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- One step of the gap scan for every provider with an enabled sequence
-- (see the top of this change): the window [scan_from, min(scan_from +
-- window_size - 1, the high water of the previous pass)] is anti-joined
-- (webhook_gaps_find) and each missing id is recorded as an open gap and
-- returned; scan_from moves past the window; the high water is raised from
-- the events stored since the last pass (at most 1 000 000 event ids a
-- pass). Part of each reconciliation pass, which holds the lock that keeps
-- two scans apart. Raises PX003 (a NULL p_now).
-- Tables: webhook_id_sequence (update, row locks),
-- webhook_gaps (insert); webhook_events, webhook_tombstones (read).
declare
    v_seq pepsi.webhook_id_sequence;
    v_to bigint;
    v_max bigint;
    v_top bigint;
    v_upto bigint;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select max(e.webhook_event_id) into v_top from pepsi.webhook_events e;
    for v_seq in
        select * from pepsi.webhook_id_sequence s
         where s.enabled and s.kind <> 'none'
         order by s.provider
           for update
    loop
        -- The window ends at the high water the previous pass saw (none
        -- yet: no window; least() would skip the NULL).
        v_to := case when v_seq.high_water is not null
                     then least(v_seq.scan_from + v_seq.window_size - 1, v_seq.high_water) end;
        if v_to is not null and v_to >= v_seq.scan_from then
            return query
            insert into pepsi.webhook_gaps as g (provider, external_id, number, first_seen_at, checked_at)
            select v_seq.provider, f.external_id, f.number, p_now, p_now
              from pepsi.webhook_gaps_find(v_seq.provider, v_seq.scan_from, v_to) f
            on conflict on constraint webhook_gaps_pkey do nothing
            returning g.provider, g.external_id, g.number;
            v_seq.scan_from := v_to + 1;
        end if;
        -- New events since the last pass raise the high water: at most a
        -- million event ids from the first one after the cursor.
        select min(e.webhook_event_id) + 999999 into v_upto
          from pepsi.webhook_events e where e.webhook_event_id > v_seq.scanned_event_id;
        v_upto := least(coalesce(v_top, 0), coalesce(v_upto, 0));
        select max(pepsi.webhook_external_id_number(v_seq.kind, v_seq.prefix, v_seq.width, e.external_id))
          into v_max
          from pepsi.webhook_events e
         where e.webhook_event_id > v_seq.scanned_event_id and e.webhook_event_id <= v_upto
           and e.provider = v_seq.provider;
        update pepsi.webhook_id_sequence s
           set scan_from = v_seq.scan_from,
               high_water = greatest(v_seq.high_water, v_max),
               scanned_event_id = greatest(v_seq.scanned_event_id, v_upto),
               updated_at = p_now
         where s.provider = v_seq.provider;
    end loop;
end
$$;

revoke all on function pepsi.webhook_external_id_format(text, text, int, bigint) from public;
revoke all on function pepsi.webhook_external_id_number(text, text, int, text) from public;
revoke all on table pepsi.webhook_id_sequence from public;
revoke all on table pepsi.webhook_gaps from public;
revoke all on function pepsi.webhook_id_sequence_set(text, text, text, int, bigint, int, interval, text, text, int, boolean) from public;
revoke all on function pepsi.webhook_id_sequence_rewind(text, bigint) from public;
revoke all on function pepsi.generate_external_id_sequence(text, bigint, bigint) from public;
revoke all on function pepsi.webhook_gaps_find(text, bigint, bigint) from public;
revoke all on function pepsi.webhook_gaps_recheck(timestamptz) from public;
revoke all on function pepsi.webhook_gaps_detect(timestamptz) from public;
grant select on pepsi.webhook_id_sequence, pepsi.webhook_gaps to pepsi_reader;
grant execute on function pepsi.generate_external_id_sequence(text, bigint, bigint),
                          pepsi.webhook_gaps_find(text, bigint, bigint) to pepsi_reader;

commit;
