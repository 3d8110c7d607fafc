-- Revert pepsi:workqueue_claim from pg

begin;

drop function pepsi.workqueue_claim(text[], int[], timestamptz, boolean);

commit;
