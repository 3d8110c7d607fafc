-- Back-fill (W-33..W-35): a gap still missing after a retry becomes a
-- message at the provider's back-fill stage; the answer is stored through
-- the ingest upsert exactly once, or an empty answer tombstones the id.

begin;
select plan(39);

select has_function('pepsi', 'webhook_backfill_store',
                    array['bigint', 'text', 'integer', 'bytea', 'jsonb', 'timestamp with time zone'],
                    'webhook_backfill_store(id, stage, http_status, payload, headers, now) exists');
select ok(has_function_privilege('pepsi_worker', 'pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz)', 'execute'),
          'stage programs (pepsi_worker) may store back-fill answers');

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver',
                                  p_id_source => 'json:id');
select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_retry_after => '10 minutes',
                                     p_backfill_stage => 'backfill-acme', p_backfill_tube => 'backfill', p_max_attempts => 2);

-- evt_0001..evt_0010 with 3, 5, 7 missing.
select count(*) from (
    select pepsi.webhook_event_ingest('acme', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n),
                                      convert_to(format('{"id":"%s"}', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n)), 'UTF8'))
      from generate_series(1, 10) n where n not in (3, 5, 7)) x;
select pepsi.webhook_gaps_detect('2026-11-30T07:00:00Z');
select pepsi.webhook_gaps_detect('2026-11-30T07:01:00Z');
select is((select count(*)::int from pepsi.webhook_gaps where state = 'open'), 3, 'three gaps are open');

-- Not yet due: retry_after has not passed.
select is((select count(*)::int from pepsi.webhook_backfill_due('2026-11-30T07:05:00Z')), 0,
          'W-33: a gap younger than retry_after is not back-filled yet');
-- Due: a request each, at the back-fill stage and tube.
select results_eq($$select kind, external_id, action from pepsi.webhook_backfill_due('2026-11-30T07:12:00Z') order by external_id$$,
                  $$values ('backfill'::text, 'evt_0003'::text, 'backfill_requested'::text),
                           ('backfill', 'evt_0005', 'backfill_requested'), ('backfill', 'evt_0007', 'backfill_requested')$$,
                  'W-33: still missing after a retry: one back-fill request per gap');
select results_eq($$select stage, tube, status::text, state, origin_user from pepsi.workqueue
                     where stage = 'backfill-acme' order by state->>'external_id'$$,
                  $$values ('backfill-acme'::text, 'backfill'::text, 'pending'::text,
                            '{"backfill": true, "webhook_provider": "acme", "external_id": "evt_0003"}'::jsonb, 'backfill:acme'::text),
                           ('backfill-acme', 'backfill', 'pending',
                            '{"backfill": true, "webhook_provider": "acme", "external_id": "evt_0005"}', 'backfill:acme'),
                           ('backfill-acme', 'backfill', 'pending',
                            '{"backfill": true, "webhook_provider": "acme", "external_id": "evt_0007"}', 'backfill:acme')$$,
                  'W-33: the request is a message at the provider''s back-fill stage and tube, naming provider and id');
select is((select count(*)::int from pepsi.webhook_gaps where state = 'backfill' and attempts = 1 and workqueue_id is not null), 3,
          'the gaps record the request and its message');
select is((select count(*)::int from pepsi.webhook_backfill_due('2026-11-30T07:13:00Z')), 0,
          'a request under way is not made again');

select workqueue_id as m3 from pepsi.workqueue where state->>'external_id' = 'evt_0003' \gset
select workqueue_id as m5 from pepsi.workqueue where state->>'external_id' = 'evt_0005' \gset
select workqueue_id as m7 from pepsi.workqueue where state->>'external_id' = 'evt_0007' \gset
update pepsi.workqueue set status = 'running' where stage = 'backfill-acme';

-- Refusals.
select throws_ok(format($$select pepsi.webhook_backfill_store(%s, 'other', 200, 'x', '{}')$$, :m3), 'PX005', null,
                 'PX005: not running at that stage');
select throws_ok($$select pepsi.webhook_backfill_store(-1, 'backfill-acme', 200, 'x', '{}')$$, 'PX004', null,
                 'PX004: no such message');
select pepsi.workqueue_inject('backfill-acme', p_state => '{"external_id": "evt_0009"}') as plain \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :plain;
select throws_ok(format($$select pepsi.webhook_backfill_store(%s, 'backfill-acme', 200, 'x', '{}')$$, :plain), 'PX022', null,
                 'PX022: a message that is not a back-fill request');
select throws_ok(format($$select pepsi.webhook_backfill_store(%s, 'backfill-acme', 200, convert_to('{"id":"evt_0004"}', 'UTF8'), '{}')$$, :m3),
                 'PX023', null, 'PX023: an answer that is another event (json:id differs)');
select throws_ok(format($$select pepsi.webhook_backfill_store(%s, 'backfill-acme', 200, 'not json', '{}')$$, :m3),
                 'PX023', null, 'PX023: an answer that is not JSON when the id comes from JSON');
select throws_ok(format($$select pepsi.webhook_backfill_store(%s, 'backfill-acme', 500, '', '{}')$$, :m3),
                 'PX023', null, 'PX023: a status that is not an answer');

-- Found: stored through the upsert, one message, gap resolved (W-34).
select is(pepsi.webhook_backfill_store(:m3, 'backfill-acme', 200, convert_to('{"id":"evt_0003","v":"api"}', 'UTF8'),
                                       '{"content-type": "application/json", "x-pepsi-backfill": "GET /events/evt_0003"}',
                                       '2026-11-30T07:14:00Z'),
          'new', 'W-34: the event the API returned is stored: outcome new');
select row_eq($$select payload, headers, received_at, processed_at from pepsi.webhook_events where external_id = 'evt_0003'$$,
              row(convert_to('{"id":"evt_0003","v":"api"}', 'UTF8'),
                  '{"content-type": "application/json", "x-pepsi-backfill": "GET /events/evt_0003"}'::jsonb,
                  '2026-11-30T07:14:00Z'::timestamptz, null::timestamptz),
              'W-34: with the answer''s bytes, its headers, received now');
select is((select count(*)::int from pepsi.workqueue where stage = 'deliver' and state->>'external_id' = 'evt_0003'), 1,
          'W-34: exactly one message for the back-filled event, at the provider''s stage');
select row_eq($$select w.tube, w.status::text, w.state, w.origin_user, w.sender_key, b.headers, b.body
                 from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
                where w.stage = 'deliver' and w.state->>'external_id' = 'evt_0003'$$,
              row('default'::text, 'pending'::text,
                  jsonb_build_object('webhook_event', (select webhook_event_id from pepsi.webhook_events where external_id = 'evt_0003'),
                                     'webhook_provider', 'acme', 'external_id', 'evt_0003'),
                  'webhook:acme'::text, 'user:webhook:acme'::text,
                  E'content-type: application/json\r\nx-pepsi-backfill: GET /events/evt_0003\r\n'::text,
                  convert_to('{"id":"evt_0003","v":"api"}', 'UTF8')),
              'W-34: the message is the one a delivery makes (webhook_events_ingest): its state names the event, sender webhook:acme, the answer as body and its headers as the header block');
select row_eq($$select state, resolved_at from pepsi.webhook_gaps where external_id = 'evt_0003'$$,
              row('found'::text, '2026-11-30T07:14:00Z'::timestamptz), 'the gap is resolved as found');
-- The answer stored twice (a crash between store and finish) changes nothing.
select is(pepsi.webhook_backfill_store(:m3, 'backfill-acme', 200, convert_to('{"id":"evt_0003","v":"api"}', 'UTF8'), '{}'),
          'refreshed', 'the same answer stored again: refreshed, no new row');
select is((select count(*)::int from pepsi.workqueue where stage = 'deliver' and state->>'external_id' = 'evt_0003'), 1,
          'and still one message');
select pepsi.workqueue_finish(:m3, 'backfill-acme');

-- The original delivery arrives later: the upsert keys on the id, no second message.
select is((select outcome from pepsi.webhook_event_ingest('acme', 'evt_0003', convert_to('{"id":"evt_0003"}', 'UTF8'))),
          'refreshed', 'W-34: the original delivery arriving after the back-fill: refreshed, not new');
update pepsi.workqueue set status = 'running' where stage = 'deliver' and state->>'external_id' = 'evt_0003';
select pepsi.workqueue_finish(workqueue_id, 'deliver') from pepsi.workqueue where stage = 'deliver' and state->>'external_id' = 'evt_0003';
select is((select outcome from pepsi.webhook_event_ingest('acme', 'evt_0003', convert_to('{"id":"evt_0003"}', 'UTF8'))),
          'processed', 'W-34: and after processing: processed, nothing changes');
select is((select count(*)::int from pepsi.workqueue where state->>'external_id' = 'evt_0003'), 0,
          'W-34: the back-filled event was queued and finished exactly once');

-- The original delivery arrives before the answer: the back-fill makes no message.
select pepsi.webhook_event_ingest('acme', 'evt_0005', convert_to('{"id":"evt_0005"}', 'UTF8'));
select is(pepsi.webhook_backfill_store(:m5, 'backfill-acme', 200, convert_to('{"id":"evt_0005"}', 'UTF8'), '{}'),
          'refreshed', 'W-34: delivered while the back-fill ran: refreshed');
select is((select count(*)::int from pepsi.workqueue where stage = 'deliver' and state->>'external_id' = 'evt_0005'), 1,
          'W-34: one message, the delivery''s');

-- Nothing: a tombstone with the reason (W-35).
select is(pepsi.webhook_backfill_store(:m7, 'backfill-acme', 404, '', '{}', '2026-11-30T07:15:00Z'), 'tombstoned',
          'W-35: HTTP 404: tombstoned');
select row_eq($$select reason, source from pepsi.webhook_tombstones where external_id = 'evt_0007'$$,
              row('back-fill: the provider''s API answered HTTP 404 for this id'::text, 'backfill'::text),
              'W-35: the tombstone says why and that the back-fill wrote it');
select row_eq($$select state, resolved_at from pepsi.webhook_gaps where external_id = 'evt_0007'$$,
              row('tombstoned'::text, '2026-11-30T07:15:00Z'::timestamptz), 'the gap is resolved as tombstoned');
select is((select count(*)::int from pepsi.webhook_gaps_find('acme', 1, 10)), 0,
          'W-32, W-35: the tombstoned id is not a gap any more');

-- An empty 2xx is nothing too; a stored event is never tombstoned.
select pepsi.webhook_backfill_request('acme', 'evt_0011') as m11 \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :m11;
select is(pepsi.webhook_backfill_store(:m11, 'backfill-acme', 200, '', '{}'), 'tombstoned', 'W-35: an empty 200 is nothing');
select pepsi.webhook_backfill_request('acme', 'evt_0012') as m12 \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :m12;
select pepsi.webhook_event_ingest('acme', 'evt_0012', convert_to('{"id":"evt_0012"}', 'UTF8'));
select is(pepsi.webhook_backfill_store(:m12, 'backfill-acme', 410, '', '{}'), 'arrived',
          'an empty answer for an event delivered meanwhile: arrived, no tombstone');
select is((select count(*)::int from pepsi.webhook_tombstones where external_id = 'evt_0012'), 0, 'no tombstone for a stored event');

-- Operator requests.
select throws_ok($$select pepsi.webhook_backfill_request('acme', 'evt_0001')$$, 'PX020', null,
                 'PX020: a stored event is not back-filled');
select pepsi.webhook_provider_add('plain', 'github', '{s}');
select throws_ok($$select pepsi.webhook_backfill_request('plain', '1')$$, 'PX021', null,
                 'PX021: a provider without a back-fill stage');

-- Failed and vanished requests (after max_attempts).
select pepsi.webhook_backfill_request('acme', 'evt_0020') as m20 \gset
select pepsi.webhook_backfill_request('acme', 'evt_0021') as m21 \gset
update pepsi.workqueue set status = 'failed', state = state || '{"last_error": "HTTP 401 unauthorized"}' where workqueue_id = :m20;
delete from pepsi.workqueue where workqueue_id = :m21;
select results_eq($$select kind, external_id, action from pepsi.webhook_backfill_due('2026-11-30T08:00:00Z') order by external_id$$,
                  $$values ('backfill_failed'::text, 'evt_0020'::text, 'flagged'::text), ('backfill', 'evt_0021', 'backfill_requested')$$,
                  'a failed request: failed and flagged; a vanished one: asked again');
select is((select detail from pepsi.webhook_gaps where external_id = 'evt_0020'), 'HTTP 401 unauthorized',
          'the failure keeps the message''s last error');
delete from pepsi.workqueue where state->>'external_id' = 'evt_0021';
select results_eq($$select kind, external_id, action from pepsi.webhook_backfill_due('2026-11-30T08:05:00Z')$$,
                  $$values ('backfill_failed'::text, 'evt_0021'::text, 'flagged'::text)$$,
                  'after max_attempts requests without an answer: failed');
select is((select count(*)::int from pepsi.webhook_gaps where state = 'failed'), 2, 'both are failed');

select * from finish();
rollback;
