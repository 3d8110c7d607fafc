-- Verify pepsi:comments on pg

-- Objects no later change redefines (a later change that replaces a
-- function, as workqueue_enqueue_options does workqueue_inject, carries
-- its own comment).
begin;

select 1 / (obj_description('pepsi.schema_check(text[], text[])'::regprocedure, 'pg_proc') is not null)::int;
select 1 / (obj_description('pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure, 'pg_proc') is not null)::int;
select 1 / (obj_description('pepsi.stage_totals'::regclass, 'pg_class') is not null)::int;
select 1 / (col_description('pepsi.config_key'::regclass, 1) is not null)::int;
select 1 / (col_description('pepsi.tubes'::regclass, 1) is not null)::int;

rollback;
