-- Verify pepsi:settings on pg

begin;

select address, stage, option, value, updated_at, updated_by from pepsi.settings where false;
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.settings_for(jsonb, text, text[])', 'execute');
select pg_catalog.has_function_privilege('pepsi.settings_set(text, text, text, text)', 'execute');

rollback;
