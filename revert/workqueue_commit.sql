-- Revert pepsi:workqueue_commit from pg

begin;

drop function pepsi.workqueue_commit(text, jsonb);
drop function pepsi.workqueue_commit_casts(jsonb);

commit;
