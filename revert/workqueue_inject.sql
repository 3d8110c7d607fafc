-- Revert pepsi:workqueue_inject from pg

begin;

drop function pepsi.workqueue_inject_batch(jsonb);
drop function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz);

commit;
