-- Revert pepsi:workqueue_inject from pg

begin;

drop function pepsi.workqueue_inject_batch(jsonb);
drop function pepsi.workqueue_batch_casts(jsonb);
drop function pepsi.workqueue_create(pepsi.workqueue_item[], bigint[]);
drop function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz);
drop function pepsi.workqueue_item_check(pepsi.workqueue_item, text);
drop type pepsi.workqueue_item;

commit;
