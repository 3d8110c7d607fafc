-- Verify pepsi:schema on pg

begin;

select pg_catalog.has_schema_privilege('pepsi', 'usage');
select 1 / count(*) from pg_catalog.pg_namespace
 where nspname = 'pepsi'
   and pg_catalog.has_schema_privilege('pepsi_reader', oid, 'usage');

rollback;
