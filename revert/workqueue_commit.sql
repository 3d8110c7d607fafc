-- Revert pepsi:workqueue_commit from pg

begin;

drop function pepsi.workqueue_commit(text, jsonb, int);
drop function pepsi.workqueue_commit_casts(jsonb);

commit;
