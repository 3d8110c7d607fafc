-- Revert pepsi:webhook_ingest from pg

begin;

drop function pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz);
drop function pepsi.webhook_events_ingest(jsonb, bytea);
drop function pepsi.webhook_event_item(bigint, text, text, bytea, jsonb, timestamptz, text, text, jsonb);
drop function pepsi.webhook_event_refresh_apply(bigint[], int);
drop table pepsi.webhook_event_refresh;

commit;
