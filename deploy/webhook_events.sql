-- Deploy pepsi:webhook_events to pg
-- requires: webhook_provider
-- requires: workqueue_results
--
-- The durable record of every verified webhook event (W-07): one row per
-- (provider, external_id). The spec keys on external_id alone (W-08);
-- with several providers the pair is the identity, since two providers'
-- id spaces can overlap. There is no separate idempotency table (W-14):
-- the unique constraint is the seen-check, and webhook_events_ingest
-- writes through it with one INSERT ... ON CONFLICT.
--
-- processed_at is set when the event reached its destination:
--   pipeline providers: when the message made from the event is finished,
--     whatever stage finishes it. A row trigger after DELETE on workqueue
--     marks the event named by the webhook_event_id column (issue 13) of a
--     deleted row that was running (workqueue_finish deletes only running rows, and an
--     operator deleting a failed message has not delivered it). It is a
--     row trigger with a WHEN clause rather than a statement trigger:
--     PostgreSQL evaluates the WHEN in C, so the finish of every other
--     message pays nothing, where a statement trigger would run a query
--     for each finish. A message that failed leaves its event unprocessed
--     (reconciliation finds it); resuming the message delivers it.
--   pulled providers: webhook_events_mark_processed, by the
--     application's workers (W-18).

begin;

create table pepsi.webhook_events (
    webhook_event_id bigint generated always as identity
                     constraint webhook_events_pkey primary key,
    provider         text not null,
    external_id      text not null
                     constraint webhook_events_external_id_check
                     check (external_id <> '' and octet_length(external_id) <= 1024),
    payload          bytea not null,
    headers          jsonb not null default '{}'
                     constraint webhook_events_headers_check check (jsonb_typeof(headers) = 'object'),
    received_at      timestamptz not null default now(),
    processed_at     timestamptz,
    constraint webhook_events_provider_external_id_key unique (provider, external_id)
);

comment on table pepsi.webhook_events is
    'Verified webhook events, one row per (provider, external_id); written by webhook_events_ingest only.';
comment on column pepsi.webhook_events.provider is
    'The pepsi.webhook_provider that sent it. No foreign key: providers are disabled, never deleted, and a foreign key would take a KEY SHARE lock on the provider row for every event of a burst.';
comment on column pepsi.webhook_events.payload is
    'The exact request body the signature was verified over; the latest delivery''s until the event is processed.';
comment on column pepsi.webhook_events.headers is
    'The request headers (lower-case names, hop-by-hop headers left out) of the stored delivery.';
comment on column pepsi.webhook_events.received_at is
    'When the ingress received the stored delivery (its clock); a redelivery before processing moves it.';
comment on column pepsi.webhook_events.processed_at is
    'When the event reached its destination: its message finished (pipeline), or a worker marked it (pull). NULL: not yet.';

-- The pull claim (W-15): oldest unprocessed events of one provider.
create index webhook_events_unprocessed_idx on pepsi.webhook_events (provider, received_at)
    where processed_at is null;

create function pepsi.webhook_event_finished()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Row trigger after DELETE on workqueue, for rows that were running and
-- carry a webhook_event_id (see the WHEN clause of
-- workqueue_webhook_finished): the message made from that webhook event
-- is finished, so the event has reached its destination (W-18).
-- Tables: webhook_events (update).
begin
    update pepsi.webhook_events e
       set processed_at = now()
     where e.webhook_event_id = old.webhook_event_id
       and e.processed_at is null;
    return null;
end
$$;

create trigger workqueue_webhook_finished
    after delete on pepsi.workqueue
    for each row
    when (old.status = 'running' and old.webhook_event_id is not null)
    execute function pepsi.webhook_event_finished();

revoke all on table pepsi.webhook_events from public;
revoke all on function pepsi.webhook_event_finished() from public;
-- Stage programs may read an event in full (its latest payload, its
-- headers) by the id in their message's state (or webhook_event_id).
grant select on pepsi.webhook_events to pepsi_worker;

commit;
