-- Deploy pepsi:webhook_pull to pg
-- requires: webhook_events
-- requires: webhook_ingest
--
-- The second way to process a provider's events (W-15..W-19): the
-- application's own workers pull them inside their own transaction and
-- mark them processed before they commit. Any number of workers run the
-- pull at once: SKIP LOCKED hands each one rows nobody else holds, and
-- nobody waits for anybody (W-16, W-17). ORDER BY received_at is a
-- preference about which rows are taken next, not a promise about the
-- order in which they are finished (W-19): a worker that finishes its
-- batch first commits first. Downstream code that needs an order must
-- keep it itself.

begin;

create function pepsi.webhook_events_pull(p_provider text, p_limit int default 50)
returns table (webhook_event_id bigint, provider text, external_id text, payload bytea,
               headers jsonb, received_at timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns up to p_limit (1 to 10000) unprocessed events of p_provider,
-- oldest received first as a preference only (W-19), and locks them
-- until the caller's transaction ends:
--   SELECT ... WHERE processed_at IS NULL ORDER BY received_at
--   FOR UPDATE SKIP LOCKED LIMIT p_limit        (W-15; never plain FOR UPDATE, W-16)
-- Call it inside a transaction (BEGIN; pull; work;
-- webhook_events_mark_processed; COMMIT): in autocommit mode the locks
-- end with the call and two workers can get the same event. A worker that
-- dies or rolls back releases its rows, and the next pull hands them out
-- again. A redelivery of a locked event is answered 200 by the ingress
-- without waiting for the lock (outcome busy of webhook_events_ingest)
-- and recorded; the pull that next takes the event applies it first
-- (webhook_event_refresh_apply), so a puller always gets the newest
-- delivery recorded so far (W-11, issue 12).
-- Raises PX003 (bad limit), PX011 (unknown provider), PX013 (the
-- provider's events go into the pipeline, not to pullers).
-- Tables: webhook_events (read, row locks, update), webhook_event_refresh
-- (read, delete), webhook_provider (read).
declare
    v_stage text;
    v_ids bigint[];
begin
    if p_limit is null or p_limit not between 1 and 10000 then
        raise exception 'invalid pull limit %', coalesce(p_limit::text, '<null>')
            using errcode = 'PX003', hint = 'Pull 1 to 10000 events at a time.';
    end if;
    select p.stage into v_stage from pepsi.webhook_provider p where p.provider = p_provider;
    if not found then
        raise exception 'unknown webhook provider "%"', pepsi.excerpt(p_provider) using errcode = 'PX011';
    end if;
    if v_stage is not null then
        raise exception 'webhook provider "%" routes its events into the pipeline (stage "%")', p_provider, v_stage
            using errcode = 'PX013',
                  hint = 'Set its stage to null (webhook_provider_change) to pull its events.';
    end if;
    select array_agg(x.webhook_event_id) into v_ids
      from (select e.webhook_event_id
              from pepsi.webhook_events e
             where e.provider = p_provider
               and e.processed_at is null
             order by e.received_at
             limit p_limit
               for update skip locked) x;
    if v_ids is null then
        return;
    end if;
    -- Deliveries that arrived while another transaction held these rows.
    if exists (select 1 from pepsi.webhook_event_refresh r where r.webhook_event_id = any (v_ids)) then
        perform pepsi.webhook_event_refresh_apply(v_ids, p_limit);
    end if;
    return query
    select e.webhook_event_id, e.provider, e.external_id, e.payload, e.headers, e.received_at
      from pepsi.webhook_events e
     where e.webhook_event_id = any (v_ids)
     order by e.received_at, e.webhook_event_id;
end
$$;

create function pepsi.webhook_events_mark_processed(p_ids bigint[], p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Marks the events p_ids processed at p_now (W-18) and returns how many
-- it marked; an unknown id or an event already processed is skipped (a
-- second mark keeps the first time). Call it in the transaction that
-- pulled them, so that the work and the mark commit together.
-- Raises PX003 (p_ids NULL, p_now NULL). Tables: webhook_events (update).
declare
    v_count int;
begin
    if p_ids is null then
        raise exception 'no event ids given' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    update pepsi.webhook_events e
       set processed_at = p_now
     where e.webhook_event_id = any (p_ids)
       and e.processed_at is null;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

create view pepsi.webhook_event_overview as
-- Per provider: stored events, how many are not processed yet, the oldest
-- of those, and the last delivery received. A first answer to "is anything
-- stuck?"; it counts the whole table, so it is for people, not for polling.
select e.provider, count(*) as events,
       count(*) filter (where e.processed_at is null) as unprocessed,
       min(e.received_at) filter (where e.processed_at is null) as oldest_unprocessed_at,
       max(e.received_at) as last_received_at
  from pepsi.webhook_events e
 group by e.provider;

comment on view pepsi.webhook_event_overview is
    'Per webhook provider: events stored, unprocessed, oldest unprocessed, last received.';

revoke all on function pepsi.webhook_events_pull(text, int) from public;
revoke all on function pepsi.webhook_events_mark_processed(bigint[], timestamptz) from public;
revoke all on table pepsi.webhook_event_overview from public;
grant execute on function pepsi.webhook_events_pull(text, int) to pepsi_worker;
grant execute on function pepsi.webhook_events_mark_processed(bigint[], timestamptz) to pepsi_worker;
grant select on pepsi.webhook_event_overview to pepsi_reader;

commit;
