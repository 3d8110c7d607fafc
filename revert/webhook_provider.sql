-- Revert pepsi:webhook_provider from pg

begin;

drop view pepsi.webhook_providers;
drop function pepsi.webhook_provider_list();
drop function pepsi.webhook_provider_enable(text);
drop function pepsi.webhook_provider_disable(text);
drop function pepsi.webhook_provider_retire_secret(text, text);
drop function pepsi.webhook_provider_add_secret(text, text);
drop function pepsi.webhook_provider_change(text, jsonb);
drop function pepsi.webhook_provider_save(pepsi.webhook_provider);
drop function pepsi.webhook_provider_get(text);
drop function pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text);
drop function pepsi.webhook_provider_check(pepsi.webhook_provider);
drop function pepsi.webhook_id_source_default(text);
drop table pepsi.webhook_provider;

commit;
