-- Verify pepsi:roles on pg

begin;

select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_runner';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_worker';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_ingress';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_reader';
select 1 / count(*) from pg_catalog.pg_roles where rolname = 'pepsi_operator';
select 1 / count(*) from pg_catalog.pg_auth_members m
  where m.roleid = 'pepsi_reader'::regrole and m.member = 'pepsi_operator'::regrole;

rollback;
