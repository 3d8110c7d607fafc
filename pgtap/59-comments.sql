-- COMMENT ON every function, view and column a DBA reads (issue 15).
-- `\df+ pepsi.*` and `\d+ pepsi.messages` must say what each object is,
-- who calls it, what it refuses and what it writes. The objects are found
-- in the catalogue, never listed here: a function, view, table or column
-- added later without its comment fails one of these tests, which names
-- it. deploy/comments.sql commented what existed at issue 15; anything
-- newer carries its COMMENT ON in its own deploy file.
--
-- Covered: every function of schema pepsi (all overloads; not those an
-- extension owns), every view and materialized view, every table (not the
-- day partitions of pepsi.workqueue_history, made at run time), every
-- column of every view, and every column of every table pepsi_reader may
-- select. A comment of only blanks counts as none.

begin;
select plan(6);

select ok(exists (select 1 from sqitch.changes where project = 'pepsi' and change = 'comments'),
          'issue 15: the change comments is deployed');

select is(array(select p.oid::regprocedure::text
                  from pg_proc p
                 where p.pronamespace = 'pepsi'::regnamespace
                   and not exists (select 1 from pg_depend d
                                    where d.classid = 'pg_proc'::regclass and d.objid = p.oid
                                      and d.deptype = 'e')
                   and coalesce(btrim(obj_description(p.oid, 'pg_proc')), '') = ''
                 order by 1),
          '{}'::text[],
          'issue 15: every function of schema pepsi has a comment (those listed lack one)');

select is(array(select c.oid::regclass::text
                  from pg_class c
                 where c.relnamespace = 'pepsi'::regnamespace
                   and c.relkind in ('v', 'm')
                   and coalesce(btrim(obj_description(c.oid, 'pg_class')), '') = ''
                 order by 1),
          '{}'::text[],
          'issue 15: every view and materialized view has a comment (those listed lack one)');

select is(array(select c.oid::regclass::text
                  from pg_class c
                 where c.relnamespace = 'pepsi'::regnamespace
                   and c.relkind in ('r', 'p')
                   and not c.relispartition
                   and coalesce(btrim(obj_description(c.oid, 'pg_class')), '') = ''
                 order by 1),
          '{}'::text[],
          'issue 15: every table has a comment (those listed lack one)');

select is(array(select c.oid::regclass::text || '.' || a.attname
                  from pg_class c
                  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                 where c.relnamespace = 'pepsi'::regnamespace
                   and c.relkind in ('v', 'm')
                   and coalesce(btrim(col_description(c.oid, a.attnum)), '') = ''
                 order by 1),
          '{}'::text[],
          'issue 15: every column of every view has a comment (those listed lack one)');

select is(array(select c.oid::regclass::text || '.' || a.attname
                  from pg_class c
                  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                 where c.relnamespace = 'pepsi'::regnamespace
                   and c.relkind in ('r', 'p')
                   and not c.relispartition
                   and (has_table_privilege('pepsi_reader', c.oid, 'select')
                        or has_column_privilege('pepsi_reader', c.oid, a.attnum, 'select'))
                   and coalesce(btrim(col_description(c.oid, a.attnum)), '') = ''
                 order by 1),
          '{}'::text[],
          'issue 15: every column pepsi_reader may select from a table has a comment (those listed lack one)');

select * from finish();
rollback;
