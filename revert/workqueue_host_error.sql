-- Revert pepsi:workqueue_host_error from pg

begin;

drop function pepsi.workqueue_host_error(bigint, text, text, interval, text, timestamptz);

commit;
