-- Verify pepsi:settings_apply on pg

begin;

select 1 / pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.settings_apply(bigint, text, text, text, jsonb, text[], int)', 'execute')::int;
-- The ownership check is there: a source without it fails this.
select 1 / (pg_catalog.pg_get_functiondef('pepsi.settings_apply(bigint, text, text, text, jsonb, text[], int)'::regprocedure)
            like '%user_address_owns%')::int;

rollback;
