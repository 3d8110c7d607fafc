-- Verify pepsi:schema_api on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.schema_api()', 'execute');
select 1 / (level >= oldest and oldest >= 1)::int from pepsi.schema_api();

rollback;
