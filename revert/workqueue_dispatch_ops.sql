-- Revert pepsi:workqueue_dispatch_ops from pg

begin;

drop function pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int);
drop function pepsi.workqueue_defer(bigint[], text[], timestamptz, text, int);
drop function pepsi.workqueue_release_paused(timestamptz, int);
drop function pepsi.workqueue_reset_running(int);
drop function pepsi.workqueue_unclaim(bigint[], int);
drop function pepsi.workqueue_requeue(bigint[], text[], int);

commit;
