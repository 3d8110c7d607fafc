-- Revert pepsi:webhook_events from pg

begin;

drop trigger workqueue_webhook_finished on pepsi.workqueue;
drop function pepsi.webhook_event_finished();
drop table pepsi.webhook_events;

commit;
