-- Verify pepsi:settings_apply on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.settings_apply(bigint, text, text, text, jsonb)', 'execute');

rollback;
