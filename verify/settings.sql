-- Verify pepsi:settings on pg

begin;

select address, stage, option, value, updated_at, updated_by from pepsi.settings where false;
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.settings_for(jsonb, text, text[])', 'execute');
select pg_catalog.has_function_privilege('pepsi.settings_set(text, text, text, text)', 'execute');
select 'pepsi.settings_put(text, text, text, text, text)'::regprocedure;
select 'pepsi.settings_delete(text, text, text)'::regprocedure;
select 'pepsi.settings_list(text, text)'::regprocedure;
select 'pepsi.address_key(text)'::regprocedure;
select 'pepsi.settings_address_idx'::regclass;

-- issue 13: every function of the change, by its exact signature.
-- issue 13: every index of the change, by name.
select 'pepsi.settings_pkey'::regclass;

rollback;
