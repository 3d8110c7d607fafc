-- Revert pepsi:settings_apply from pg

begin;

drop function pepsi.settings_apply(bigint, text, text, text, jsonb, text[], int);

commit;
