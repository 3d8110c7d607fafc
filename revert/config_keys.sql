-- Revert pepsi:config_keys from pg

begin;

drop function pepsi.settings_option_operator_only(text);
drop table pepsi.config_key;

commit;
