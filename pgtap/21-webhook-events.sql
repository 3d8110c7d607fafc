-- webhook_events (W-07, W-08) and how a finished message marks its event
-- processed (W-18): the trigger workqueue_webhook_finished.

begin;
select plan(21);

select has_table('pepsi', 'webhook_events', 'W-07: table webhook_events exists');
select columns_are('pepsi', 'webhook_events',
                   array['webhook_event_id', 'provider', 'external_id', 'payload', 'headers', 'received_at', 'processed_at',
                         'processed_digest'],
                   'W-07: external_id, provider, payload, received_at, processed_at (plus id, headers and, from reconcile, processed_digest)');
select col_not_null('pepsi', 'webhook_events', 'external_id', 'W-07: external_id is not null');
select col_is_null('pepsi', 'webhook_events', 'processed_at', 'W-07: processed_at is NULL until processed');
select col_is_unique('pepsi', 'webhook_events', array['provider', 'external_id'],
                     'W-08: (provider, external_id) is unique: the ON CONFLICT target');
select has_index('pepsi', 'webhook_events', 'webhook_events_unprocessed_idx', array['provider', 'received_at'],
                 'W-15: the pull''s partial index on unprocessed events');
select has_trigger('pepsi', 'workqueue', 'workqueue_webhook_finished', 'W-18: workqueue has the finish trigger');
select ok((select prosecdef from pg_proc where oid = 'pepsi.webhook_event_finished()'::regprocedure),
          'W-18: the trigger function is security definer (a worker''s finish marks an event it cannot update)');

select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver');
select webhook_event_id as ev1, workqueue_id as msg1
  from pepsi.webhook_event_ingest('sw', 'evt-1', '{"n":1}'::bytea) \gset
select webhook_event_id as ev2, workqueue_id as msg2
  from pepsi.webhook_event_ingest('sw', 'evt-2', '{"n":2}'::bytea) \gset
select webhook_event_id as ev3, workqueue_id as msg3
  from pepsi.webhook_event_ingest('sw', 'evt-3', '{"n":3}'::bytea) \gset

select throws_ok($$insert into pepsi.webhook_events (provider, external_id, payload) values ('sw', 'evt-1', '')$$,
                 '23505', null, 'W-08, W-13: a second row for the same (provider, external_id) is impossible');
select throws_ok($$insert into pepsi.webhook_events (provider, external_id, payload) values ('sw', '', '')$$,
                 '23514', null, 'an empty external id is refused');

-- A running message that finishes marks its event processed.
update pepsi.workqueue set status = 'running' where workqueue_id = :msg1;
select pepsi.workqueue_finish(:msg1, 'deliver');
select isnt((select processed_at from pepsi.webhook_events where webhook_event_id = :ev1), null,
            'W-18: the finish of the event''s message sets processed_at');
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev1), now(),
          'W-18: processed_at is the finishing transaction''s time');
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev2), null,
          'W-18: the other events are untouched');

-- Whatever stage finishes it: advance to another stage, finish there.
update pepsi.workqueue set status = 'running' where workqueue_id = :msg2;
select pepsi.workqueue_advance(:msg2, 'deliver', 'archive') as advanced \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :msg2;
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev2), null,
          'W-18: an advance does not mark the event');
select pepsi.workqueue_finish(:msg2, 'archive');
select isnt((select processed_at from pepsi.webhook_events where webhook_event_id = :ev2), null,
            'W-18: the finish at a later stage marks it');

-- A failed message deleted by an operator has not reached its destination.
update pepsi.workqueue set status = 'running' where workqueue_id = :msg3;
select pepsi.workqueue_fail(:msg3, 'deliver', 'HTTP 400');
delete from pepsi.workqueue where workqueue_id = :msg3;
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev3), null,
          'W-18, W-21: deleting a failed message leaves its event unprocessed (reconciliation finds it)');

-- Messages that are not webhook events are not affected.
select pepsi.workqueue_inject('deliver', p_state => '{"webhook_event": "not a number"}') as odd \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :odd;
select lives_ok(format('select pepsi.workqueue_finish(%s, %L)', :odd, 'deliver'),
                'a message whose state.webhook_event is not an id finishes normally');
-- issue 13: the link is webhook_event_id, set only by the functions that
-- make a message from an event. A producer's state naming an event links
-- nothing: its finish does not mark that event.
select webhook_event_id as ev4, workqueue_id as msg4
  from pepsi.webhook_event_ingest('sw', 'evt-4', '{"n":4}'::bytea) \gset
select pepsi.workqueue_inject('deliver', p_state => format('{"webhook_event": %s}', :ev4)::jsonb) as forged \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :forged;
select pepsi.workqueue_finish(:forged, 'deliver');
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev4), null,
          'issue 13: a message whose state names an event, without the link, does not mark it');
-- The event's own message marks it, whatever its state says by then.
update pepsi.workqueue set status = 'running', state = state - 'webhook_event' where workqueue_id = :msg4;
select pepsi.workqueue_finish(:msg4, 'deliver');
select isnt((select processed_at from pepsi.webhook_events where webhook_event_id = :ev4), null,
            'issue 13: the message linked by webhook_event_id marks its event, even with state.webhook_event gone');
select pepsi.workqueue_inject('deliver') as plain \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :plain;
select lives_ok(format('select pepsi.workqueue_finish(%s, %L)', :plain, 'deliver'), 'a plain message finishes normally');

select ok(has_table_privilege('pepsi_worker', 'pepsi.webhook_events', 'select')
          and not has_table_privilege('pepsi_worker', 'pepsi.webhook_events', 'update')
          and not has_table_privilege('pepsi_reader', 'pepsi.webhook_events', 'select')
          and not has_table_privilege('pepsi_ingress', 'pepsi.webhook_events', 'insert'),
          'stage programs read events; nobody writes them but through functions');

select * from finish();
rollback;
