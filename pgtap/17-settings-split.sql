-- pgtap/17-settings-split.sql — per-address settings (D-122, D-123) and
-- the lazy recipient split (D-124, D-125).
begin;
select plan(28);

-- settings CRUD
select lives_ok($$select pepsi.settings_set('Alice@Example.org', 'deliver', 'COMMAND', 'cat')$$,
                'D-122: settings_set stores an override');
select is((select address from pepsi.settings where stage = 'deliver'), 'alice@example.org',
          'addresses are stored lower-cased');
select lives_ok($$select pepsi.settings_set('alice@example.org', 'deliver', 'COMMAND', 'tee')$$,
                'settings_set again replaces the value');
select is((select count(*)::int from pepsi.settings), 1, 'still one row');
select pepsi.settings_set('bob@example.org', 'deliver', 'COMMAND', 'wc');
select pepsi.settings_set('bob@example.org', 'route', 'NEXT', 'slow');
select results_eq($$select address, stage, option, value from pepsi.settings_list('BOB@example.org')$$,
                  $$values ('bob@example.org'::text, 'deliver'::text, 'COMMAND'::text, 'wc'::text),
                           ('bob@example.org', 'route', 'NEXT', 'slow')$$,
                  'settings_list of one address, in order');
select is((select count(*)::int from pepsi.settings_list(p_stage => 'deliver')), 2, 'settings_list of one stage');
select throws_ok($$select pepsi.settings_set('not an address', 'deliver', 'X', '1')$$, 'PX002', null, 'PX002: a bad address');
select throws_ok($$select pepsi.settings_set('a@b.c', 'bad stage', 'X', '1')$$, 'PX001', null, 'PX001: a bad stage');
select throws_ok($$select pepsi.settings_set('a@b.c', 'deliver', 'lower', '1')$$, 'PX003', null, 'PX003: a bad option');
select throws_ok($$select pepsi.settings_set('a@b.c', 'deliver', 'X', null)$$, 'PX003', null, 'PX003: a NULL value');

-- what applies to a message (D-122)
select is(pepsi.settings_for('{}', 'x@y.z', '{Alice@example.org,carol@example.org}'),
          '{"deliver": {"alice@example.org": {"COMMAND": "tee"}}}'::jsonb,
          'D-122: a received message gets the overrides of its recipients, by stage and address');
select is(pepsi.settings_for('{"local_origin": true}', 'bob@example.org', '{alice@example.org}'),
          '{"deliver": {"bob@example.org": {"COMMAND": "wc"}}, "route": {"bob@example.org": {"NEXT": "slow"}}}'::jsonb,
          'D-122: a local-origin message gets the overrides of its envelope sender');
select is(pepsi.settings_for('{}', null, '{nobody@example.org}'), null, 'no overrides: NULL');
select ok(has_function_privilege('pepsi_worker', 'pepsi.settings_for(jsonb, text, text[])', 'execute'),
          'D-123: workers read the overrides with the message');

select is(pepsi.settings_delete('bob@example.org', 'route'), 1, 'settings_delete of one stage');
select is(pepsi.settings_delete('bob@example.org'), 1, 'settings_delete of an address');
select is(pepsi.settings_delete('bob@example.org'), 0, 'nothing left to delete');

-- workqueue_split (D-124)
select pepsi.workqueue_inject('deliver', p_body => 'shared body', p_envelope_sender => 's@x.org',
                              p_recipients => '{a@x.org,b@y.org,c@x.org,d@z.org,e@y.org}',
                              p_state => '{"k": 1, "strikes": 1}') as m \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :m;
select is(cardinality(pepsi.workqueue_split(:m, 'deliver', '[["a@x.org","c@x.org"],["b@y.org","e@y.org"],["d@z.org"]]')), 2,
          'D-124: a split into three groups makes two new messages');
select results_eq(format($$select status::text, recipients from pepsi.workqueue where body_id = (select body_id from pepsi.workqueue where workqueue_id = %s) order by workqueue_id$$, :m),
                  $$values ('running'::text, '{a@x.org,c@x.org}'::text[]), ('pending', '{b@y.org,e@y.org}'), ('pending', '{d@z.org}')$$,
                  'D-124: the first group stays on the running message, the others are pending at the same stage, sharing the body');
select is((select count(distinct state - 'strikes') from pepsi.workqueue where body_id = (select body_id from pepsi.workqueue where workqueue_id = :m)), 1::bigint,
          'D-124: the new messages carry the same state');
select is((select count(*)::int from pepsi.workqueue_body), 1, 'D-124: the body is shared, not copied');
delete from pepsi.workqueue where workqueue_id = :m;
select is((select count(*)::int from pepsi.workqueue_body), 1, 'D-144: the shared body stays while a sibling refers to it');
delete from pepsi.workqueue;
select is((select count(*)::int from pepsi.workqueue_body), 0, 'D-144: and goes with the last one');

select pepsi.workqueue_inject('deliver', p_recipients => '{a@x.org,b@y.org}') as n \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :n;
select throws_ok(format($$select pepsi.workqueue_split(%s, 'deliver', '[["a@x.org"],["c@y.org"]]')$$, :n), 'PX003', null,
                 'PX003: groups that are not the recipients');

-- settings_apply: a control message's changes and its advance, one call
select pepsi.workqueue_inject('settings', p_origin_user => 'al', p_envelope_sender => 'al@x.org') as c \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :c;
select pepsi.user_address_add('al', 'al@x.org');
select pepsi.settings_set('al@x.org', 'deliver', 'HEADERS', 'yes');
select is((select changed || ' ' || outcome from pepsi.settings_apply(:c, 'settings', 'deliver', 'al@x.org',
              '[{"stage": "deliver", "option": "MAX_LIFETIME", "value": "1h"}, {"stage": "deliver", "option": "HEADERS", "value": null}]')),
          '2 ok', 'settings_apply applies the changes (a null value deletes) and advances');
select results_eq($$select option, value from pepsi.settings_list('al@x.org')$$, $$values ('MAX_LIFETIME'::text, '1h'::text)$$,
                  'settings_apply: MAX_LIFETIME set, HEADERS deleted');
select is((select stage || '/' || status from pepsi.workqueue where workqueue_id = :c), 'deliver/pending',
          'D-76: and the message advanced in the same call');
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', null, 'al@x.org', '[]')$$, :c), 'PX005', null,
                 'settings_apply refuses a message that is not running at the stage');

select * from finish();
rollback;
