-- Deploy pepsi:webhook_ingest to pg
-- requires: webhook_events
-- requires: workqueue_inject
--
-- Storing verified events: a burst of many events in one call, one
-- statement and one commit, and at most one NOTIFY workqueue (D-32).
-- The ingress calls it only for requests whose signature it has verified
-- (W-04..W-06), on a connection with synchronous_commit on (D-78), and
-- answers 2xx only once the call has returned, that is after the commit.
--
-- A redelivery that finds its event's row locked (a puller holds it, a
-- message of the event is finishing, a concurrent burst writes the same
-- event) is not waited for: that would stall every request behind the
-- burst. Its delivery is recorded instead in webhook_event_refresh and
-- applied once the row is free (webhook_event_refresh_apply): by the next
-- pull that takes the event, and by the next reconciliation pass. The
-- result is what the article's blocking upsert would have left (W-11,
-- W-12): the newest delivery (by received_at) when the event is still
-- unprocessed, nothing when it was processed meanwhile (issue 12). The
-- table holds deferred writes, not seen ids: the seen-check is still the
-- upsert (W-10, W-14), and a row there exists only while its event's row
-- is locked or until the next pass.

begin;

create table pepsi.webhook_event_refresh (
    refresh_id       bigint generated always as identity
                     constraint webhook_event_refresh_pkey primary key,
    webhook_event_id bigint not null,
    payload          bytea not null,
    headers          jsonb not null,
    received_at      timestamptz not null,
    recorded_at      timestamptz not null default now()
);

comment on table pepsi.webhook_event_refresh is
    'Redeliveries of unprocessed events that found the event''s row locked (outcome busy), waiting to be applied once it is free (webhook_event_refresh_apply; issue 12). No foreign key: it would lock the event row the writer must not wait for.';

create index webhook_event_refresh_event_idx on pepsi.webhook_event_refresh (webhook_event_id);

create function pepsi.webhook_event_refresh_apply(p_ids bigint[] default null, p_limit int default 1000)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Applies recorded redeliveries (webhook_event_refresh) to the events
-- p_ids (NULL: any, at most p_limit events, lowest ids first) whose rows
-- are free now (FOR NO KEY UPDATE SKIP LOCKED: a row still held is left
-- for later; the caller's own locks do not count). Per event, the newest
-- recorded delivery (latest received_at, then latest recorded) replaces
-- payload, headers and received_at when the event is unprocessed and
-- the delivery is not older than what is stored (W-11); when the event
-- is processed, or the stored delivery is newer, nothing changes (W-12).
-- Either way the event's recorded deliveries are forgotten, as are those
-- of events that no longer exist. Returns how many events were changed.
-- Raises PX003 (p_limit not 1 to 1000000). Tables: webhook_event_refresh
-- (read, delete), webhook_events (update, row locks).
declare
    v_n int;
begin
    if p_limit is null or p_limit not between 1 and 1000000 then
        raise exception 'invalid refresh limit %', coalesce(p_limit::text, '<null>') using errcode = 'PX003';
    end if;
    with pending as materialized (
        select distinct r.webhook_event_id
          from pepsi.webhook_event_refresh r
         where p_ids is null or r.webhook_event_id = any (p_ids)
         order by r.webhook_event_id
         limit p_limit
    ), free as materialized (
        select p.webhook_event_id, e.webhook_event_id as found_id, e.processed_at, e.received_at
          from pending p
          left join lateral (
                select x.webhook_event_id, x.processed_at, x.received_at from pepsi.webhook_events x
                 where x.webhook_event_id = p.webhook_event_id
                   for no key update skip locked) e on true
         -- an event that exists but is locked is not free; one that does
         -- not exist (any more) is, and its deliveries are dropped
         where e.webhook_event_id is not null
            or not exists (select 1 from pepsi.webhook_events y where y.webhook_event_id = p.webhook_event_id)
    ), newest as (
        select distinct on (r.webhook_event_id) r.webhook_event_id, r.payload, r.headers, r.received_at
          from pepsi.webhook_event_refresh r
          join free f on f.webhook_event_id = r.webhook_event_id
         order by r.webhook_event_id, r.received_at desc, r.refresh_id desc
    ), applied as (
        update pepsi.webhook_events e
           set payload = n.payload, headers = n.headers, received_at = n.received_at
          from newest n
          join free f on f.webhook_event_id = n.webhook_event_id
         where e.webhook_event_id = n.webhook_event_id
           and f.found_id is not null and f.processed_at is null and n.received_at >= f.received_at
        returning e.webhook_event_id
    ), dropped as (
        delete from pepsi.webhook_event_refresh r
         using free f
         where r.webhook_event_id = f.webhook_event_id
    )
    select count(*) into v_n from applied;
    return v_n;
end
$$;

create function pepsi.webhook_event_item(p_event_id bigint, p_provider text, p_external_id text, p_payload bytea,
                                        p_headers jsonb, p_received_at timestamptz, p_stage text, p_tube text,
                                        p_state jsonb default '{}')
returns pepsi.workqueue_item
language sql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The message of a webhook event, as pepsi.workqueue_create takes it
-- (issue 13: one shape for the ingest and reconciliation's re-inject):
-- at p_stage and p_tube, body = the payload, header block = the headers
-- ("Key: value" lines in key order, CRLF-terminated; none: NULL), origin
-- webhook:<provider>, arrived at received_at, linked to the event by
-- webhook_event_id (issue 13), state naming the event (webhook_event,
-- webhook_provider, external_id: stage programs read it) merged with p_state.
    select row(p_stage, p_tube, p_payload,
               (select string_agg(h.key || ': ' || h.value, E'\r\n' order by h.key) || E'\r\n'
                  from jsonb_each_text(p_headers) h),
               null, '{}', 'webhook:' || p_provider, null,
               jsonb_build_object('webhook_event', p_event_id, 'webhook_provider', p_provider,
                                  'external_id', p_external_id) || coalesce(p_state, '{}'),
               null, null, p_received_at, p_event_id)::pepsi.workqueue_item
$$;

create function pepsi.webhook_events_ingest(p_events jsonb, p_payloads bytea default null)
returns table (ord int, webhook_event_id bigint, outcome text, workqueue_id bigint)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Stores a burst of verified events and returns one row per event, in
-- input order. p_events is a JSON array of objects: provider, external_id,
-- headers (object, optional), received_at (optional, default now()), and
-- either payload_length (the event's bytes are the next payload_length
-- bytes of p_payloads: raw bytes need no escaping) or payload (text,
-- stored as UTF-8).
--
-- One statement writes every event (W-09..W-13), with exactly the
-- article's upsert, keyed on (provider, external_id):
--   INSERT ... ON CONFLICT (provider, external_id) DO UPDATE
--      SET payload = EXCLUDED.payload, received_at = EXCLUDED.received_at
--    WHERE webhook_events.processed_at IS NULL
-- (headers are refreshed with the payload they came with). No existence
-- check comes first (W-10). In the same statement, each event that is new
-- and whose provider routes into the pipeline becomes a message at the
-- provider's stage and tube (body: the payload, header block: the
-- headers; state: webhook_event, webhook_provider, external_id; origin
-- user webhook:<provider>, so fair scheduling shares stages between
-- providers). Its finish marks the event processed (webhook_events).
--
-- Outcome per event:
--   new        stored now (and queued, for a pipeline provider)
--   refreshed  known and not processed yet: payload and received_at updated (W-11)
--   processed  known and processed: nothing changed (W-12)
--   busy       known, not processed, and its row locked right now (a
--              puller, a finishing message, a concurrent burst): rather
--              than waiting for that transaction, which would stall every
--              request behind this burst, the delivery is recorded in
--              webhook_event_refresh and applied once the row is free
--              (see the top of this change), unless the event was
--              processed meanwhile
--   repeated   the same (provider, external_id) appears later in this
--              burst; that later delivery is the one written
-- Events are written in (provider, external_id) order, so two concurrent
-- bursts lock rows in the same order and cannot deadlock. NOTIFY
-- workqueue once, and only when the burst queued a message (D-32).
-- Raises, before anything is written (a bad element rejects the whole
-- burst): PX003 (not an array of objects, more than
-- input_limit('burst_events') events, payload lengths that do not add up
-- to p_payloads, a payload over input_limit('body') or headers whose
-- header block is over input_limit('headers'): "event 3: payload is
-- 70000000 bytes; the limit is 67108864"), PX011 (a provider that does
-- not exist), PX012 (a missing, empty or over-long external id, no
-- payload, headers that are not an object, a received_at that is not a
-- string or not a time).
-- Tables: webhook_events (insert, update), webhook_event_refresh,
-- workqueue_body and workqueue (insert, through workqueue_create);
-- webhook_provider (read).
declare
    v_ord int[];
    v_ids bigint[];
    v_outcomes text[];
    v_msgs bigint[];
    v_bad record;
begin
    -- Validation in one pass over the burst.
    if p_events is null or jsonb_typeof(p_events) <> 'array' then
        raise exception 'events must be a JSON array' using errcode = 'PX003';
    end if;
    if jsonb_array_length(p_events) > pepsi.input_limit('burst_events') then
        perform pepsi.size_error(null, 'burst_events', jsonb_array_length(p_events), 'the burst');
    end if;
    select min(e.ord) filter (where jsonb_typeof(e.ev) <> 'object') as not_object,
           min(e.ord) filter (where jsonb_typeof(e.ev) = 'object' and p.provider is null) as unknown,
           min(e.ord) filter (where jsonb_typeof(e.ev) = 'object' and (
                  jsonb_typeof(e.ev->'external_id') is distinct from 'string'
               or e.ev->>'external_id' = '' or octet_length(e.ev->>'external_id') > 1024
               or not (e.ev ? 'payload_length' or e.ev ? 'payload')
               or (e.ev ? 'payload_length' and (jsonb_typeof(e.ev->'payload_length') <> 'number'
                                                or (e.ev->>'payload_length') !~ '^[0-9]{1,10}$'))
               or (e.ev ? 'payload' and jsonb_typeof(e.ev->'payload') <> 'string')
               or (e.ev ? 'headers' and jsonb_typeof(e.ev->'headers') <> 'object')
               or (e.ev ? 'received_at' and jsonb_typeof(e.ev->'received_at') <> 'string'))) as malformed,
           coalesce(sum((e.ev->>'payload_length')::bigint)
                    filter (where jsonb_typeof(e.ev) = 'object' and (e.ev->>'payload_length') ~ '^[0-9]{1,10}$'), 0) as total
      into v_bad
      from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
      left join pepsi.webhook_provider p on jsonb_typeof(e.ev) = 'object' and p.provider = e.ev->>'provider';
    if v_bad.not_object is not null then
        raise exception 'event % of the burst is not a JSON object', v_bad.not_object using errcode = 'PX003';
    end if;
    if v_bad.unknown is not null then
        raise exception 'event %: unknown webhook provider "%"', v_bad.unknown,
              coalesce(p_events->(v_bad.unknown::int - 1)->>'provider', '<null>')
            using errcode = 'PX011';
    end if;
    if v_bad.malformed is not null then
        raise exception 'event % of the burst is malformed', v_bad.malformed
            using errcode = 'PX012',
                  detail = 'Each event needs external_id (1 to 1024 bytes), payload_length or payload; headers must be an object.';
    end if;
    if v_bad.total <> coalesce(octet_length(p_payloads), 0) then
        raise exception 'payload lengths add up to % bytes, the payloads have %', v_bad.total, coalesce(octet_length(p_payloads), 0)
            using errcode = 'PX003';
    end if;
    -- Input limits (issue 11): the payload becomes a message body, the
    -- headers its header block ("name: value" CRLF each, as built below).
    select e.ord, f.field, f.size into v_bad
      from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
     cross join lateral (values
               (1, 'body',
                coalesce((e.ev->>'payload_length')::bigint, octet_length(convert_to(e.ev->>'payload', 'UTF8')))),
               (2, 'headers',
                (select sum(octet_length(h.key) + octet_length(h.value) + 4)
                   from jsonb_each_text(coalesce(e.ev->'headers', '{}')) h)::bigint)) as f(n, field, size)
      join pepsi.input_limits() l on l.field = f.field
     where f.size > l.max_value
     order by e.ord, f.n
     limit 1;
    if found then
        perform pepsi.size_error('event ' || v_bad.ord, v_bad.field, v_bad.size,
                                 case v_bad.field when 'body' then 'payload' else 'headers' end);
    end if;
    -- received_at must be a time: the cast is tried on the whole burst
    -- once, and only when it fails is the event found one by one.
    begin
        perform count((e.ev->>'received_at')::timestamptz)
           from jsonb_array_elements(p_events) as e(ev);
    exception when data_exception then
        select e.ord, e.ev->>'received_at' as received_at into v_bad
          from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
         where e.ev->>'received_at' is not null and pepsi.time_or_null(e.ev->>'received_at') is null
         order by e.ord
         limit 1;
        raise exception 'event %: received_at "%" is not a time', v_bad.ord, pepsi.excerpt(v_bad.received_at)
            using errcode = 'PX012';
    end;

    with src as materialized (
        select e.ord::int as ord, e.ev->>'provider' as provider, e.ev->>'external_id' as external_id,
               coalesce(e.ev->'headers', '{}') as headers,
               coalesce((e.ev->>'received_at')::timestamptz, now()) as received_at,
               case when e.ev ? 'payload_length'
                    then substring(p_payloads
                                   from (sum(coalesce((e.ev->>'payload_length')::bigint, 0)) over w
                                         - (e.ev->>'payload_length')::bigint + 1)::int
                                   for (e.ev->>'payload_length')::int)
                    else convert_to(e.ev->>'payload', 'UTF8') end as payload
          from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
        window w as (order by e.ord)
    ), latest as materialized (
        -- One write per key: a key twice in a burst would make ON CONFLICT
        -- affect a row twice (an error). The latest delivery wins.
        select distinct on (s.provider, s.external_id) s.*
          from src s
         order by s.provider, s.external_id, s.ord desc
    ), seen as materialized (
        -- Each key looked up through the unique index (LATERAL ... LIMIT 1
        -- keeps the planner from hashing the whole table): the row if it
        -- exists, and whether we could lock it without waiting. An
        -- unprocessed row we cannot lock is held by another transaction:
        -- busy, recorded for later (deferred below).
        select l.*, x.webhook_event_id as known_id,
               (x.webhook_event_id is not null and x.processed_at is null and k.webhook_event_id is null) as busy
          from latest l
          left join lateral (
                select e.webhook_event_id, e.processed_at from pepsi.webhook_events e
                 where e.provider = l.provider and e.external_id = l.external_id
                 limit 1) x on true
          left join lateral (
                select e.webhook_event_id from pepsi.webhook_events e
                 where x.processed_at is null and e.webhook_event_id = x.webhook_event_id
                 limit 1
                   for no key update skip locked) k on true
    ), deferred as (
        -- A busy event's delivery, applied once its row is free.
        insert into pepsi.webhook_event_refresh (webhook_event_id, payload, headers, received_at)
        select l.known_id, l.payload, l.headers, l.received_at
          from seen l
         where l.busy
    ), up as (
        insert into pepsi.webhook_events as webhook_events (provider, external_id, payload, headers, received_at)
        select l.provider, l.external_id, l.payload, l.headers, l.received_at
          from seen l
         where not l.busy
         order by l.provider, l.external_id
        on conflict (provider, external_id) do update
           set payload = excluded.payload, received_at = excluded.received_at, headers = excluded.headers
         where webhook_events.processed_at is null
        returning webhook_events.webhook_event_id, webhook_events.provider, webhook_events.external_id,
                  webhook_events.payload, webhook_events.headers, webhook_events.received_at,
                  (webhook_events.xmax = 0) as inserted
    ), routed as materialized (
        select u.webhook_event_id, u.provider, u.external_id, u.payload, u.headers, u.received_at, p.stage, p.tube,
               row_number() over (order by u.webhook_event_id) as n
          from up u
          join pepsi.webhook_provider p on p.provider = u.provider
         where u.inserted and p.stage is not null
    ), msgs as (
        -- The messages of the new events, made by the one function that
        -- makes them (workqueue_create, issue 13), in event order.
        select c.workqueue_id, r.webhook_event_id as event_id
          from pepsi.workqueue_create(array(
                   select pepsi.webhook_event_item(r.webhook_event_id, r.provider, r.external_id, r.payload, r.headers,
                                                   r.received_at, r.stage, r.tube)
                     from routed r
                    order by r.n)) with ordinality as c(workqueue_id, n)
          join routed r on r.n = c.n
    )
    select array_agg(s.ord order by s.ord),
           array_agg(coalesce(u.webhook_event_id, l.known_id) order by s.ord),
           array_agg(case when l.ord <> s.ord then 'repeated'
                          when l.busy then 'busy'
                          when u.inserted then 'new'
                          when u.webhook_event_id is not null then 'refreshed'
                          else 'processed' end order by s.ord),
           array_agg(case when l.ord = s.ord then m.workqueue_id end order by s.ord)
      into v_ord, v_ids, v_outcomes, v_msgs
      from src s
      join seen l on l.provider = s.provider and l.external_id = s.external_id
      left join up u on u.provider = s.provider and u.external_id = s.external_id
      left join msgs m on m.event_id = u.webhook_event_id;

    if exists (select 1 from unnest(v_msgs) m where m is not null) then
        -- The same notification as NOTIFY workqueue (empty payload, D-30).
        -- pg_notify because pg_stat_statements counts each execution of a
        -- nested query, where PostgreSQL 15 counts a nested NOTIFY
        -- statement once per session: ingress-burst.t counts them (D-32).
        perform pg_notify('workqueue', '');
    end if;
    return query select * from unnest(v_ord, v_ids, v_outcomes, v_msgs);
end
$$;

create function pepsi.webhook_event_ingest(
    p_provider    text,
    p_external_id text,
    p_payload     bytea,
    p_headers     jsonb default '{}',
    p_received_at timestamptz default now())
returns table (webhook_event_id bigint, outcome text, workqueue_id bigint)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Stores one verified event: webhook_events_ingest with a burst of one
-- (same outcomes, same errors), and PX003 for a NULL p_received_at. For
-- applications and tests; the ingress sends whole bursts. Tables: as
-- webhook_events_ingest.
begin
    if p_received_at is null then
        raise exception 'received_at must not be NULL' using errcode = 'PX003';
    end if;
    return query
    select i.webhook_event_id, i.outcome, i.workqueue_id
      from pepsi.webhook_events_ingest(
               jsonb_build_array(jsonb_build_object(
                   'provider', p_provider, 'external_id', p_external_id,
                   'headers', coalesce(p_headers, '{}'), 'received_at', p_received_at,
                   'payload_length', octet_length(p_payload))),
               p_payload) i;
end
$$;

revoke all on table pepsi.webhook_event_refresh from public;
revoke all on function pepsi.webhook_event_refresh_apply(bigint[], int) from public;
revoke all on function pepsi.webhook_event_item(bigint, text, text, bytea, jsonb, timestamptz, text, text, jsonb) from public;
revoke all on function pepsi.webhook_events_ingest(jsonb, bytea) from public;
revoke all on function pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz) from public;
grant execute on function pepsi.webhook_events_ingest(jsonb, bytea) to pepsi_ingress;
grant execute on function pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz) to pepsi_ingress;

commit;
