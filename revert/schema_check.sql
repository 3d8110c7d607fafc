-- Revert pepsi:schema_check from pg

begin;

drop function pepsi.schema_check(text[], text[]);

commit;
