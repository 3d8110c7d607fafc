-- Revert pepsi:schema from pg

begin;

drop domain pepsi.tube_name;
drop domain pepsi.stage_name;
drop function pepsi.tube_name_valid(text);
drop function pepsi.stage_name_valid(text);
drop function pepsi.lock_key(text, int);
drop schema pepsi;

commit;
