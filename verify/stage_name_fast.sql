-- Verify pepsi:stage_name_fast on pg: neither copy of the stage-name rule
-- has the bounded repetition, and both still refuse a 64-character name.

begin;

select 1 / (pg_catalog.strpos(pg_catalog.pg_get_constraintdef(c.oid), '{0,62}') = 0
             and pg_catalog.strpos(pg_catalog.pg_get_constraintdef(c.oid), 'octet_length') > 0
             and c.convalidated)::int
  from pg_catalog.pg_constraint c
 where c.conrelid = 'pepsi.workqueue'::regclass and c.conname = 'workqueue_stage_check';
select 1 / (pg_catalog.strpos(p.prosrc, '{0,62}') = 0)::int
  from pg_catalog.pg_proc p
 where p.oid = 'pepsi.stage_name_valid(text)'::regprocedure;
select 1 / (not pepsi.stage_name_valid(pg_catalog.repeat('s', 64)) and pepsi.stage_name_valid(pg_catalog.repeat('s', 63)))::int;

rollback;
