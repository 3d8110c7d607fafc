-- pgtap/54-config-validate.sql — issue 15: the overlay validated at the
-- source. config_set, config_unset and config_remove_stage refuse with
-- PX044 what the runner would refuse on reload (D-118), by the key table
-- generated from the runner's (pepsi.config_key) and the stage graph the
-- runners publish (pepsi.stage_served); the duration and typo rules agree
-- with the C side on testdata/conf-value-vectors.json (test_conf checks
-- the same file).
begin;
select plan(45);

-- ---- the shared vectors ----
create temp table dur on commit drop as
select e ->> 'text' as text, (e ->> 'ms')::numeric as ms
  from public.pepsi_testdata d, jsonb_array_elements(d.body -> 'durations') e
 where d.file = 'conf-value-vectors.json';
create temp table typo on commit drop as
select e ->> 'key' as key, e ->> 'typo_of' as typo_of
  from public.pepsi_testdata d, jsonb_array_elements(d.body -> 'typos') e
 where d.file = 'conf-value-vectors.json';

select cmp_ok((select count(*)::int from dur), '>=', 30, 'the duration vectors are loaded');
select is((select array_agg(format('%s: %s, not %s', t.text, pepsi.conf_duration_ms(t.text), t.ms))
             from dur t where pepsi.conf_duration_ms(t.text)::numeric is distinct from t.ms),
          null, 'issue 15: conf_duration_ms agrees with conf_parse_duration on every vector');
select cmp_ok((select count(*)::int from typo), '>=', 8, 'the typo vectors are loaded');
select is((select array_agg(format('%s: %s, not %s', t.key, pepsi.conf_key_typo('stage', t.key), t.typo_of))
             from typo t where pepsi.conf_key_typo('stage', t.key) is distinct from t.typo_of),
          null, 'issue 15: conf_key_typo agrees with the runner''s typo rule on every vector');

-- ---- the graph the runner published ----
select is(pepsi.stage_served_publish(0, $$[
    {"stage": "a", "program": "pepsi-stage-exec", "refs": {"NEXT": "b"}},
    {"stage": "b", "program": "pepsi-stage-pass", "refs": {"NEXT": null}},
    {"stage": "c", "program": "pepsi-stage-pass"}]$$), 3, 'a runner publishes its three stages');
select throws_ok($$select pepsi.stage_served_publish(0, '{"stage": "a"}')$$, 'PX003', null,
                 'stage_served_publish wants an array');
select throws_ok($$select pepsi.stage_served_publish(-1, '[]')$$, 'PX003', null, 'and an owner slot');

-- ---- values ----
select throws_ok($$select pepsi.config_set('a', 'PARALLELISM', '0')$$, 'PX044',
                 'key "PARALLELISM" in [stage-a]: invalid value "0": expected an integer from 1 to 1024',
                 'issue 15 (D-118): PARALLELISM 0 is refused, not a runner shut down');
select throws_ok($$select pepsi.config_set('a', 'PARALLELISM', '1025')$$, 'PX044', null, 'PARALLELISM over its max');
select throws_ok($$select pepsi.config_set('a', 'PARALLELISM', 'many')$$, 'PX044', null, 'PARALLELISM not a number');
select lives_ok($$select pepsi.config_set('a', 'PARALLELISM', '2')$$, 'issue 15: a valid config_set still passes');
select is((select value from pepsi.config_override where section = 'stage-a' and key = 'PARALLELISM'), '2',
          'and is written');
select throws_ok($$select pepsi.config_set('a', 'MAX_RUNTIME', 'forever')$$, 'PX044',
                 'key "MAX_RUNTIME" in [stage-a]: invalid value "forever": expected a duration such as 500ms, 30s, 5min, 120h',
                 'issue 15: a duration of forever is refused');
select throws_ok($$select pepsi.config_set('a', 'MAX_RUNTIME', '5m')$$, 'PX044', null, '"m" is refused, as the runner does');
select throws_ok($$select pepsi.config_set('a', 'MAX_RUNTIME', '0s')$$, 'PX044', null, 'a duration of 0 is refused');
select lives_ok($$select pepsi.config_set('a', 'MAX_RUNTIME', '1.5min')$$, 'a duration in the runner''s syntax passes');
select throws_ok($$select pepsi.config_set('a', 'FUSION', 'maybe')$$, 'PX044', null, 'a tristate wants yes or no');
select lives_ok($$select pepsi.config_set('a', 'FUSION', '')$$, 'or nothing');
select throws_ok($$select pepsi.config_set('a', 'USER_OPTIONS', 'COLOUR, COMMAND')$$, 'PX044', null,
                 'USER_OPTIONS may not name an operator-only option');
select throws_ok($$select pepsi.config_set('a', 'PROGRAM', '')$$, 'PX044', null, 'PROGRAM may not be empty');

-- ---- keys ----
select throws_ok($$select pepsi.config_set('a', 'PARALELISM', '2')$$, 'PX044',
                 'unknown key "PARALELISM" in [stage-a] (did you mean PARALLELISM?)',
                 'issue 15: a typo''d key is refused');
select throws_ok($$select pepsi.config_set('a', 'POLL_INTERVAL', '1s')$$, 'PX044', null,
                 'a key of [pepsi-dispatch] is no stage key');
select lives_ok($$select pepsi.config_set('a', 'COMMAND', 'true')$$, 'a program''s own key passes');
select throws_ok($$select pepsi.config_unset('a', 'PARALELISM')$$, 'PX044', null, 'config_unset refuses a typo too');

-- ---- stage references ----
select throws_ok($$select pepsi.config_set('a', 'NEXT', 'nosuch')$$, 'PX044',
                 'key "NEXT" in [stage-a]: no section [stage-nosuch]', 'issue 15: NEXT = nosuch is refused');
select throws_ok($$select pepsi.config_set('a', 'NEXT', 'bad name')$$, 'PX044', null, 'NEXT must be a stage name');
select lives_ok($$select pepsi.config_set('a', 'NEXT', 'c')$$, 'NEXT to a published stage passes');
select lives_ok($$select pepsi.config_set('d', 'PROGRAM', 'pepsi-stage-pass'); select pepsi.config_set('c', 'BOUNCE_STAGE', 'd')$$,
                'a reference to a stage the overlay adds passes');
select throws_ok($$select pepsi.config_set('c', 'THEN', 'e')$$, 'PX044', null, 'THEN (a built-in''s own key) is checked too');

-- ---- sections without PROGRAM ----
select throws_ok($$select pepsi.config_set('new', 'PARALLELISM', '2')$$, 'PX044',
                 'section [stage-new]: PROGRAM is required', 'issue 15: a section without PROGRAM is refused');
select lives_ok($$select pepsi.config_set('new', 'PROGRAM', 'pepsi-stage-pass'); select pepsi.config_set('new', 'PARALLELISM', '2')$$,
                'with its PROGRAM first it passes');
select throws_ok($$select pepsi.config_unset('b', 'PROGRAM')$$, 'PX044', null,
                 'config_unset cannot leave a stage without PROGRAM');

-- ---- removing a stage ----
select throws_ok($$select pepsi.config_remove_stage('c')$$, 'PX044',
                 'key "NEXT" in [stage-a]: no section [stage-c]',
                 'issue 15: config_remove_stage of a stage another stage''s NEXT names is refused');
select throws_ok($$select pepsi.config_remove_stage('d')$$, 'PX044', null, 'the same for BOUNCE_STAGE in the overlay');
select lives_ok($$select pepsi.config_remove_stage('new')$$, 'a stage nobody names can be removed');
select lives_ok($$select pepsi.config_unset('a', 'NEXT'); select pepsi.config_remove_stage('b')$$,
                'once its last reference is gone, b can be removed');
select throws_ok($$select pepsi.config_set('a', 'NEXT', 'b')$$, 'PX044', null, 'and a removed stage is no target');

-- ---- who serves what ----
select is((select count(*)::int from pepsi.stage_served_live()), 0, 'no dispatcher holds slot 0: nothing is served');
select pg_advisory_lock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', 0) k;
select is((select array_agg(stage order by stage) from pepsi.stage_served_live()), array['a', 'b', 'c'],
          'with slot 0''s dispatcher lock held, its published stages are served');
select pg_advisory_unlock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', 0) k;

-- ---- the anomaly check: messages at a stage nobody serves ----
create function pg_temp.unserved() returns text language sql as $$
    select e.state || ':' || coalesce(e.subject, '') || ':' || coalesce(e.value::text, '')
      from pepsi.anomaly_evaluate('unserved_stage', now()) e $$;
delete from pepsi.workqueue;
select pepsi.anomaly_refresh();
select is(pg_temp.unserved(), 'ok:all:0', 'issue 15: unserved_stage is silent on an empty queue');
select pepsi.workqueue_inject('a');
select pepsi.workqueue_inject('nosuch') from generate_series(1, 2);
select pepsi.anomaly_refresh();
select is(pg_temp.unserved(), 'firing:nosuch:2',
          'issue 15: with no dispatcher holding a lock, messages at a and nosuch are unserved; nosuch, with more, is named');
select pg_advisory_lock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', 0) k;
select is(pg_temp.unserved(), 'firing:nosuch:2',
          'issue 15: with slot 0 served, a is served, and the 2 messages at nosuch still fire');
delete from pepsi.workqueue where stage = 'nosuch';
select pepsi.anomaly_refresh();
select is(pg_temp.unserved(), 'ok:a:0', 'issue 15: silent once every pending message is at a served stage');
select pg_advisory_unlock(k.class_id, k.object_id) from pepsi.lock_key('dispatcher', 0) k;
select is(pg_temp.unserved(), 'firing:a:1', 'issue 15: fires when the dispatcher serving a stops (its lock is gone)');

select ok(not has_function_privilege('pepsi_runner', 'pepsi.config_value_check(text, text, text)', 'execute'),
          'the checks are the owner''s helpers');

select * from finish();
rollback;
