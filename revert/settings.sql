-- Revert pepsi:settings from pg

begin;

drop function pepsi.settings_for(jsonb, text, text[]);
drop function pepsi.settings_list(text, text);
drop function pepsi.settings_delete(text, text, text);
drop function pepsi.settings_set(text, text, text, text);
drop function pepsi.settings_put(text, text, text, text, text);
drop table pepsi.settings;
drop function pepsi.address_key(text);

commit;
