-- Verify pepsi:roles on pg

begin;

select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_runner';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_worker';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_ingress';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_reader';

rollback;
