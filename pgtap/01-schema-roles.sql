-- Schema pepsi, the four duty roles and what each may do (deploy/roles.sql,
-- deploy/schema.sql and the grants at the end of every deploy script).
-- Grants are checked twice: in the catalogue (has_*_privilege) and by
-- acting as the role (set local role), since a grant that exists but does
-- not work is no grant.

begin;
select plan(85);

-- Schema and roles -------------------------------------------------------

select has_schema('pepsi', 'schema pepsi exists');
select has_role('pepsi_runner', 'role pepsi_runner exists');
select has_role('pepsi_worker', 'role pepsi_worker exists');
select has_role('pepsi_ingress', 'role pepsi_ingress exists');
select has_role('pepsi_reader', 'role pepsi_reader exists');
select is((select count(*)::int from pg_roles
            where rolname in ('pepsi_runner', 'pepsi_worker', 'pepsi_ingress', 'pepsi_reader')
              and not rolcanlogin and not rolsuper),
          4, 'the duty roles are NOLOGIN, non-superuser groups');

select ok(has_schema_privilege('pepsi_runner', 'pepsi', 'usage')
          and has_schema_privilege('pepsi_worker', 'pepsi', 'usage')
          and has_schema_privilege('pepsi_ingress', 'pepsi', 'usage')
          and has_schema_privilege('pepsi_reader', 'pepsi', 'usage'),
          'every duty role has USAGE on schema pepsi');
select ok(not has_schema_privilege('public', 'pepsi', 'usage'),
          'PUBLIC has no USAGE on schema pepsi');
select ok(not has_schema_privilege('pepsi_runner', 'pepsi', 'create')
          and not has_schema_privilege('pepsi_worker', 'pepsi', 'create')
          and not has_schema_privilege('pepsi_ingress', 'pepsi', 'create')
          and not has_schema_privilege('pepsi_reader', 'pepsi', 'create'),
          'no duty role may CREATE in schema pepsi');

-- PUBLIC ------------------------------------------------------------------

select ok(not has_function_privilege('public', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute'),
          'PUBLIC cannot execute workqueue_claim');
select ok(not has_function_privilege('public', 'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)', 'execute'),
          'PUBLIC cannot execute workqueue_inject');
select ok(not has_function_privilege('public', 'pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int)', 'execute'),
          'PUBLIC cannot execute workqueue_advance');
select ok(not has_function_privilege('public', 'pepsi.stats_flush(int, jsonb, jsonb, timestamptz)', 'execute'),
          'PUBLIC cannot execute stats_flush');
select ok(not has_function_privilege('public', 'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])', 'execute'),
          'PUBLIC cannot execute workqueue_resume');
select ok(not has_function_privilege('public', 'pepsi.schema_check(text[], text[])', 'execute'),
          'PUBLIC cannot execute schema_check');
select ok(not has_function_privilege('public', 'pepsi.workqueue_body_release()', 'execute'),
          'PUBLIC cannot execute the body release trigger function');
select is((select array_agg(p.oid::regprocedure::text order by 1)
             from pg_proc p
            where p.pronamespace = 'pepsi'::regnamespace and p.prosecdef
              and has_function_privilege('public', p.oid, 'execute')),
          null, 'no security-definer function in pepsi is executable by PUBLIC');
select is((select array_agg(p.oid::regprocedure::text order by 1)
             from pg_proc p
            where p.pronamespace = 'pepsi'::regnamespace and p.prosecdef
              and not exists (select 1 from unnest(p.proconfig) c where c like 'search_path=%')),
          null, 'every security-definer function in pepsi pins search_path');
select ok(not has_table_privilege('public', 'pepsi.workqueue', 'select')
          and not has_table_privilege('public', 'pepsi.workqueue_body', 'select')
          and not has_table_privilege('public', 'pepsi.stage_stats', 'select')
          and not has_table_privilege('public', 'pepsi.queue_overview', 'select'),
          'PUBLIC cannot read the queue, bodies, statistics or views');

-- pepsi_reader --------------------------------------------------------------

select ok(has_table_privilege('pepsi_reader', 'pepsi.queue_overview', 'select'), 'pepsi_reader can select queue_overview');
select ok(has_table_privilege('pepsi_reader', 'pepsi.stuck', 'select'), 'pepsi_reader can select stuck');
select ok(has_table_privilege('pepsi_reader', 'pepsi.failed', 'select'), 'pepsi_reader can select failed');
select ok(has_table_privilege('pepsi_reader', 'pepsi.stage_totals', 'select'), 'pepsi_reader can select stage_totals');
select ok(has_table_privilege('pepsi_reader', 'pepsi.stage_stats', 'select')
          and has_table_privilege('pepsi_reader', 'pepsi.dispatch_stats', 'select'),
          'pepsi_reader can select stage_stats and dispatch_stats');
select ok(not has_table_privilege('pepsi_reader', 'pepsi.workqueue', 'insert')
          and not has_table_privilege('pepsi_reader', 'pepsi.workqueue', 'update')
          and not has_table_privilege('pepsi_reader', 'pepsi.workqueue', 'delete')
          and not has_table_privilege('pepsi_reader', 'pepsi.workqueue', 'truncate'),
          'pepsi_reader cannot write workqueue');
select ok(not has_table_privilege('pepsi_reader', 'pepsi.workqueue', 'select')
          and not has_table_privilege('pepsi_reader', 'pepsi.workqueue_body', 'select'),
          'pepsi_reader reads the views only, not workqueue or workqueue_body');
select ok(not has_table_privilege('pepsi_reader', 'pepsi.stage_stats', 'insert')
          and not has_table_privilege('pepsi_reader', 'pepsi.stage_stats', 'update')
          and not has_table_privilege('pepsi_reader', 'pepsi.dispatch_stats', 'update'),
          'pepsi_reader cannot write the statistics tables');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute'),
          'pepsi_reader cannot execute workqueue_claim');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)', 'execute'),
          'pepsi_reader cannot execute workqueue_inject');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.workqueue_finish(bigint, text)', 'execute'),
          'pepsi_reader cannot execute workqueue_finish');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])', 'execute'),
          'pepsi_reader cannot execute workqueue_resume');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.stats_flush(int, jsonb, jsonb, timestamptz)', 'execute'),
          'pepsi_reader cannot execute stats_flush');
select ok(has_function_privilege('pepsi_reader', 'pepsi.schema_check(text[], text[])', 'execute'),
          'D-12: pepsi_reader can execute schema_check');

set local role pepsi_reader;
select lives_ok($$select count(*) from pepsi.queue_overview$$, 'pepsi_reader: select from queue_overview works');
select lives_ok($$select count(*) from pepsi.stuck$$, 'pepsi_reader: select from stuck works');
select lives_ok($$select count(*) from pepsi.failed$$, 'pepsi_reader: select from failed works');
select lives_ok($$select count(*) from pepsi.stage_totals$$, 'pepsi_reader: select from stage_totals works');
select throws_ok($$insert into pepsi.workqueue (stage) values ('a')$$, '42501', null,
                 'pepsi_reader: insert into workqueue is denied');
select throws_ok($$select count(*) from pepsi.workqueue$$, '42501', null,
                 'pepsi_reader: select from workqueue is denied');
select throws_ok($$select pepsi.workqueue_inject('a')$$, '42501', null,
                 'pepsi_reader: workqueue_inject is denied');
reset role;

-- pepsi_worker --------------------------------------------------------------

select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int)', 'execute'),
          'D-74: pepsi_worker can execute workqueue_advance');
select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_finish(bigint, text)', 'execute'),
          'D-75: pepsi_worker can execute workqueue_finish');
select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb)', 'execute'),
          'D-92: pepsi_worker can execute workqueue_pause');
select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_fail(bigint, text, text, text, jsonb)', 'execute'),
          'D-79: pepsi_worker can execute workqueue_fail');
select ok(has_table_privilege('pepsi_worker', 'pepsi.workqueue', 'select')
          and has_table_privilege('pepsi_worker', 'pepsi.workqueue_body', 'select'),
          'D-70: pepsi_worker can select workqueue and workqueue_body');
select ok(not has_table_privilege('pepsi_worker', 'pepsi.workqueue', 'insert')
          and not has_table_privilege('pepsi_worker', 'pepsi.workqueue', 'update')
          and not has_table_privilege('pepsi_worker', 'pepsi.workqueue', 'delete'),
          'pepsi_worker writes workqueue only through functions');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute'),
          'D-39: pepsi_worker cannot execute workqueue_claim');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.workqueue_requeue(bigint[], text[], int)', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int)', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.workqueue_reset_running(int)', 'execute'),
          'pepsi_worker cannot execute the dispatcher operations (requeue, strike, reset_running)');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.stats_flush(int, jsonb, jsonb, timestamptz)', 'execute'),
          'D-140: workers never write the statistics (no stats_flush)');
select ok(not has_table_privilege('pepsi_worker', 'pepsi.stage_stats', 'insert')
          and not has_table_privilege('pepsi_worker', 'pepsi.stage_stats', 'update'),
          'D-140: pepsi_worker cannot write stage_stats directly');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])', 'execute'),
          'pepsi_worker cannot execute workqueue_resume');

set local role pepsi_worker;
select lives_ok($$select count(*) from pepsi.workqueue$$, 'pepsi_worker: select from workqueue works');
select throws_ok($$select * from pepsi.workqueue_claim('{a}', '{1}')$$, '42501', null,
                 'D-39: pepsi_worker: workqueue_claim is denied');
select throws_ok($$update pepsi.workqueue set status = 'pending'$$, '42501', null,
                 'pepsi_worker: a direct update of workqueue is denied');
select throws_ok($$select pepsi.workqueue_finish(-1, 'a')$$, 'PX004', null,
                 'pepsi_worker: workqueue_finish runs (and refuses an unknown id with PX004)');
reset role;

-- pepsi_runner --------------------------------------------------------------

select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute'),
          'D-38: pepsi_runner can execute workqueue_claim');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_unclaim(bigint[], int)', 'execute'),
          'pepsi_runner can execute workqueue_unclaim');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_requeue(bigint[], text[], int)', 'execute'),
          'D-89: pepsi_runner can execute workqueue_requeue');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_reset_running(int)', 'execute'),
          'D-18: pepsi_runner can execute workqueue_reset_running');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_release_paused(timestamptz, int)', 'execute'),
          'D-93: pepsi_runner can execute workqueue_release_paused');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_defer(bigint[], text[], timestamptz, text, int)', 'execute'),
          'D-100: pepsi_runner can execute workqueue_defer');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_strike(bigint, text, text, text, timestamptz, int)', 'execute'),
          'D-81: pepsi_runner can execute workqueue_strike');
select ok(has_function_privilege('pepsi_runner', 'pepsi.stats_flush(int, jsonb, jsonb, timestamptz)', 'execute'),
          'D-137: pepsi_runner can execute stats_flush');
select ok(has_function_privilege('pepsi_runner', 'pepsi.workqueue_body_gc(int, timestamptz)', 'execute'),
          'D-143: pepsi_runner can execute workqueue_body_gc');
select ok(not has_function_privilege('pepsi_runner', 'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])', 'execute'),
          'issue 11: pepsi_runner cannot execute workqueue_resume (operators resume; the dispatcher never does)');
select ok(has_function_privilege('pepsi_runner', 'pepsi.schema_check(text[], text[])', 'execute'),
          'D-12: pepsi_runner can execute schema_check');
select ok(has_table_privilege('pepsi_runner', 'pepsi.queue_overview', 'select')
          and has_table_privilege('pepsi_runner', 'pepsi.stuck', 'select')
          and has_table_privilege('pepsi_runner', 'pepsi.failed', 'select')
          and has_table_privilege('pepsi_runner', 'pepsi.stage_totals', 'select'),
          'pepsi_runner can select the views');
select ok(not has_table_privilege('pepsi_runner', 'pepsi.stage_stats', 'insert')
          and not has_table_privilege('pepsi_runner', 'pepsi.stage_stats', 'update')
          and not has_table_privilege('pepsi_runner', 'pepsi.dispatch_stats', 'update'),
          'D-137: pepsi_runner writes the statistics only through stats_flush');
select ok(not has_table_privilege('pepsi_runner', 'pepsi.workqueue', 'update')
          and not has_table_privilege('pepsi_runner', 'pepsi.workqueue', 'delete'),
          'pepsi_runner writes workqueue only through functions');

set local role pepsi_runner;
select lives_ok($$select * from pepsi.workqueue_claim('{a}', '{1}')$$, 'D-38: pepsi_runner: workqueue_claim runs');
select lives_ok($$select pepsi.stats_flush(0, '[]', null)$$, 'D-137: pepsi_runner: stats_flush runs');
select lives_ok($$select pepsi.workqueue_body_gc()$$, 'D-143: pepsi_runner: workqueue_body_gc runs');
select lives_ok($$select * from pepsi.workqueue_release_paused()$$, 'D-93: pepsi_runner: workqueue_release_paused runs');
select lives_ok($$select count(*) from pepsi.queue_overview$$, 'pepsi_runner: select from queue_overview works');
reset role;

-- pepsi_ingress -------------------------------------------------------------

select ok(has_function_privilege('pepsi_ingress', 'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)', 'execute'),
          'D-33: pepsi_ingress can execute workqueue_inject');
select ok(has_function_privilege('pepsi_ingress', 'pepsi.workqueue_inject_batch(jsonb)', 'execute'),
          'D-32: pepsi_ingress can execute workqueue_inject_batch');
select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)', 'execute')
          and has_function_privilege('pepsi_worker', 'pepsi.workqueue_inject_batch(jsonb)', 'execute'),
          'pepsi_worker can inject too (stages that generate messages)');
select ok(not has_function_privilege('pepsi_ingress', 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)', 'execute'),
          'D-39: pepsi_ingress cannot execute workqueue_claim');
select ok(not has_function_privilege('pepsi_ingress', 'pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int)', 'execute')
          and not has_function_privilege('pepsi_ingress', 'pepsi.workqueue_finish(bigint, text)', 'execute'),
          'pepsi_ingress cannot execute stage results (advance, finish)');
select ok(not has_table_privilege('pepsi_ingress', 'pepsi.workqueue', 'select')
          and not has_table_privilege('pepsi_ingress', 'pepsi.workqueue', 'insert'),
          'pepsi_ingress neither reads nor inserts workqueue directly');

set local role pepsi_ingress;
select lives_ok($$select pepsi.workqueue_inject('ingress-check', p_recipients => '{a@example.org}')$$,
                'D-33: pepsi_ingress: workqueue_inject runs');
select lives_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ingress-check"}]')$$,
                'D-32: pepsi_ingress: workqueue_inject_batch runs');
select throws_ok($$select * from pepsi.workqueue_claim('{a}', '{1}')$$, '42501', null,
                 'pepsi_ingress: workqueue_claim is denied');
select throws_ok($$select count(*) from pepsi.workqueue$$, '42501', null,
                 'pepsi_ingress: select from workqueue is denied');
reset role;

select is((select count(*)::int from pepsi.workqueue where stage = 'ingress-check'), 2,
          'the rows pepsi_ingress injected are in workqueue');

select * from finish();
rollback;
