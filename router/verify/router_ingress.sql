-- Verify pepsi_router:router_ingress on pg

begin;

select 'pepsi_router.ping_on(int)'::regprocedure;
select 'pepsi_router.unreachable_which(text)'::regprocedure;
select 'pepsi_router.schema_api_all()'::regprocedure;
select level, oldest from pepsi.schema_api() where false;
select provider, scheme, secrets, tolerance_s, id_source, signature_header, signature_encoding, signature_prefix
  from pepsi.webhook_provider_list() where false;
select 'pepsi_router.webhook_provider_list_all()'::regprocedure;
select 'pepsi_router.ingress_stats_flush_on(int, text, jsonb, timestamptz)'::regprocedure;
select 'pepsi.ingress_stats_flush(text, jsonb, timestamptz)'::regprocedure;
select 'pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text)'::regprocedure;
select 'pepsi.webhook_provider_change(text, jsonb)'::regprocedure;
select 'pepsi.webhook_provider_add_secret(text, text)'::regprocedure;
select 'pepsi.webhook_provider_retire_secret(text, text)'::regprocedure;
select 'pepsi.webhook_provider_disable(text)'::regprocedure;
select 'pepsi.webhook_provider_enable(text)'::regprocedure;
select 1 / (has_function_privilege('pepsi_ingress', 'pepsi.webhook_provider_list()', 'execute')
            and not has_function_privilege('pepsi_reader', 'pepsi.webhook_provider_list()', 'execute'))::int;

rollback;
