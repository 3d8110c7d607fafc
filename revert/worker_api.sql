-- Revert pepsi:worker_api from pg

begin;

drop function pepsi.worker_load(text, bigint[], boolean);

commit;
