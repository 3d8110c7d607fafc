-- Verify pepsi:comments on pg

begin;

select 1 / (obj_description('pepsi.schema_check(text[], text[])'::regprocedure, 'pg_proc') is not null)::int;
select 1 / (obj_description('pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz)'::regprocedure, 'pg_proc') is not null)::int;
select 1 / (obj_description('pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure, 'pg_proc') is not null)::int;
select 1 / (obj_description('pepsi.stage_totals'::regclass, 'pg_class') is not null)::int;
select 1 / (col_description('pepsi.config_key'::regclass, 1) is not null)::int;
select 1 / (col_description('pepsi.tubes'::regclass, 1) is not null)::int;

rollback;
