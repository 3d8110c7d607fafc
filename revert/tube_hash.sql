-- Revert pepsi:tube_hash from pg

begin;

drop function pepsi.tube_partition(pepsi.tube_name, int);
drop function pepsi.tube_hash(pepsi.tube_name);

commit;
