-- Revert pepsi:workqueue_resume from pg

begin;

drop function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]);

commit;
