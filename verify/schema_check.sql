-- Verify pepsi:schema_check on pg

begin;

select pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.schema_check(text[], text[])', 'execute');

rollback;
