-- Deploy pepsi:webhook_tombstones to pg
-- requires: webhook_events
--
-- Tombstones (W-31, W-32): external ids of a provider's id sequence that
-- are known never to have been sent (a draft that never fired, a test
-- event filtered out by the provider), so that gap detection skips them
-- instead of raising the same non-problem on every pass. Keyed like
-- webhook_events, by (provider, external_id). A tombstone is written by
-- the back-fill when the provider's API has no event for the id (source
-- "backfill", W-35) or by an operator who investigated a gap (source
-- "operator"). The gap anti-join (webhook_gaps) excludes them with NOT
-- EXISTS, so a tombstoned id is never flagged again.

begin;

create table pepsi.webhook_tombstones (
    provider    text not null,
    external_id text not null
                constraint webhook_tombstones_external_id_check
                check (external_id <> '' and octet_length(external_id) <= 1024),
    reason      text not null
                constraint webhook_tombstones_reason_check
                check (btrim(reason) <> '' and octet_length(reason) <= 1000),
    source      text not null
                constraint webhook_tombstones_source_check
                check (source in ('operator', 'backfill')),
    created_at  timestamptz not null default now(),
    constraint webhook_tombstones_pkey primary key (provider, external_id)
);

comment on table pepsi.webhook_tombstones is
    'External ids known never to have been sent; gap detection skips them (W-31, W-32). Written by the back-fill (source backfill) and by webhook_tombstone_add (source operator).';

create function pepsi.webhook_tombstone_add(p_provider text, p_external_id text, p_reason text,
                                            p_now timestamptz default now())
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: records that p_provider never sent p_external_id, with
-- why (e.g. 'draft invoice, never finalised'), so that gap detection
-- never flags it again (W-32). Returns true when the tombstone is new,
-- false when the id was already tombstoned (its first reason stays).
-- An id whose event is stored is refused: a tombstone says "never sent".
-- (An event that arrives after its tombstone is still stored and
-- processed; the anomaly check tombstones_for_existing_events shows it.)
-- Raises PX003 (no reason, a NULL p_now), PX011 (unknown provider),
-- PX012 (empty or over-long id), PX020 (the event is stored).
-- Tables: webhook_tombstones (insert); webhook_provider, webhook_events (read).
begin
    if not exists (select 1 from pepsi.webhook_provider p where p.provider = p_provider) then
        raise exception 'unknown webhook provider "%"', pepsi.excerpt(p_provider) using errcode = 'PX011';
    end if;
    if p_external_id is null or p_external_id = '' or octet_length(p_external_id) > 1024 then
        raise exception 'invalid external id "%"', pepsi.excerpt(p_external_id) using errcode = 'PX012';
    end if;
    if p_reason is null or btrim(p_reason) = '' or octet_length(p_reason) > 1000 then
        raise exception 'a tombstone needs a reason (1 to 1000 bytes)' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if exists (select 1 from pepsi.webhook_events e
                where e.provider = p_provider and e.external_id = p_external_id) then
        raise exception 'event "%" of webhook provider "%" is stored; it cannot be tombstoned', p_external_id, p_provider
            using errcode = 'PX020';
    end if;
    insert into pepsi.webhook_tombstones (provider, external_id, reason, source, created_at)
    values (p_provider, p_external_id, p_reason, 'operator', p_now)
    on conflict (provider, external_id) do nothing;
    return found;
end
$$;

create function pepsi.webhook_tombstone_remove(p_provider text, p_external_id text)
returns boolean
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: takes a tombstone back, so that the next gap scan that
-- covers the id (see webhook_id_sequence_rewind) flags it again if it is
-- still missing. Returns whether there was one. Tables: webhook_tombstones.
    with gone as (
        delete from pepsi.webhook_tombstones t
         where t.provider = p_provider and t.external_id = p_external_id
        returning 1)
    select exists (select 1 from gone)
$$;

revoke all on table pepsi.webhook_tombstones from public;
revoke all on function pepsi.webhook_tombstone_add(text, text, text, timestamptz) from public;
revoke all on function pepsi.webhook_tombstone_remove(text, text) from public;
grant execute on function pepsi.webhook_tombstone_add(text, text, text, timestamptz), pepsi.webhook_tombstone_remove(text, text) to pepsi_operator;
grant select on pepsi.webhook_tombstones to pepsi_reader;

commit;
