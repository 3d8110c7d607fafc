-- pgtap/18-settings-owner.sql — who may change per-address settings
-- (issue 11): an end user's settings control message only for addresses
-- its authenticated origin user owns (pepsi.user_address, checked in SQL
-- by settings_apply from the row itself), never an operator-only option;
-- updated_by says who; control notifications carry a version only the
-- owner moves.
begin;
select plan(51);

-- Ownership.
select ok(pepsi.user_address_owns('Alice@X.org', 'alice@x.org'), 'a login that is an address owns it (any case)');
select ok(not pepsi.user_address_owns('alice', 'alice@x.org'), 'a login owns nothing it was not given');
select ok(not pepsi.user_address_owns(null, 'alice@x.org'), 'no login owns nothing');
select ok(not pepsi.user_address_owns('', 'alice@x.org'), 'an empty login owns nothing');
select is(pepsi.user_address_add('alice', 'Alice@X.org'), true, 'user_address_add records an address');
select is(pepsi.user_address_add('alice', 'alice@x.org'), false, 'and says when it already was');
select ok(pepsi.user_address_owns('alice', 'ALICE@x.org'), 'alice owns it now');
select ok(not pepsi.user_address_owns('bob', 'alice@x.org'), 'bob does not');
select throws_ok($$select pepsi.user_address_add('alice', 'not an address')$$, 'PX002', null, 'PX002: a bad address');
select throws_ok($$select pepsi.user_address_add('', 'a@b.c')$$, 'PX003', null, 'PX003: an empty login');
select throws_ok($$select pepsi.user_address_add(repeat('x', 321), 'a@b.c')$$, 'PX003', null, 'PX003: a login over 320 bytes');
select pepsi.user_address_add('alice', 'alias@x.org');
select results_eq($$select login, address from pepsi.user_address_list('alice')$$,
                  $$values ('alice'::text, 'alias@x.org'::text), ('alice', 'alice@x.org')$$, 'user_address_list, in order');
select is(pepsi.user_address_remove('alice', 'alias@x.org'), 1, 'user_address_remove of one address');

-- settings_apply, for each message a control message from someone.
create function pg_temp.control(p_user text, p_sender text) returns bigint language plpgsql as $$
declare
    v_id bigint := pepsi.workqueue_inject('settings', p_origin_user => p_user, p_envelope_sender => p_sender);
begin
    update pepsi.workqueue set status = 'running' where workqueue_id = v_id;
    return v_id;
end
$$;
create function pg_temp.settings_of(p_address text) returns text language sql as $$
    select coalesce(string_agg(stage || ' ' || option || '=' || value, ', ' order by stage, option), '')
      from pepsi.settings where address = p_address
$$;
select pepsi.settings_set('bob@y.org', 'deliver', 'COMMAND', 'bob-only');
select pepsi.settings_set('alice@x.org', 'deliver', 'COMMAND', 'cat');

select pg_temp.control('alice', 'alice@x.org') as own \gset
select is((select changed from pepsi.settings_apply(:own, 'settings', 'deliver', 'alice@x.org',
                               '[{"stage": "deliver", "option": "HEADERS", "value": "yes"}]')), 1,
          'issue 11: a control message changes an allow-listed option of its user''s own address');
select is(pg_temp.settings_of('alice@x.org'), 'deliver COMMAND=cat, deliver HEADERS=yes', 'the change is there');
select is((select updated_by from pepsi.settings where address = 'alice@x.org' and option = 'HEADERS'), 'user:alice',
          'issue 11: updated_by names the origin user of a control message');
select is((select stage || '/' || status from pepsi.workqueue where workqueue_id = :own), 'deliver/pending',
          'and the message advanced in the same call');

select pg_temp.control('alice', 'bob@y.org') as theirs \gset
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'bob@y.org',
                                                      '[{"stage": "deliver", "option": "HEADERS", "value": "yes"}]')$$, :theirs),
                 'PX030', 'user "alice" may not change the settings of this address',
                 'issue 11: another user''s address is refused with PX030, naming none of its settings');
select is(pg_temp.settings_of('bob@y.org'), 'deliver COMMAND=bob-only', 'and bob''s settings are unchanged');
select is((select stage || '/' || status from pepsi.workqueue where workqueue_id = :theirs), 'settings/running',
          'the message stays running for its worker to fail it');
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'Bob@Y.org',
                                                      '[{"stage": "deliver", "option": "HEADERS", "value": null}]')$$, :theirs),
                 'PX030', null, 'a deletion on another user''s address is refused too (whatever the case)');

select pg_temp.control(null, 'alice@x.org') as anon \gset
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'alice@x.org', '[]')$$, :anon),
                 'PX030', 'a settings control message needs an authenticated origin user',
                 'issue 11: a message without an authenticated origin user changes nothing');
select pg_temp.control('', 'alice@x.org') as empty_user \gset
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'alice@x.org', '[]')$$, :empty_user),
                 'PX030', null, 'nor one with an empty origin user');

-- Operator-only options, whoever asks, and never half applied.
select pg_temp.control('alice@x.org', 'alice@x.org') as ctl \gset
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'alice@x.org',
                          '[{"stage": "deliver", "option": "HEADERS", "value": "no"}, {"stage": "deliver", "option": "%s", "value": "x"}]')$$,
                        :ctl, o),
                 'PX031', format('option "%s" can only be set by an operator', o),
                 format('issue 11: %s is operator-only (PX031)', o))
  from unnest(array['COMMAND', 'URL', 'AUTHORIZATION', 'SIGNING_SECRET', 'CONDITION', 'THEN', 'ELSE', 'NEXT',
                    'PROGRAM', 'BOUNCE_STAGE']) o;
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'alice@x.org',
                          '[{"stage": "deliver", "option": "COMMAND", "value": null}]')$$, :ctl),
                 'PX031', null, 'issue 11: deleting an operator-only override is refused too');
select is(pg_temp.settings_of('alice@x.org'), 'deliver COMMAND=cat, deliver HEADERS=yes',
          'issue 11: nothing of a refused control message was applied');

-- The rule itself, on the same names as runner/tests/test_conf.c.
select is(array_agg(o order by o) filter (where pepsi.settings_option_operator_only(o)),
          array['API_KEY', 'AUTHORIZATION', 'BOUNCE_STAGE', 'COMMAND', 'CONDITION', 'DB_PASSWORD', 'ELSE', 'FUSION',
                'MAX_RUNTIME', 'NEXT', 'PARALLELISM', 'PASS_CONNINFO', 'PROGRAM', 'SIGNING_SECRET', 'SMTP_HOST', 'THEN',
                'TOKEN', 'URL', 'USER_OPTIONS', 'WEBHOOK_URL'],
          'issue 11: operator-only options')
  from unnest(array['API_KEY', 'AUTHORIZATION', 'BOUNCE_STAGE', 'COMMAND', 'CONDITION', 'DB_PASSWORD', 'ELSE', 'FUSION',
                    'MAX_RUNTIME', 'NEXT', 'PARALLELISM', 'PASS_CONNINFO', 'PROGRAM', 'SIGNING_SECRET', 'SMTP_HOST', 'THEN',
                    'TOKEN', 'URL', 'USER_OPTIONS', 'WEBHOOK_URL', 'HEADERS', 'MAX_LIFETIME', 'TIMEOUT', 'LANGUAGE',
                    'SIGNATURE_TEXT']) o;

-- Bad input gets its PX code (issue 11).
select pg_temp.control('alice', 'alice@x.org') as shape \gset
select throws_ok(format($$select pepsi.settings_apply(%s, 'settings', 'deliver', 'alice@x.org', '[["HEADERS", "yes"]]')$$, :shape),
                 'PX003', null, 'PX003: a change that is not an object');
select throws_ok($$select pepsi.config_set('x', 'COMMAND', repeat('y', 4097))$$, 'PX003', null,
                 'PX003: an overlay value over 4096 bytes');
select lives_ok($$select pepsi.settings_set('"john doe"@example.org', 'deliver', 'HEADERS', 'yes')$$,
                'an address address_check accepts (a quoted local part) is stored, not refused by a raw 23514');
select is(pepsi.settings_for('{"local_origin": "yes"}', 'alice@x.org', '{}'), null,
          'settings_for reads local_origin as the worker does: only JSON true is the flag');

-- Operators: any option, recorded under the session's login.
select lives_ok($$select pepsi.settings_set('carol@z.org', 'deliver', 'COMMAND', 'wc -c')$$,
                'issue 11: an operator still sets COMMAND per address');
select is((select updated_by from pepsi.settings where address = 'carol@z.org'), session_user::text,
          'issue 11: updated_by is the session user, not the function''s owner');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.settings_put(text, text, text, text, text)', 'execute'),
          'workers cannot write settings except through settings_apply');
select ok(not has_function_privilege('pepsi_worker', 'pepsi.user_address_add(text, text)', 'execute'),
          'workers cannot grant addresses');

-- Control signals: a version only the owner's functions move.
create temporary table v0 as select channel, version from pepsi.control_signal;
create function pg_temp.moved(p_channel text) returns bigint language sql as $$
    select s.version - v.version from pepsi.control_signal s join v0 v using (channel) where channel = p_channel
$$;
select pepsi.config_set('x', 'PROGRAM', 'pepsi-stage-pass');
select cmp_ok(pg_temp.moved('config_changed'), '>', 0::bigint, 'issue 11: config_set moves the config_changed version');
truncate v0;
insert into v0 select channel, version from pepsi.control_signal;
insert into pepsi.config_override (section, key, value) values ('stage-y', 'PROGRAM', 'pepsi-stage-pass');
select cmp_ok(pg_temp.moved('config_changed'), '>', 0::bigint, 'a DBA''s own write to the overlay moves it too');
select pepsi.telemetry_changed();
select is(pg_temp.moved('telemetry_changed'), 1::bigint, 'issue 11: telemetry_changed moves its version');
select is(pg_temp.moved('reconcile'), 0::bigint, 'and not the others');
select throws_ok($$select pepsi.control_signal_send('workqueue')$$, 'PX003', null, 'PX003: not a control channel');
select ok(not has_function_privilege('pepsi_runner', 'pepsi.control_signal_send(text)', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.control_signal_send(text)', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.control_signal_send(text)', 'execute')
          and not has_function_privilege('pepsi_ingress', 'pepsi.control_signal_send(text)', 'execute')
          and not has_function_privilege('public', 'pepsi.control_signal_send(text)', 'execute'),
          'issue 11: no role but the owner moves a version');
select ok(has_function_privilege('pepsi_runner', 'pepsi.control_signal_versions()', 'execute'),
          'the runner reads them');

select * from finish();
rollback;
