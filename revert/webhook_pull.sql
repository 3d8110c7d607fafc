-- Revert pepsi:webhook_pull from pg

begin;

drop view pepsi.webhook_event_overview;
drop function pepsi.webhook_events_mark_processed(bigint[], timestamptz);
drop function pepsi.webhook_events_pull(text, int);

commit;
