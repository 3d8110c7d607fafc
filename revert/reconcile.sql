-- Revert pepsi:reconcile from pg

begin;

drop view pepsi.reconcile_open;
drop function pepsi.reconcile(timestamptz, text, jsonb, boolean);
drop function pepsi.reconcile_unchanged(bigint);
drop function pepsi.reconcile_stamp();
drop function pepsi.reconcile_retention(timestamptz, pepsi.reconcile_settings);
drop function pepsi.reconcile_gaps(bigint, timestamptz, pepsi.reconcile_settings);
drop function pepsi.reconcile_digests(bigint, timestamptz, pepsi.reconcile_settings);
drop function pepsi.reconcile_links(bigint, timestamptz, pepsi.reconcile_settings);
drop function pepsi.reconcile_stuck(bigint, timestamptz, pepsi.reconcile_settings, jsonb);
drop function pepsi.reconcile_lost(bigint, timestamptz, pepsi.reconcile_settings);
drop function pepsi.reconcile_flag(bigint, timestamptz, text[], jsonb, boolean);
drop function pepsi.reconcile_configure(jsonb);
drop table pepsi.reconcile_findings;
drop table pepsi.reconcile_runs;
drop table pepsi.reconcile_settings;
drop trigger webhook_events_processed_digest on pepsi.webhook_events;
drop function pepsi.webhook_event_digest();
drop trigger workqueue_webhook_delivered on pepsi.workqueue;
drop function pepsi.webhook_event_delivered();
alter table pepsi.webhook_events drop column processed_digest;

commit;
