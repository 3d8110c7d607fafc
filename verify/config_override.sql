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
select 'pepsi.conf_duration_ms(text)'::regprocedure;
select 'pepsi.conf_edit_distance(text, text)'::regprocedure;
select 'pepsi.conf_key_typo(text, text)'::regprocedure;
select 'pepsi.config_value_check(text, text, text)'::regprocedure;
select 'pepsi.config_graph()'::regprocedure;
select 'pepsi.config_graph_check(text)'::regprocedure;
-- issue 15: a PARALLELISM of 0 is refused at the source (PX044).
do $$
begin
    perform pepsi.config_value_check('verify-x', 'PARALLELISM', '0');
    raise exception 'config_value_check accepted PARALLELISM 0';
exception when sqlstate 'PX044' then
    null;
end
$$;
-- issue 13: every index of the change, by name.
select 'pepsi.config_override_pkey'::regclass;

rollback;
