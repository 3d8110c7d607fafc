-- Revert pepsi:workqueue_dispatch_ops from pg

begin;

drop function pepsi.workqueue_strike(bigint, text, text, text, timestamptz);
drop function pepsi.workqueue_defer(bigint[], text[], timestamptz, text);
drop function pepsi.workqueue_release_paused(timestamptz);
drop function pepsi.workqueue_reset_running();
drop function pepsi.workqueue_unclaim(bigint[]);
drop function pepsi.workqueue_requeue(bigint[], text[]);

commit;
