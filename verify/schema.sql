-- Verify pepsi:schema on pg

begin;

select pg_catalog.has_schema_privilege('pepsi', 'usage');
select 1 / count(*) from pg_catalog.pg_namespace
 where nspname = 'pepsi'
   and pg_catalog.has_schema_privilege('pepsi_reader', oid, 'usage');
select 1 / count(*) from pepsi.lock_key('reconcile') k where k.class_id = 1885696115 and k.object_id = -1;
select 'pepsi.lock_key(text, int)'::regprocedure;
select 'pepsi.stage_name_valid(text)'::regprocedure, 'pepsi.tube_name_valid(text)'::regprocedure;
select 1 / (pepsi.stage_name_valid('a.b-c_9') and not pepsi.stage_name_valid('-a'))::int;
select 1 / (pepsi.tube_name_valid('a+b/c') and not pepsi.tube_name_valid(repeat('t', 201)))::int;
select 'ok'::pepsi.stage_name, 'ok'::pepsi.tube_name;

rollback;
