-- Verify pepsi:config_override on pg

begin;

select section, key, value, updated_at, updated_by from pepsi.config_override where false;
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.config_overlay()', 'execute');
select pg_catalog.has_function_privilege('pepsi.config_set(text, text, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi.telemetry_changed()', 'execute');
select 'pepsi.config_override_changed()'::regprocedure;
-- An overlay write moves the config_changed version (issue 11).
create temporary table v0 as select version from pepsi.control_signal where channel = 'config_changed';
select pepsi.config_set('verify-x', 'PROGRAM', 'pepsi-stage-pass');
select 1 / ((select version from pepsi.control_signal where channel = 'config_changed') > (select version from v0))::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.config_clear(text)'::regprocedure;
select 'pepsi.config_key_check(text)'::regprocedure;
select 'pepsi.config_remove_stage(text)'::regprocedure;
select 'pepsi.config_section_check(text)'::regprocedure;
select 'pepsi.config_unset(text, text)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.config_override_pkey'::regclass;

rollback;
