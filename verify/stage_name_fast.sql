-- Verify pepsi:stage_name_fast on pg: neither copy of the stage-name rule
-- has the bounded repetition, and both still refuse a 64-character name.

begin;

-- (the table's copy is a CHECK until workqueue_rules makes it a trigger of
-- the same name)
select 1 / (count(*) = 1 and coalesce(bool_and(pg_catalog.strpos(d.def, '{0,62}') = 0
                                             and pg_catalog.strpos(d.def, 'octet_length') > 0), false))::int
  from (select pg_catalog.pg_get_constraintdef(c.oid) as def
          from pg_catalog.pg_constraint c
         where c.conrelid = 'pepsi.workqueue'::regclass and c.conname = 'workqueue_stage_check' and c.convalidated
        union all
        select pg_catalog.pg_get_triggerdef(t.oid)
          from pg_catalog.pg_trigger t
         where t.tgrelid = 'pepsi.workqueue'::regclass and t.tgname = 'workqueue_stage_check') d;
select 1 / (pg_catalog.strpos(p.prosrc, '{0,62}') = 0)::int
  from pg_catalog.pg_proc p
 where p.oid = 'pepsi.stage_name_valid(text)'::regprocedure;
select 1 / (not pepsi.stage_name_valid(pg_catalog.repeat('s', 64)) and pepsi.stage_name_valid(pg_catalog.repeat('s', 63)))::int;

rollback;
