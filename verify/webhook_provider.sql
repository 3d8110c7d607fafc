-- Verify pepsi:webhook_provider on pg

begin;

select provider, scheme, secrets, tolerance, id_source, signature_header, signature_encoding,
       signature_prefix, stage, tube, enabled, created_at, updated_at
  from pepsi.webhook_provider where false;
select provider, scheme, active_secrets, mode, stage, tube, enabled from pepsi.webhook_providers where false;
select pg_catalog.has_function_privilege(
    'pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_change(text, jsonb)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_add_secret(text, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_retire_secret(text, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_disable(text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_enable(text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.webhook_provider_list()', 'execute');
select 1 / (pepsi.webhook_id_source_default('github') = 'header:X-GitHub-Delivery')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.webhook_id_source_default(text)'::regprocedure;
select 'pepsi.webhook_provider_check(pepsi.webhook_provider)'::regprocedure;
select 'pepsi.webhook_provider_get(text)'::regprocedure;
select 'pepsi.webhook_provider_save(pepsi.webhook_provider)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.webhook_provider_pkey'::regclass;

rollback;
