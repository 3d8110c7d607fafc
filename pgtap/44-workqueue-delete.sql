-- pepsi.workqueue_delete (issue 12): an operator deletes messages on
-- purpose and leaves a tombstone; reconciliation does not re-inject the
-- webhook event of a tombstoned message (a message deleted by a plain
-- DELETE still is: it cannot be told from a loss), and the anomaly checks
-- do not count it as lost or waiting. Refusals leave everything as it was.

begin;
select plan(27);

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver', 'hooks');
select webhook_event_id as ev_gone, workqueue_id as msg_gone
  from pepsi.webhook_event_ingest('acme', 'gone_1', 'test event'::bytea, '{}', now() - interval '1 hour') \gset
select webhook_event_id as ev_lost, workqueue_id as msg_lost
  from pepsi.webhook_event_ingest('acme', 'lost_1', 'lost'::bytea, '{}', now() - interval '1 hour') \gset
select pepsi.workqueue_inject('plain', p_body => 'plain body'::bytea) as msg_plain \gset
select body_id as plain_body from pepsi.workqueue where workqueue_id = :msg_plain \gset
select pepsi.workqueue_inject('plain') as msg_running \gset
update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = :msg_running;

-- Refusals: all or nothing ------------------------------------------------------------

select throws_ok(format($$select pepsi.workqueue_delete(array[%s, 999999999], 'x')$$, :msg_gone), 'PX004',
                 'unknown message id 999999999', 'PX004: an unknown id names it');
select throws_ok(format($$select pepsi.workqueue_delete(array[%s, %s], 'x')$$, :msg_gone, :msg_running), 'PX005',
                 format('message %s is running; its worker owns it', :msg_running), 'PX005: a running message is refused');
select throws_ok(format($$select pepsi.workqueue_delete(array[%s], '  ')$$, :msg_gone), 'PX003', null,
                 'PX003: a deletion needs a reason');
select throws_ok($$select pepsi.workqueue_delete('{}', 'x')$$, 'PX003', null, 'PX003: no ids');
select throws_ok($$select pepsi.workqueue_delete(array[1, null], 'x')$$, 'PX003', null, 'PX003: a NULL id');
select is((select count(*)::int from pepsi.workqueue where workqueue_id in (:msg_gone, :msg_running)), 2,
          'a refused call deleted nothing');
select is((select count(*)::int from pepsi.workqueue_tombstones), 0, 'and left no tombstone');
delete from pepsi.workqueue where workqueue_id = :msg_running;   -- (it would be stuck by the passes below)

-- Deleting on purpose --------------------------------------------------------------------

select is(pepsi.workqueue_delete(array[:msg_gone, :msg_plain], 'test event, not for delivery',
                                 '2026-11-30T08:00:00Z'), 2, 'issue 12: workqueue_delete deletes and says how many');
select is((select count(*)::int from pepsi.workqueue where workqueue_id in (:msg_gone, :msg_plain)), 0, 'the rows are gone');
select is((select count(*)::int from pepsi.workqueue_body where body_id = :plain_body), 0,
          'with the body no sibling refers to (D-144)');
select is((select string_agg(concat_ws('|', t.workqueue_id, t.stage, t.status, t.tube, coalesce(t.webhook_event_id::text, '-'),
                                        t.reason, t.deleted_by = session_user, t.deleted_at = '2026-11-30T08:00:00Z'),
                              ' / ' order by t.workqueue_id)
             from pepsi.workqueue_tombstones t),
          format('%s|deliver|pending|hooks|%s|test event, not for delivery|t|t / '
                 '%s|plain|pending|default|-|test event, not for delivery|t|t', :msg_gone, :ev_gone, :msg_plain),
          'issue 12: a tombstone per message: what it was, its webhook event, why, who, when');
select is((select processed_at from pepsi.webhook_events where webhook_event_id = :ev_gone), null,
          'the event stays unprocessed: it was never delivered');

-- The other message is deleted by hand: a loss, as far as anyone can tell.
delete from pepsi.workqueue where workqueue_id = :msg_lost;

-- Reconciliation --------------------------------------------------------------------------

select pepsi.anomaly_refresh();
select is((select found from pepsi.anomaly_orphan_mv where kind = 'unprocessed_events_without_message')::int, 1,
          'issue 12: the anomaly check counts the lost event only, not the tombstoned one');
select is((select example from pepsi.anomaly_orphan_mv where kind = 'unprocessed_events_without_message'), 'event ' || :ev_lost,
          'and names it');
select run_id as r1 from pepsi.reconcile() \gset
select is((select count(*)::int from pepsi.reconcile_findings where run_id = :r1 and kind = 'lost_message'
              and webhook_event_id = :ev_lost and action = 'reinjected'), 1,
          'W-21: the event whose message was deleted by hand is re-injected');
select is((select count(*)::int from pepsi.reconcile_findings where webhook_event_id = :ev_gone or object = 'event:' || :ev_gone), 0,
          'issue 12: the tombstoned one is not: no finding at all');
select is((select count(*)::int from pepsi.workqueue where webhook_event_id = :ev_gone), 0,
          'issue 12: and no message made for it');
select is((select findings from pepsi.reconcile()), 0, 'W-28: the next pass finds nothing either');

select pepsi.anomaly_refresh();
select is((select e.state from pepsi.anomaly_evaluate('unprocessed_events_without_message', now()) e), 'ok',
          'issue 12: unprocessed_events_without_message is silent');
select is((select unprocessed from pepsi.anomaly_event_mv where provider = 'acme')::int, 1,
          'issue 12: the tombstoned event is not counted as waiting (only the re-injected one is)');
select is((select e.state from pepsi.anomaly_evaluate('oldest_unprocessed_event', now() + interval '30 minutes') e), 'firing',
          'oldest_unprocessed_event still sees the re-injected event waiting');
delete from pepsi.workqueue where webhook_event_id = :ev_lost;
update pepsi.webhook_events set processed_at = now() where webhook_event_id = :ev_lost;
select pepsi.anomaly_refresh();
select is((select e.state from pepsi.anomaly_evaluate('oldest_unprocessed_event', now() + interval '30 minutes') e), 'ok',
          'issue 12: with the other event processed, the tombstoned one does not make it fire');

-- A redelivery of a tombstoned event makes no message either.
select is((select outcome || '/' || coalesce(workqueue_id::text, 'none')
             from pepsi.webhook_event_ingest('acme', 'gone_1', 'again'::bytea)), 'refreshed/none',
          'a redelivery of the event refreshes its payload and makes no message');
select is((select findings from pepsi.reconcile(now() + interval '1 hour')), 0,
          'and a pass after lost_after still leaves it alone');

-- Taking it back: the tombstone removed, the next pass re-injects the
-- event (once lost_after has passed since the redelivery above).
delete from pepsi.workqueue_tombstones where webhook_event_id = :ev_gone;
select run_id as r2 from pepsi.reconcile(now() + interval '1 hour') \gset
select is((select count(*)::int from pepsi.reconcile_findings where run_id = :r2 and kind = 'lost_message'
              and webhook_event_id = :ev_gone), 1,
          'issue 12: without its tombstone the event is lost again and re-injected');

select ok(not has_function_privilege('pepsi_runner', 'pepsi.workqueue_delete(bigint[], text, timestamptz)', 'execute')
          and not has_function_privilege('pepsi_reader', 'pepsi.workqueue_delete(bigint[], text, timestamptz)', 'execute'),
          'only operators (the schema owner) delete');
select ok(has_table_privilege('pepsi_reader', 'pepsi.workqueue_tombstones', 'select'), 'dashboards may read the tombstones');

select * from finish();
rollback;
