-- Revert pepsi:user_address from pg

begin;

drop function pepsi.user_address_list(text);
drop function pepsi.user_address_remove(text, text);
drop function pepsi.user_address_add(text, text);
drop function pepsi.user_address_owns(text, text);
drop table pepsi.user_address;

commit;
