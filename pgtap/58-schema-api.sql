-- pepsi.schema_api() (issue 15, D-12): the API level the schema serves
-- and the oldest it still serves. pepsi-runner and its workers run when
-- oldest <= their build's level <= level (e2e 74-upgrade-live proves the
-- upgrade; test_schema the verdict). Here: the declaration itself, the
-- line the build reads its level from (scripts/schema-manifest: the last
-- change of the plan that declares one, issue 16), and who may call it.

begin;
select plan(9);

select has_function('pepsi', 'schema_api', '{}'::name[], 'issue 15: pepsi.schema_api() exists');
select is((select count(*)::int from pepsi.schema_api()), 1, 'it returns one row');
select ok((select oldest >= 1 and level >= oldest from pepsi.schema_api()),
          'issue 15: 1 <= oldest <= level');
-- The build's level: the line scripts/schema-manifest parses.
-- The newest definition: of the deploy scripts with that line, the one of
-- the change deployed last (sqitch's registry; issue 16: a later change
-- redefines the function to raise the level, and scripts/schema-manifest
-- reads the last one in plan order).
select is((select (regexp_match(s.body, '\n\s*select ([0-9]+) as level, ([0-9]+) as oldest\s*\n'))[1:2]::int[]
             from public.pepsi_source s join sqitch.changes c on s.file = c.change || '.sql'
            where s.kind = 'deploy' and c.project = 'pepsi'
              and s.body ~ '\n\s*select ([0-9]+) as level, ([0-9]+) as oldest\s*\n'
            order by c.committed_at desc limit 1),
          (select array[level, oldest] from pepsi.schema_api()),
          'issue 15: the level and oldest the deployed function returns are the line the runner''s build reads (its newest definition)');
select is((select provolatile::text from pg_proc where oid = 'pepsi.schema_api()'::regprocedure), 'i',
          'it is immutable: a constant of the deployed schema');
select ok(has_function_privilege('pepsi_runner', 'pepsi.schema_api()', 'execute')
          and has_function_privilege('pepsi_worker', 'pepsi.schema_api()', 'execute')
          and has_function_privilege('pepsi_ingress', 'pepsi.schema_api()', 'execute'),
          'issue 15: the dispatcher, workers and the ingress may call it');
select ok(has_function_privilege('pepsi_reader', 'pepsi.schema_api()', 'execute')
          and has_function_privilege('pepsi_operator', 'pepsi.schema_api()', 'execute'),
          'issue 15: DBAs and people on call may read it');
select ok(not has_function_privilege('public', 'pepsi.schema_api()', 'execute'), 'PUBLIC may not');
select isnt(obj_description('pepsi.schema_api()'::regprocedure, 'pg_proc'), null,
            'its comment says what the two numbers mean');

select * from finish();
rollback;
