-- pgtap/15-config-override.sql — the database overlay of [stage-*]
-- sections (D-116..D-120): config_set, config_unset, config_remove_stage,
-- config_clear, config_overlay, telemetry_changed.
begin;
select plan(24);

select has_table('pepsi', 'config_override', 'D-117: pepsi.config_override exists');
select col_is_pk('pepsi', 'config_override', array['section', 'key'], 'one row per section and key');

-- What a runner publishes of its file (issue 15): config_set checks
-- PROGRAM and stage references against it.
select pepsi.stage_served_publish(0, $$[{"stage": "deliver", "program": "pepsi-stage-pass"},
                                        {"stage": "a", "program": "pepsi-stage-exec"},
                                        {"stage": "b", "program": "pepsi-stage-pass"}]$$);

select lives_ok($$select pepsi.config_set('deliver', 'PARALLELISM', '2')$$, 'D-117: config_set a common key');
select is((select value from pepsi.config_override where section = 'stage-deliver' and key = 'PARALLELISM'), '2',
          'D-117: the row holds the value under [stage-deliver]');
select lives_ok($$select pepsi.config_set('deliver', 'PARALLELISM', '3')$$, 'config_set again replaces the value');
select is((select count(*)::int from pepsi.config_override where section = 'stage-deliver'), 1, 'still one row');
select is((select value from pepsi.config_override where section = 'stage-deliver' and key = 'PARALLELISM'), '3',
          'the new value');

select lives_ok($$select pepsi.config_unset('deliver', 'NEXT')$$, 'D-117: config_unset takes a key out');
select ok((select value is null from pepsi.config_override where section = 'stage-deliver' and key = 'NEXT'),
          'D-117: an unset key is a row with a NULL value');

select lives_ok($$select pepsi.config_remove_stage('deliver')$$, 'D-117: config_remove_stage');
select results_eq($$select key, value from pepsi.config_override where section = 'stage-deliver'$$,
                  $$values ('*'::text, null::text)$$,
                  'D-117: removing a stage leaves only its removal row');
select lives_ok($$select pepsi.config_set('deliver', 'PROGRAM', 'pepsi-stage-pass')$$, 'config_set brings a removed stage back');
select is((select count(*)::int from pepsi.config_override where section = 'stage-deliver' and key = '*'), 0,
          'the removal row is gone once the stage is set again');

select pepsi.config_set('a', 'COMMAND', 'true');
select pepsi.config_remove_stage('b');
select results_eq($$select section, key from pepsi.config_overlay()$$,
                  $$values ('stage-a'::text, 'COMMAND'::text), ('stage-b', '*'), ('stage-deliver', 'PROGRAM')$$,
                  'D-117: config_overlay returns the rows in the order they apply (removal first in a section)');

select is(pepsi.config_clear('a'), 1, 'config_clear of one stage returns how many rows went');
select is(pepsi.config_clear(), 2, 'config_clear of all');
select is(pepsi.config_clear(), 0, 'config_clear of nothing');

select throws_ok($$select pepsi.config_set('bad name', 'X', '1')$$, 'PX001', null, 'PX001: a bad stage name');
select throws_ok($$select pepsi.config_set('a', 'lower', '1')$$, 'PX003', null, 'PX003: a lower-case key');
select throws_ok($$select pepsi.config_set('a', 'X', null)$$, 'PX003', null, 'PX003: a NULL value must use config_unset');
select throws_ok($$insert into pepsi.config_override (section, key, value) values ('pepsi-dispatch', 'POLL_INTERVAL', '1s')$$,
                 '23514', null, 'D-120: [pepsi-dispatch] cannot be overlaid');

select lives_ok($$select pepsi.telemetry_changed()$$, 'D-116: telemetry_changed can be sent');
select ok(has_function_privilege('pepsi_worker', 'pepsi.config_overlay()', 'execute'),
          'D-113: workers can read the overlay');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.config_set(text, text, text)', 'execute'),
          'workers cannot change the overlay');

select * from finish();
rollback;
