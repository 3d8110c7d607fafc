-- webhook_events_ingest: one statement per burst, the article's upsert
-- keyed on (provider, external_id) (W-09..W-14), messages only for new
-- events of pipeline providers, and the refusals.

begin;
select plan(41);

select has_function('pepsi', 'webhook_events_ingest', array['jsonb', 'bytea'], 'webhook_events_ingest(events, payloads) exists');
select has_function('pepsi', 'webhook_event_ingest', array['text', 'text', 'bytea', 'jsonb', 'timestamp with time zone'],
                    'webhook_event_ingest(provider, external_id, payload, headers, received_at) exists');

-- What a call wrote, table by table (issue 12: behaviour, not source text):
-- this transaction's own counters of inserted, updated and deleted rows in
-- schema pepsi, as 'table:+ins~upd-del' for the tables that moved since
-- the snapshot pg_temp.writes_mark() took.
create function pg_temp.writes_now() returns table (relname name, ins bigint, upd bigint, del bigint)
language sql as $$
    select s.relname, s.n_tup_ins, s.n_tup_upd, s.n_tup_del from pg_stat_xact_user_tables s where s.schemaname = 'pepsi'
$$;
create temporary table writes_mark as select * from pg_temp.writes_now();
create function pg_temp.writes_mark() returns void language sql as $$
    delete from writes_mark; insert into writes_mark select * from pg_temp.writes_now();
$$;
create function pg_temp.writes_since() returns text language sql as $$
    select coalesce(string_agg(format('%s:+%s~%s-%s', n.relname, n.ins - coalesce(m.ins, 0), n.upd - coalesce(m.upd, 0),
                                      n.del - coalesce(m.del, 0)), ' ' order by n.relname), 'nothing')
      from pg_temp.writes_now() n left join writes_mark m using (relname)
     where (n.ins, n.upd, n.del) is distinct from (m.ins, m.upd, m.del)
$$;

select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver', 'hooks');
select pepsi.webhook_provider_add('gh', 'github', '{secret}');   -- pulled: no messages
select count(*) as msgs0 from pepsi.workqueue \gset

-- A new event --------------------------------------------------------------------

select pg_temp.writes_mark();
select * from pepsi.webhook_events_ingest(
    '[{"provider": "sw", "external_id": "msg_1", "payload_length": 7,
       "headers": {"content-type": "application/json", "webhook-id": "msg_1"},
       "received_at": "2026-11-30T06:00:00Z"}]', '{"v":1}'::bytea) \gset first_
select is(pg_temp.writes_since(), 'webhook_events:+1~0-0 workqueue:+1~0-0 workqueue_body:+1~0-0',
          'W-09, W-14: a new event is one row of webhook_events and its message; no other table is written (no separate idempotency table)');
select is(:'first_outcome'::text, 'new'::text, 'W-09: a new event: outcome new');
select is((select count(*)::int from pepsi.webhook_events where provider = 'sw' and external_id = 'msg_1'), 1, 'W-09: one row stored');
select row_eq($$select payload, headers, received_at, processed_at from pepsi.webhook_events where external_id = 'msg_1'$$,
              row('{"v":1}'::bytea, '{"content-type": "application/json", "webhook-id": "msg_1"}'::jsonb,
                  '2026-11-30T06:00:00Z'::timestamptz, null::timestamptz),
              'W-07: payload (exact bytes), headers, received_at as given, not processed');
select isnt(:'first_workqueue_id'::text, ''::text, 'a new event of a pipeline provider gets a message');
select row_eq(format($$select stage, tube, status::text, state, origin_user, sender_key, arrived_at
                        from pepsi.workqueue where workqueue_id = %s$$, :first_workqueue_id),
              row('deliver'::text, 'hooks'::text, 'pending'::text,
                  jsonb_build_object('webhook_event', :first_webhook_event_id, 'webhook_provider', 'sw', 'external_id', 'msg_1'),
                  'webhook:sw'::text, 'user:webhook:sw'::text, '2026-11-30T06:00:00Z'::timestamptz),
              'the message: provider''s stage and tube, pending, state names the event, sender webhook:<provider>');
select row_eq(format($$select b.headers, b.body from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
                        where w.workqueue_id = %s$$, :first_workqueue_id),
              row(E'content-type: application/json\r\nwebhook-id: msg_1\r\n'::text, '{"v":1}'::bytea),
              'the message''s body is the payload, its header block the headers');

-- Redelivery before processing (W-11) --------------------------------------------

select pg_temp.writes_mark();
select webhook_event_id, outcome, coalesce(workqueue_id::text, 'none') as workqueue_id
  from pepsi.webhook_events_ingest(
    '[{"provider": "sw", "external_id": "msg_1", "payload_length": 7, "received_at": "2026-11-30T06:05:00Z"}]',
    '{"v":2}'::bytea) \gset again_
select is(pg_temp.writes_since(), 'webhook_events:+0~1-0',
          'W-09, W-11: a redelivery before processing is one UPDATE of the stored row (the upsert''s DO UPDATE), nothing else');
select is(:'again_outcome'::text, 'refreshed'::text, 'W-11: a redelivery before processing: outcome refreshed');
select is(:'again_webhook_event_id'::text, :'first_webhook_event_id'::text, 'W-11: the same row');
select row_eq($$select payload, received_at, headers from pepsi.webhook_events where external_id = 'msg_1'$$,
              row('{"v":2}'::bytea, '2026-11-30T06:05:00Z'::timestamptz, '{}'::jsonb),
              'W-11: payload and received_at updated (and the headers that came with them)');
select is(:'again_workqueue_id'::text, 'none'::text, 'W-11: no second message');
select is((select count(*)::int from pepsi.workqueue where state->>'external_id' = 'msg_1'), 1, 'W-11, W-13: still exactly one message');

-- Redelivery after processing (W-12) ---------------------------------------------

update pepsi.workqueue set status = 'running' where workqueue_id = :first_workqueue_id;
select pepsi.workqueue_finish(:first_workqueue_id, 'deliver');
select processed_at as done_at from pepsi.webhook_events where external_id = 'msg_1' \gset
select isnt(:'done_at'::text, ''::text, 'W-18: processed once its message finished');
select pg_temp.writes_mark();
select * from pepsi.webhook_event_ingest('sw', 'msg_1', '{"v":3}'::bytea, '{"x": "y"}', '2026-11-30T07:00:00Z') \gset late_
select is(pg_temp.writes_since(), 'nothing',
          'W-09, W-12: after processing, the upsert''s WHERE processed_at IS NULL leaves the row alone: not even a no-op update');
select is(:'late_outcome'::text, 'processed'::text, 'W-12: a redelivery after processing: outcome processed');
select is(:'late_webhook_event_id'::text, :'first_webhook_event_id'::text, 'W-12: it names the stored event');
select row_eq($$select payload, received_at, headers, processed_at from pepsi.webhook_events where external_id = 'msg_1'$$,
              row('{"v":2}'::bytea, '2026-11-30T06:05:00Z'::timestamptz, '{}'::jsonb, :'done_at'::timestamptz),
              'W-12: nothing changed');
select is((select count(*)::int from pepsi.workqueue where state->>'external_id' = 'msg_1'), 0, 'W-12: no new message');

-- A burst: new, repeated within the burst, known; payload slices ------------------

select pepsi.webhook_event_ingest('sw', 'msg_2', 'two'::bytea);
select is((select array_agg(outcome order by ord) from pepsi.webhook_events_ingest(
              '[{"provider": "sw", "external_id": "msg_3", "payload_length": 3},
                {"provider": "sw", "external_id": "msg_4", "payload_length": 4},
                {"provider": "sw", "external_id": "msg_3", "payload_length": 5},
                {"provider": "sw", "external_id": "msg_2", "payload_length": 0},
                {"provider": "gh", "external_id": "msg_3", "payload": "github"},
                {"provider": "sw", "external_id": "msg_1", "payload": "late"}]',
              'aaabbbbccccc'::bytea)),
          '{repeated,new,new,refreshed,new,processed}'::text[],
          'W-09, W-13: one burst: a key twice is written once (the later delivery), known keys refresh or stay');
select is((select convert_from(payload, 'UTF8') from pepsi.webhook_events where provider = 'sw' and external_id = 'msg_3'), 'ccccc',
          'the later delivery of a key repeated in the burst wins');
select is((select convert_from(payload, 'UTF8') from pepsi.webhook_events where provider = 'sw' and external_id = 'msg_4'), 'bbbb',
          'payload_length slices p_payloads in order');
select is((select payload from pepsi.webhook_events where provider = 'sw' and external_id = 'msg_2'), ''::bytea,
          'an empty payload is a payload');
select is((select count(*)::int from pepsi.webhook_events where external_id = 'msg_3'), 2,
          'W-08: the same external id from two providers is two events');
select is((select count(*)::int from pepsi.workqueue where state->>'webhook_provider' = 'sw'), 3,
          'messages: one per new sw event (msg_2, msg_3, msg_4)');
select is((select count(*)::int from pepsi.workqueue where state->>'webhook_provider' = 'gh'), 0,
          'W-15: a pulled provider''s events make no message');

-- Refusals: nothing is written ------------------------------------------------------

select count(*) as events1 from pepsi.webhook_events \gset
select throws_ok($$select * from pepsi.webhook_events_ingest('{}')$$, 'PX003', null, 'PX003: events must be an array');
select throws_ok($$select * from pepsi.webhook_events_ingest('[1]')$$, 'PX003', null, 'PX003: each event must be an object');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": "n1", "payload_length": 3}]', 'ab')$$,
                 'PX003', null, 'PX003: payload lengths that do not add up');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "nobody", "external_id": "n1", "payload": "x"}]')$$,
                 'PX011', null, 'PX011: an unknown provider');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": "", "payload": "x"}]')$$,
                 'PX012', null, 'PX012: an empty external id');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": 17, "payload": "x"}]')$$,
                 'PX012', null, 'PX012: an external id that is not a string');
select throws_ok(format($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": "%s", "payload": "x"}]')$$,
                        repeat('x', 1025)),
                 'PX012', null, 'PX012: an external id over 1024 bytes');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": "n1"}]')$$,
                 'PX012', null, 'PX012: no payload');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "sw", "external_id": "n1", "payload": "x"},
                                                               {"provider": "sw", "external_id": "n2", "payload": "x", "headers": []}]')$$,
                 'PX012', null, 'PX012: one bad event rejects the whole burst');
select is((select count(*) from pepsi.webhook_events), :events1::bigint, 'after the refusals nothing was written');

-- Grants ---------------------------------------------------------------------------

select ok(has_function_privilege('pepsi_ingress', 'pepsi.webhook_events_ingest(jsonb, bytea)', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.webhook_events_ingest(jsonb, bytea)', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.webhook_events_ingest(jsonb, bytea)', 'execute')
          and not has_function_privilege('public', 'pepsi.webhook_events_ingest(jsonb, bytea)', 'execute'),
          'only pepsi_ingress may store events');
set local role pepsi_ingress;
select is((select outcome from pepsi.webhook_event_ingest('sw', 'as-ingress', 'x'::bytea)), 'new',
          'pepsi_ingress: webhook_event_ingest runs (and queues the message)');
select throws_ok($$select count(*) from pepsi.webhook_events$$, '42501', null, 'pepsi_ingress: reading events directly is denied');
reset role;

select * from finish();
rollback;
