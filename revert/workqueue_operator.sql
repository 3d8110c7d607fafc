-- Revert pepsi:workqueue_operator from pg

begin;

drop function pepsi.message_history(bigint);
drop function pepsi.workqueue_purge(interval, timestamptz);
drop function pepsi.workqueue_reroute(bigint[], text, timestamptz);
drop function pepsi.workqueue_retry(bigint[], timestamptz);
drop function pepsi.workqueue_ids_check(bigint[], text);

commit;
