-- Revert pepsi:workqueue_history from pg

begin;

drop function pepsi.workqueue_history_maintain(timestamptz);
drop function pepsi.workqueue_history_on();
drop table pepsi.workqueue_history;
drop table pepsi.workqueue_history_settings;

commit;
