-- Webhook providers (issue 6): the table, its functions, secret rotation,
-- what the ingress reads (webhook_provider_list) and what readers see
-- (webhook_providers, without secrets), and the grants.

begin;
select plan(61);

select has_table('pepsi', 'webhook_provider', 'table webhook_provider exists');
select has_view('pepsi', 'webhook_providers', 'view webhook_providers exists');
select has_function('pepsi', 'webhook_provider_add',
                    array['text', 'text', 'text[]', 'text', 'text', 'text', 'interval', 'text', 'text', 'text'],
                    'webhook_provider_add(name, scheme, secrets, stage, tube, id_source, tolerance, header, encoding, prefix) exists');
select has_function('pepsi', 'webhook_provider_change', array['text', 'jsonb'], 'webhook_provider_change exists');
select has_function('pepsi', 'webhook_provider_add_secret', array['text', 'text'], 'webhook_provider_add_secret exists');
select has_function('pepsi', 'webhook_provider_retire_secret', array['text', 'text'], 'webhook_provider_retire_secret exists');
select has_function('pepsi', 'webhook_provider_disable', array['text'], 'webhook_provider_disable exists');
select has_function('pepsi', 'webhook_provider_enable', array['text'], 'webhook_provider_enable exists');
select has_function('pepsi', 'webhook_provider_list', array[]::text[], 'webhook_provider_list exists');

-- Adding, with each scheme's default id source ---------------------------------

select lives_ok($$select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver')$$,
                'add a standard-webhooks provider routed to stage deliver');
select lives_ok($$select pepsi.webhook_provider_add('stripe', 'stripe', '{whsec_test_secret}')$$, 'add a stripe provider (pulled)');
select lives_ok($$select pepsi.webhook_provider_add('gh', 'github', '{mysecret}', 'gh-in', 'github')$$,
                'add a github provider with a tube');
select lives_ok($$select pepsi.webhook_provider_add('slack', 'slack', '{8f742231b10e8888abcd99yyyzzz85a5}')$$, 'add a slack provider');
select lives_ok($$select pepsi.webhook_provider_add('shop', 'shopify', '{secret}')$$, 'add a shopify provider');
select lives_ok($$select pepsi.webhook_provider_add('generic', 'hmac-sha256', '{s3cret}', p_id_source => 'header:X-Event-Id',
                                                     p_signature_header => 'X-Signature', p_signature_prefix => 'sha256=')$$,
                'add a generic hmac-sha256 provider');

select results_eq($$select provider, id_source from pepsi.webhook_provider order by provider$$,
                  $$values ('generic', 'header:X-Event-Id'), ('gh', 'header:X-GitHub-Delivery'), ('shop', 'header:X-Shopify-Webhook-Id'),
                           ('slack', 'json:event_id'), ('stripe', 'json:id'), ('sw', 'header:webhook-id')$$,
                  'each scheme gets its documented id source by default');
select row_eq($$select scheme, tolerance, stage, tube, enabled, signature_encoding from pepsi.webhook_provider where provider = 'sw'$$,
              row('standard-webhooks'::text, interval '5 minutes', 'deliver'::text, 'default'::text, true, null::text),
              'defaults: tolerance 5 minutes, tube default, enabled');
select row_eq($$select signature_header, signature_encoding, signature_prefix from pepsi.webhook_provider where provider = 'generic'$$,
              row('X-Signature'::text, 'hex'::text, 'sha256='::text), 'hmac-sha256: encoding defaults to hex');

-- Refusals ------------------------------------------------------------------

select throws_ok($$select pepsi.webhook_provider_add('sw', 'github', '{x}')$$, 'PX010', null, 'PX010: a name that is taken');
select throws_ok($$select pepsi.webhook_provider_add('bad/name', 'github', '{x}')$$, 'PX010', null, 'PX010: a name that is no URL segment');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github-sha1', '{x}')$$, 'PX010', null, 'PX010: an unknown scheme');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{}')$$, 'PX010', null, 'PX010: no secret');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{""}')$$, 'PX010', null, 'PX010: an empty secret');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'standard-webhooks', '{whsec_}')$$, 'PX010', null,
                 'PX010: the empty standard-webhooks secret "whsec_" (vector sw-neg-empty-secret)');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'standard-webhooks', '{whsec_not*base64}')$$, 'PX010', null,
                 'PX010: a standard-webhooks secret that is not base64');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'hmac-sha256', '{x}', p_id_source => 'sha256')$$, 'PX010', null,
                 'PX010: hmac-sha256 without a signature header');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'hmac-sha256', '{x}')$$, 'PX010', null,
                 'PX010: hmac-sha256 without an id source (it has no default)');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{x}', p_signature_header => 'X-Sig')$$, 'PX010', null,
                 'PX010: a signature header for a scheme that has its own');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{x}', 'bad stage!')$$, 'PX010', null, 'PX010: a bad entry stage');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{x}', 'in', '-tube')$$, 'PX010', null, 'PX010: a bad tube');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'github', '{x}', p_id_source => 'cookie:x')$$, 'PX010', null, 'PX010: a bad id source');
select throws_ok($$select pepsi.webhook_provider_add('p1', 'stripe', '{x}', p_tolerance => interval '0')$$, 'PX010', null, 'PX010: a zero tolerance');

-- Changing ------------------------------------------------------------------

select lives_ok($$select pepsi.webhook_provider_change('stripe', '{"tolerance": "10 minutes", "stage": "pay", "tube": "payments"}')$$,
                'change tolerance, stage and tube');
select row_eq($$select tolerance, stage, tube from pepsi.webhook_provider where provider = 'stripe'$$,
              row(interval '10 minutes', 'pay'::text, 'payments'::text), 'the changed keys are stored');
select lives_ok($$select pepsi.webhook_provider_change('stripe', '{"stage": null}')$$, 'stage null: pulled from now on');
select is((select mode from pepsi.webhook_providers where provider = 'stripe'), 'pull', 'webhook_providers says pull');
select throws_ok($$select pepsi.webhook_provider_change('stripe', '{"colour": "red"}')$$, 'PX003', null, 'PX003: an unknown key');
select throws_ok($$select pepsi.webhook_provider_change('stripe', '[]')$$, 'PX003', null, 'PX003: changes that are not an object');
select throws_ok($$select pepsi.webhook_provider_change('nobody', '{"enabled": false}')$$, 'PX011', null, 'PX011: an unknown provider');
select throws_ok($$select pepsi.webhook_provider_change('stripe', '{"secrets": []}')$$, 'PX010', null, 'PX010: a change that removes every secret');
select throws_ok($$select pepsi.webhook_provider_change('stripe', '{"tolerance": "soon"}')$$, 'PX010', null, 'PX010: a tolerance that is no interval');

-- Rotation ------------------------------------------------------------------

select lives_ok($$select pepsi.webhook_provider_add_secret('shop', 'new_secret')$$, 'rotation: add the new secret');
select is((select secrets from pepsi.webhook_provider where provider = 'shop'), '{new_secret,secret}'::text[],
          'rotation: the new secret comes first, the old one still verifies');
select lives_ok($$select pepsi.webhook_provider_add_secret('shop', 'new_secret')$$, 'rotation: adding an active secret again is harmless');
select is((select cardinality(secrets) from pepsi.webhook_provider where provider = 'shop'), 2, 'rotation: no duplicate secret');
select lives_ok($$select pepsi.webhook_provider_retire_secret('shop', 'secret')$$, 'rotation: retire the old secret');
select is((select secrets from pepsi.webhook_provider where provider = 'shop'), '{new_secret}'::text[], 'rotation: only the new secret is left');
select throws_ok($$select pepsi.webhook_provider_retire_secret('shop', 'new_secret')$$, 'PX010', null, 'PX010: the last secret cannot be retired');
select throws_ok($$select pepsi.webhook_provider_retire_secret('shop', 'never')$$, 'PX010', null, 'PX010: retiring a secret that is not active');

-- Disable, enable, and what the ingress reads --------------------------------

select lives_ok($$select pepsi.webhook_provider_disable('slack')$$, 'disable slack');
select is((select array_agg(provider order by provider) from pepsi.webhook_provider_list()),
          '{generic,gh,shop,stripe,sw}'::text[], 'webhook_provider_list leaves disabled providers out');
select row_eq($$select secrets, tolerance_s from pepsi.webhook_provider_list() where provider = 'sw'$$,
              row('["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]'::jsonb, 300::bigint),
              'webhook_provider_list: secrets as a JSON array, tolerance in seconds');
select lives_ok($$select pepsi.webhook_provider_enable('slack')$$, 'enable slack again');
select ok((select enabled from pepsi.webhook_provider where provider = 'slack'), 'slack is enabled');
select ok((select updated_at = now() from pepsi.webhook_provider where provider = 'slack'), 'a change stamps updated_at');

-- Grants: secrets are for the owner and pepsi_ingress only --------------------

select ok(not has_table_privilege('pepsi_reader', 'pepsi.webhook_provider', 'select')
          and not has_table_privilege('pepsi_worker', 'pepsi.webhook_provider', 'select')
          and not has_table_privilege('pepsi_ingress', 'pepsi.webhook_provider', 'select')
          and not has_table_privilege('pepsi_runner', 'pepsi.webhook_provider', 'select'),
          'no duty role reads webhook_provider (the secrets) directly');
select ok(has_function_privilege('pepsi_ingress', 'pepsi.webhook_provider_list()', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.webhook_provider_list()', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.webhook_provider_list()', 'execute')
          and not has_function_privilege('public', 'pepsi.webhook_provider_list()', 'execute'),
          'only pepsi_ingress may execute webhook_provider_list');
select ok(not has_function_privilege('public', 'pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text)', 'execute')
          and not has_function_privilege('pepsi_ingress', 'pepsi.webhook_provider_change(text, jsonb)', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.webhook_provider_disable(text)', 'execute'),
          'changing providers is for the owner (DBA) only');

set local role pepsi_reader;
select is((select active_secrets from pepsi.webhook_providers where provider = 'sw'), 1,
          'pepsi_reader: webhook_providers shows how many secrets, not which');
select throws_ok($$select secrets from pepsi.webhook_provider$$, '42501', null, 'pepsi_reader: reading the secrets is denied');
reset role;
set local role pepsi_ingress;
select is((select count(*)::int from pepsi.webhook_provider_list()), 6, 'pepsi_ingress: webhook_provider_list runs');
reset role;

select * from finish();
rollback;
