-- Revert pepsi_router:router_ingress from pg

begin;

drop function pepsi.webhook_provider_enable(text);
drop function pepsi.webhook_provider_disable(text);
drop function pepsi.webhook_provider_retire_secret(text, text);
drop function pepsi.webhook_provider_add_secret(text, text);
drop function pepsi.webhook_provider_change(text, jsonb);
drop function pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text);
drop function pepsi_router.webhook_provider_enable_all(text);
drop function pepsi_router.webhook_provider_disable_all(text);
drop function pepsi_router.webhook_provider_retire_secret_all(text, text);
drop function pepsi_router.webhook_provider_add_secret_all(text, text);
drop function pepsi_router.webhook_provider_change_all(text, jsonb);
drop function pepsi_router.webhook_provider_add_all(text, text, text[], text, text, text, interval, text, text, text);
drop function pepsi.ingress_stats_flush(text, jsonb, timestamptz);
drop function pepsi_router.ingress_stats_flush_on(int, text, jsonb, timestamptz);
drop function pepsi.webhook_provider_list();
drop function pepsi_router.webhook_provider_list_all();
drop function pepsi.schema_api();
drop function pepsi_router.schema_api_all();
drop function pepsi_router.unreachable_which(text);
drop function pepsi_router.ping_on(int);
revoke execute on function pepsi_router.shard_of_tube(text), pepsi_router.shard_of_id(bigint)
    from pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_operator;
alter function pepsi_router.routable() security invoker;
revoke execute on function pepsi_router.routable() from pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader, pepsi_operator;

commit;
