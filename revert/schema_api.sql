-- Revert pepsi:schema_api from pg

begin;

drop function pepsi.schema_api();

commit;
