-- Verify pepsi:config_override on pg

begin;

select section, key, value, updated_at, updated_by from pepsi.config_override where false;
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.config_overlay()', 'execute');
select pg_catalog.has_function_privilege('pepsi.config_set(text, text, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.telemetry_changed()', 'execute');

rollback;
