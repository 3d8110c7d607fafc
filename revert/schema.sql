-- Revert pepsi:schema from pg

begin;

drop schema pepsi;

commit;
