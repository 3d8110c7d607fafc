-- Verify pepsi:config_keys on pg

begin;

select section_kind, key, type, min, max, default_value, required, operator_only, secret, per_address,
       reloadable, doc
  from pepsi.config_key where false;
-- The table is filled: a change without its rows fails here.
select 1 / (select count(*) from pepsi.config_key where section_kind = 'stage' and key = 'PROGRAM')::int;
select 1 / pepsi.settings_option_operator_only('COMMAND')::int;
select 1 / (not pepsi.settings_option_operator_only('HEADERS'))::int;
select 1 / pg_catalog.has_table_privilege('pepsi_reader', 'pepsi.config_key', 'select')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.settings_option_operator_only(text)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.config_key_pkey'::regclass;

rollback;
