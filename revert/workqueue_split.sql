-- Revert pepsi:workqueue_split from pg

begin;

drop function pepsi.workqueue_split(bigint, text, jsonb);

commit;
