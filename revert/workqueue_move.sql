-- Revert pepsi:workqueue_move from pg

begin;

drop function pepsi.workqueue_move(bigint, text, text, text[], int);

commit;
