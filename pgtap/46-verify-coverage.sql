-- issue 13: verify/ misses nothing. Every function in schema pepsi is
-- named by its exact signature ('pepsi.f(bigint[], text)', as a
-- ::regprocedure cast or a has_function_privilege argument) in the verify
-- script of the change whose deploy script creates it, and every index
-- (the ones behind primary keys and unique constraints included) by name
-- ('pepsi.idx'::regclass) in the verify script of the change that creates
-- it, so that sqitch verify notices any of them missing.
--
-- scripts/test-sql loads the text of deploy/*.sql and verify/*.sql into
-- public.pepsi_source (kind, file, body) before pg_prove; this file compares
-- the catalogue with it. A quoted literal counts only when it resolves to
-- the very object: a call such as pepsi.f(1, 'x') resolves overloads by
-- implicit casts and does not. SQL comments are ignored.
--
-- A failure names the missing object and the file to add its line to; the
-- last two tests prove the check itself fails when a line is deleted.

begin;
select plan(7);

create temp table src on commit drop as select kind, file, body from public.pepsi_source;

-- the literal, resolved; NULL when it names nothing (an unknown type or a
-- malformed name raises in to_regprocedure instead: test 3 names them)
create function pg_temp.resolve(p_literal text) returns oid
language plpgsql stable as $$
begin
    if strpos(p_literal, '(') > 0 then
        return pg_catalog.to_regprocedure(p_literal)::oid;
    end if;
    return pg_catalog.to_regclass(p_literal)::oid;
exception when undefined_object or syntax_error or invalid_text_representation then
    return null;
end
$$;

create function pg_temp.uncommented(p_body text) returns text
language sql immutable as $$ select pg_catalog.regexp_replace(p_body, '--[^\n]*', '', 'g') $$;

-- (verify file, object) for every quoted 'pepsi.x' or 'pepsi.x(args)'
-- literal, and (deploy file, kind, name) for every function, index, named
-- constraint and relation a deploy script creates. pg_temp.scan() fills
-- both from src, once: the regular expressions over 360 kB are not free.
create temp table verify_named (file text, objid oid, literal text) on commit drop;
create temp table deploy_creates (file text, kind text, name text) on commit drop;
create function pg_temp.scan() returns void
language sql volatile as $$
truncate verify_named, deploy_creates;
insert into verify_named
select s.file, pg_temp.resolve(m[1]), m[1]
  from src s
 cross join lateral pg_catalog.regexp_matches(pg_temp.uncommented(s.body),
                                              '''(pepsi\.[a-z_][a-z0-9_]*(?:\([^'')]*\))?)''', 'gi') m
 where s.kind = 'verify';
insert into deploy_creates
select s.file, lower(pg_catalog.regexp_replace(m[1], '\s+', ' ', 'g')), lower(m[2])
  from src s
 cross join lateral pg_catalog.regexp_matches(pg_temp.uncommented(s.body),
     '\mcreate\s+(?:or\s+replace\s+)?(?:unlogged\s+)?(?:unique\s+)?'
     '(function|procedure|index|table|view|materialized\s+view)\s+(?:concurrently\s+)?'
     '(?:pepsi\.)?([a-z_][a-z0-9_]*)', 'gi') m
 where s.kind = 'deploy'
union
-- a constraint clause, not "on conflict on constraint x"
select s.file, 'constraint', lower(m[2])
  from src s
 cross join lateral pg_catalog.regexp_matches(pg_temp.uncommented(s.body),
                                              '([a-z_]*)\s+constraint\s+([a-z_][a-z0-9_]*)', 'gi') m
 where s.kind = 'deploy' and lower(m[1]) <> 'on';
$$;
select pg_temp.scan();

-- every function and index of schema pepsi: its verify line and the deploy
-- files that create it (the table's, for an index named nowhere)
create temp view pepsi_object as
select 'function' as what, p.oid as objid,
       format('pepsi.%s(%s)', p.proname,
              (select coalesce(string_agg(pg_catalog.format_type(t.typ, null), ', ' order by t.n), '')
                 from unnest(p.proargtypes::oid[]) with ordinality t(typ, n))) as signature,
       'regprocedure' as cast_to,
       array(select distinct d.file from deploy_creates d
              where d.kind in ('function', 'procedure') and d.name = p.proname) as created_in
  from pg_catalog.pg_proc p
 where p.pronamespace = 'pepsi'::regnamespace
union all
select 'index', i.indexrelid, format('pepsi.%s', c.relname), 'regclass',
       coalesce(nullif(array(select distinct d.file from deploy_creates d
                              where d.kind in ('index', 'constraint') and d.name = c.relname), '{}'),
                array(select distinct d.file from deploy_creates d
                       where d.kind in ('table', 'materialized view') and d.name = t.relname))
  from pg_catalog.pg_index i
  join pg_catalog.pg_class c on c.oid = i.indexrelid
  join pg_catalog.pg_class t on t.oid = i.indrelid
 where c.relnamespace = 'pepsi'::regnamespace
   -- the index of a partition (workqueue_history's days, issue 16) is its
   -- parent index's, made by PostgreSQL: the parent's has the verify line
   and not c.relispartition;

-- one line per function or index without its verify line, saying where to add it
create function pg_temp.verify_missing(p_what text) returns setof text
language sql stable as $$
select format('%s %s has no verify line: add "select %L::%s;" to %s',
              o.what, o.signature, o.signature, o.cast_to,
              coalesce(nullif(array_to_string(array(select 'verify/' || f from unnest(o.created_in) f), ' or '), ''),
                       'the verify script of the change that creates it (no deploy script names it)'))
  from pepsi_object o
 where o.what = p_what
   and not exists (select 1 from verify_named v
                    where v.objid = o.objid
                      and (v.file = any (o.created_in) or o.created_in = '{}'))
 order by 1
$$;

-- The sources are there (a runner that forgot to load them fails here, it
-- does not pass on an empty set).
select set_eq($$select file from src where kind = 'deploy'$$, $$select file from src where kind = 'verify'$$,
              'issue 13: deploy/ and verify/ hold the same script names');
select cmp_ok((select count(*)::int from src where kind = 'deploy'), '>=', 30,
              'issue 13: scripts/test-sql loaded the deploy and verify scripts into public.pepsi_source');

-- Every literal that looks like an object names one: a typo or a stale
-- signature would make sqitch verify fail anyway, but here it is named.
select is_empty($$select file || ': ' || literal from verify_named where objid is null$$,
                'issue 13: every quoted pepsi object in verify/ resolves');

select diag(m) from pg_temp.verify_missing('function') m;
select ok(not exists (select from pg_temp.verify_missing('function')),
          'issue 13: every function in schema pepsi has its exact-signature verify line in its change''s verify script');

select diag(m) from pg_temp.verify_missing('index') m;
select ok(not exists (select from pg_temp.verify_missing('index')),
          'issue 13: every index in schema pepsi has its verify line in its change''s verify script');

-- The check can fail: delete one function line and one index line from the
-- copy of verify/workqueue.sql and it names exactly those two more, with the
-- verify scripts of the changes that define them (commit_linear redefines
-- state_count; compared with what it named before, so that these two do not
-- fail again for an object another change left out).
create temp table missing_before on commit drop as
select m from pg_temp.verify_missing('function') m
union all
select m from pg_temp.verify_missing('index') m;
update src set body = replace(replace(body,
           $$select 'pepsi.state_count(jsonb)'::regprocedure;$$, ''),
           $$select 'pepsi.workqueue_body_id_idx'::regclass;$$, '')
 where kind = 'verify' and file = 'workqueue.sql';
select pg_temp.scan();
select is(array(select m from pg_temp.verify_missing('function') m except select m from missing_before),
          array[$$function pepsi.state_count(jsonb) has no verify line: add "select 'pepsi.state_count(jsonb)'::regprocedure;" to verify/commit_linear.sql or verify/workqueue.sql$$],
          'issue 13: a function whose verify line is deleted is named, with its verify script');
select is(array(select m from pg_temp.verify_missing('index') m except select m from missing_before),
          array[$$index pepsi.workqueue_body_id_idx has no verify line: add "select 'pepsi.workqueue_body_id_idx'::regclass;" to verify/workqueue.sql$$],
          'issue 13: an index whose verify line is deleted is named, with its verify script');

select * from finish();
rollback;
