-- webhook_tombstones: ids known never to have been sent (W-31, W-32),
-- added by operators with a reason, refused for stored events, removable.

begin;
select plan(17);

select has_table('pepsi', 'webhook_tombstones', 'W-31: table webhook_tombstones exists');
select col_is_pk('pepsi', 'webhook_tombstones', array['provider', 'external_id'],
                 'W-31: keyed by (provider, external_id), like webhook_events');
select columns_are('pepsi', 'webhook_tombstones', array['provider', 'external_id', 'reason', 'source', 'created_at'],
                   'W-31: provider, external_id, reason, source, created_at');
select has_function('pepsi', 'webhook_tombstone_add', array['text', 'text', 'text', 'timestamp with time zone'],
                    'webhook_tombstone_add(provider, external_id, reason, now) exists');
select has_function('pepsi', 'webhook_tombstone_remove', array['text', 'text'],
                    'webhook_tombstone_remove(provider, external_id) exists');

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver');
select pepsi.webhook_event_ingest('acme', 'evt_stored', 'x'::bytea);

select is(pepsi.webhook_tombstone_add('acme', 'evt_draft', 'draft invoice, never finalised', '2026-11-30T07:00:00Z'),
          true, 'W-31: an operator tombstones an id with a reason');
select row_eq($$select reason, source, created_at from pepsi.webhook_tombstones where external_id = 'evt_draft'$$,
              row('draft invoice, never finalised'::text, 'operator'::text, '2026-11-30T07:00:00Z'::timestamptz),
              'W-31: the reason and source operator are kept');
select is(pepsi.webhook_tombstone_add('acme', 'evt_draft', 'another reason'), false,
          'a second tombstone of the same id: false, nothing changes');
select is((select reason from pepsi.webhook_tombstones where external_id = 'evt_draft'), 'draft invoice, never finalised',
          'the first reason stays');

select throws_ok($$select pepsi.webhook_tombstone_add('acme', 'evt_stored', 'why not')$$, 'PX020', null,
                 'PX020: a stored event cannot be tombstoned');
select throws_ok($$select pepsi.webhook_tombstone_add('nobody', 'evt_1', 'x')$$, 'PX011', null,
                 'PX011: unknown provider');
select throws_ok($$select pepsi.webhook_tombstone_add('acme', '', 'x')$$, 'PX012', null, 'PX012: empty id');
select throws_ok($$select pepsi.webhook_tombstone_add('acme', 'evt_2', '  ')$$, 'PX003', null, 'PX003: a blank reason');
select throws_ok($$select pepsi.webhook_tombstone_add('acme', 'evt_2', null)$$, 'PX003', null, 'PX003: no reason');

select is(pepsi.webhook_tombstone_remove('acme', 'evt_draft'), true, 'a tombstone can be taken back');
select is(pepsi.webhook_tombstone_remove('acme', 'evt_draft'), false, 'taking it back twice: false');

set local role pepsi_reader;
select is((select count(*)::int from pepsi.webhook_tombstones), 0, 'pepsi_reader reads the tombstones');
reset role;

select * from finish();
rollback;
