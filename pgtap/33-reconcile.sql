-- pepsi.reconcile(): each kind of finding, repaired or flagged, recorded
-- once while open and cleared when gone; the downstream-state digest
-- (W-22); the lock it holds; the settings. Two passes from two sessions
-- (W-27) are tested end to end (runner/tests/e2e/recon-lock.t).

begin;
select plan(55);

select has_function('pepsi', 'reconcile', array['timestamp with time zone', 'text', 'jsonb', 'boolean'],
                    'W-20: reconcile(now, trigger, limits, if_changed) exists');
select ok(has_function_privilege('pepsi_runner', 'pepsi.reconcile(timestamptz, text, jsonb, boolean)', 'execute'),
          'the runner may run passes');
select throws_ok($$select * from pepsi.reconcile(null)$$, 'PX003', null, 'PX003: no clock');
select throws_ok($$select * from pepsi.reconcile(now(), 'cron')$$, 'PX003', null, 'PX003: an unknown trigger');
select throws_ok($$select * from pepsi.reconcile(now(), 'manual', '{"a": 5}')$$, 'PX003', null, 'PX003: limits of the wrong shape');

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver', 'hooks');
select pepsi.webhook_provider_add('pull', 'github', '{s}');

-- Idle means idle (D-139, issue 12): a scheduled pass over unchanged data
-- is skipped without a write; a message running is reason enough to look.
select results_eq($$select ran, findings, unchanged from pepsi.reconcile(now(), 'schedule', null, true)$$,
                  $$values (true, 0, false)$$, 'the first pass runs');
select is((select count(*)::int from pepsi.reconcile_runs), 1, 'and is recorded');
select results_eq($$select ran, run_id, findings, unchanged from pepsi.reconcile(now(), 'schedule', null, true)$$,
                  $$values (false, null::bigint, 0, true)$$, 'D-139: the next one over unchanged data is skipped');
select is((select count(*)::int from pepsi.reconcile_runs), 1, 'D-139: without writing a run');
select ok(pepsi.reconcile_unchanged(), 'reconcile_unchanged says so');
select pepsi.workqueue_inject('r') as running_id \gset
update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = :running_id;
select ok(not pepsi.reconcile_unchanged(), 'a running message makes a pass worth running (it may become stuck by time alone)');
select results_eq($$select ran, unchanged from pepsi.reconcile(now(), 'schedule', null, true)$$,
                  $$values (true, false)$$, 'so it runs');
select results_eq($$select ran, unchanged from pepsi.reconcile(now(), 'manual')$$, $$values (true, false)$$,
                  'a pass without p_if_changed always runs');
delete from pepsi.workqueue where workqueue_id = :running_id;
delete from pepsi.reconcile_runs;

-- A healthy pass finds nothing.
select pepsi.webhook_event_ingest('acme', 'ok_1', 'fine'::bytea, '{}', now() - interval '1 hour');
select results_eq($$select ran, findings from pepsi.reconcile(now(), 'schedule')$$, $$values (true, 0)$$,
                  'W-20: a pass over a healthy queue runs and finds nothing');
select row_eq($$select trigger, started_at, findings, finished_at is not null, duration_ms >= 0
                 from pepsi.reconcile_runs order by run_id desc limit 1$$,
              row('schedule'::text, now(), 0, true, true), 'the run is recorded with its trigger, time, duration and findings');
select is((select count(*)::int from pg_locks where locktype = 'advisory' and classid = 1885696115
              and objid = 4294967295 and pid = pg_backend_pid() and granted), 1,
          'W-26: the pass''s lock (1885696115, -1) is held until the transaction ends');

-- Lost message (W-21): its workqueue row deleted by hand.
select webhook_event_id as lost_ev from pepsi.webhook_event_ingest('acme', 'lost_1', 'payload one'::bytea,
                                                                    '{"content-type": "text/plain"}', now() - interval '1 hour') \gset
delete from pepsi.workqueue where state->>'external_id' = 'lost_1';
-- One received a moment ago is not lost yet (lost_after, 5 minutes).
select webhook_event_id as young_ev from pepsi.webhook_event_ingest('acme', 'young_1', 'y'::bytea, '{}', now() - interval '1 minute') \gset
delete from pepsi.workqueue where state->>'external_id' = 'young_1';

select run_id as r1 from pepsi.reconcile() \gset
select row_eq(format($$select kind, object, action, webhook_event_id, resolved_at is not null, resolution
                        from pepsi.reconcile_findings where run_id = %s and kind = 'lost_message'$$, :r1),
              row('lost_message'::text, 'event:' || :lost_ev, 'reinjected'::text, :lost_ev::bigint, true, 'repaired'::text),
              'W-21: a lost message is found and re-injected (repaired)');
select row_eq($$select w.stage, w.tube, w.status::text, w.state->>'webhook_event', w.origin_user, b.body, b.headers
                 from pepsi.workqueue w join pepsi.workqueue_body b using (body_id) where w.state->>'external_id' = 'lost_1'$$,
              row('deliver'::text, 'hooks'::text, 'pending'::text, :lost_ev::text, 'webhook:acme'::text,
                  'payload one'::bytea, E'content-type: text/plain\r\n'::text),
              'W-21: the new message is the ingest''s: stage, tube, body = payload, header block, state naming the event');
select is((select count(*)::int from pepsi.reconcile_findings where object = 'event:' || :young_ev), 0,
          'an event younger than lost_after is left alone');
select is((select findings from pepsi.reconcile()), 0, 'W-28: the next pass finds nothing new: the event has its message');

-- Exactly once: the re-injected message finishes, the event is processed once.
update pepsi.workqueue set status = 'running' where state->>'external_id' = 'lost_1';
select pepsi.workqueue_finish(workqueue_id, 'deliver') from pepsi.workqueue where state->>'external_id' = 'lost_1';
select isnt((select processed_at from pepsi.webhook_events where webhook_event_id = :lost_ev), null,
            'W-21: the re-injected message''s finish marks the event processed');
select is((select findings from pepsi.reconcile()), 0, 'and no pass re-injects it again');

-- Stuck running and paused.
select pepsi.workqueue_inject('slow', p_state => '{"n": 1}') as stuck_a \gset
select pepsi.workqueue_inject('fast', p_state => '{"n": 2}') as stuck_b \gset
select pepsi.workqueue_inject('fast', p_state => '{"n": 3}') as fresh \gset
select pepsi.workqueue_inject('other', p_state => '{"n": 4}') as napping \gset
select pepsi.workqueue_inject('other', p_state => '{"n": 5}') as dozing \gset
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '40 minutes' where workqueue_id in (:stuck_a, :stuck_b);
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '1 minute' where workqueue_id = :fresh;
update pepsi.workqueue set status = 'paused', timeout = now() - interval '1 hour' where workqueue_id = :napping;
update pepsi.workqueue set status = 'paused', timeout = now() - interval '1 minute' where workqueue_id = :dozing;
-- slow: MAX_RUNTIME 1 h, so 40 minutes is fine; fast: 1 minute x (QUEUE_LIMIT 4 + 1) + 5 min margin = 10 minutes.
select run_id as r2 from pepsi.reconcile(now(), 'notify', '{"slow": {"max_runtime_ms": 3600000, "queue_limit": 4},
                                                             "fast": {"max_runtime_ms": 60000, "queue_limit": 4}}') \gset
select results_eq(format($$select kind, workqueue_id, action from pepsi.reconcile_findings where run_id = %s order by kind, workqueue_id$$, :r2),
                  format($$values ('stuck_paused'::text, %s::bigint, 'released'::text), ('stuck_running', %s, 'requeued')$$, :napping, :stuck_b),
                  'stuck past the stage''s limit: requeued; paused past its timeout + grace: released');
select results_eq(format($$select workqueue_id, status::text from pepsi.workqueue where workqueue_id in (%s, %s, %s, %s, %s) order by 1$$,
                         :stuck_a, :stuck_b, :fresh, :napping, :dozing),
                  format($$values (%s::bigint, 'running'::text), (%s, 'pending'), (%s, 'running'), (%s, 'pending'), (%s, 'paused')$$,
                         :stuck_a, :stuck_b, :fresh, :napping, :dozing),
                  'only those moved: a long stage''s message, a fresh claim and a paused row just due stay');
select matches((select state->>'last_error' from pepsi.workqueue where workqueue_id = :stuck_b), 'reconcile: running since .*past its stage limit',
     'the requeued message says why');
select is((select count(*)::int from pepsi.reconcile_findings where kind = 'stuck_running'), 1,
          'without limits, the default (10 minutes x 5 + 5) spares the 40-minute claim');
update pepsi.workqueue set claimed_at = now() - interval '2 hours' where workqueue_id = :stuck_a;
select pepsi.reconcile();
select is((select count(*)::int from pepsi.reconcile_findings where kind = 'stuck_running'), 2,
          'and catches a claim older than 55 minutes');

-- Flagged kinds: message_failed, message_without_event, processed_with_message, unprocessed_stale.
select webhook_event_id as failed_ev from pepsi.webhook_event_ingest('acme', 'fail_1', 'f'::bytea, '{}', now() - interval '1 hour') \gset
update pepsi.workqueue set status = 'failed', state = state || '{"last_error": "HTTP 400"}' where state->>'external_id' = 'fail_1';
select pepsi.workqueue_inject('deliver', p_state => '{"webhook_event": 987654321}') as orphan \gset
-- The link is the column (issue 13): a message naming an event that is
-- not stored, as a bug or a manual DELETE of the event would leave it.
update pepsi.workqueue set webhook_event_id = 987654321 where workqueue_id = :orphan;
select webhook_event_id as double_ev from pepsi.webhook_event_ingest('acme', 'double_1', 'd'::bytea, '{}', now() - interval '1 hour') \gset
select pepsi.webhook_events_mark_processed(array[:double_ev]::bigint[]);
select webhook_event_id as stale_ev from pepsi.webhook_event_ingest('pull', 'p_1', 'p'::bytea, '{}', now() - interval '2 hours') \gset
select pepsi.webhook_event_ingest('pull', 'p_2', 'p'::bytea, '{}', now() - interval '10 minutes');

select run_id as r3 from pepsi.reconcile() \gset
select results_eq(format($$select kind, object, action, resolved_at is null from pepsi.reconcile_findings where run_id = %s order by kind$$, :r3),
                  format($$values ('message_failed'::text, 'event:%s'::text, 'flagged'::text, true),
                                  ('message_without_event', 'message:%s', 'flagged', true),
                                  ('processed_with_message', 'event:%s', 'flagged', true),
                                  ('unprocessed_stale', 'event:%s', 'flagged', true)$$, :failed_ev, :orphan, :double_ev, :stale_ev),
                  'W-21: failed message, message without event, processed event with a message, stale pulled event: flagged and open');
select is((select detail->>'last_error' from pepsi.reconcile_findings where kind = 'message_failed'), 'HTTP 400',
          'the finding keeps the message''s last error');
select is((select findings from pepsi.reconcile()), 0, 'an open finding is not recorded again by the next pass');
select is((select count(*)::int from pepsi.reconcile_open where action = 'flagged'), 4, 'pepsi.reconcile_open lists them');

-- Conditions gone: the findings are cleared.
select pepsi.workqueue_resume(p_ids => array[(select workqueue_id from pepsi.workqueue where state->>'external_id' = 'fail_1')]);
delete from pepsi.workqueue where workqueue_id = :orphan;
select pepsi.webhook_events_mark_processed(array[:stale_ev]::bigint[]);
select pepsi.reconcile();
select results_eq($$select kind, resolution from pepsi.reconcile_findings where action = 'flagged' and resolved_at is not null order by kind$$,
                  $$values ('message_failed'::text, 'cleared'::text), ('message_without_event', 'cleared'), ('unprocessed_stale', 'cleared')$$,
                  'W-28: what a later pass no longer finds is cleared');

-- The downstream-state check (W-22).
select webhook_event_id as dig_ev, workqueue_id as dig_msg
  from pepsi.webhook_event_ingest('acme', 'dig_1', 'version 1'::bytea, '{}', now() - interval '1 hour') \gset
-- A redelivery refreshes the payload, but the message was made with version 1.
select pepsi.webhook_event_ingest('acme', 'dig_1', 'version 2'::bytea, '{}', now() - interval '50 minutes');
update pepsi.workqueue set status = 'running' where workqueue_id = :dig_msg;
select pepsi.workqueue_finish(:dig_msg, 'deliver');
select is((select processed_digest from pepsi.webhook_events where webhook_event_id = :dig_ev), sha256('version 1'::bytea),
          'W-22: processed_digest is the SHA-256 of the body the destination received');
select webhook_event_id as ok_ev, workqueue_id as ok_msg from pepsi.webhook_event_ingest('acme', 'dig_2', 'same'::bytea) \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :ok_msg;
select pepsi.workqueue_finish(:ok_msg, 'deliver');
select is((select processed_digest from pepsi.webhook_events where webhook_event_id = :ok_ev), sha256('same'::bytea),
          'W-22: for an unchanged event it is the payload''s digest');
select is((select processed_digest from pepsi.webhook_events where webhook_event_id = :stale_ev), sha256('p'::bytea),
          'W-22: a pulled event marked processed: the payload''s digest (the puller read the row)');
select run_id as r4 from pepsi.reconcile() \gset
select results_eq(format($$select kind, object, detail->>'delivered_sha256', detail->>'stored_sha256'
                           from pepsi.reconcile_findings where run_id = %s$$, :r4),
                  format($$values ('payload_mismatch'::text, 'event:%s'::text, %L::text, %L::text)$$, :dig_ev,
                         encode(sha256('version 1'::bytea), 'hex'), encode(sha256('version 2'::bytea), 'hex')),
                  'W-22: the destination got version 1, the row says version 2: payload_mismatch, flagged');
update pepsi.webhook_events set payload = 'same, changed later' where webhook_event_id = :ok_ev;
select run_id as r5 from pepsi.reconcile() \gset
select results_eq(format($$select kind, object from pepsi.reconcile_findings where run_id = %s$$, :r5),
                  format($$values ('payload_mismatch'::text, 'event:%s'::text)$$, :ok_ev),
                  'W-22: a processed payload changed afterwards: payload_mismatch');
update pepsi.webhook_events set payload = 'same' where webhook_event_id = :ok_ev;
select pepsi.reconcile();
select is((select resolution from pepsi.reconcile_findings where object = 'event:' || :ok_ev and kind = 'payload_mismatch'), 'cleared',
          'W-22: put back, the mismatch is cleared');
-- The digest check reads a rolling batch.
select pepsi.reconcile_configure('{"digest_batch": 2}');
update pepsi.reconcile_settings set digest_cursor = 0;
select pepsi.reconcile();
select isnt((select digest_cursor from pepsi.reconcile_settings), 0::bigint, 'W-22: a batch of 2 moves the cursor');
select pepsi.reconcile();
select pepsi.reconcile();
select is((select digest_cursor from pepsi.reconcile_settings), 0::bigint, 'and wraps around at the end of the table');

-- Settings.
select pepsi.reconcile_configure('{"lost_after": "30 seconds", "batch_limit": 50}');
select row_eq($$select lost_after, batch_limit, stale_after from pepsi.reconcile_settings$$,
              row(interval '30 seconds', 50, interval '1 hour'), 'reconcile_configure changes the keys given, keeps the others');
select throws_ok($$select pepsi.reconcile_configure('{"lost_after": "soon"}')$$, 'PX003', null, 'PX003: not an interval');
select throws_ok($$select pepsi.reconcile_configure('{"batch_limit": 0}')$$, 'PX003', null, 'PX003: out of range');
select throws_ok($$select pepsi.reconcile_configure('{"colour": "red"}')$$, 'PX003', null, 'PX003: unknown key');
select throws_ok($$select pepsi.reconcile_configure('[]')$$, 'PX003', null, 'PX003: not an object');
select pepsi.webhook_event_ingest('acme', 'young_2', 'y'::bytea, '{}', now() - interval '1 minute');
delete from pepsi.workqueue where state->>'external_id' = 'young_2';
select pepsi.reconcile();
select is((select action from pepsi.reconcile_findings where external_id = 'young_2'), 'reinjected',
          'with lost_after 30 seconds, a minute-old event without message is lost');

-- Gaps and back-fill go through the pass (details: 31-gaps, 32-backfill).
select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'g_', 2, p_retry_after => '0', p_backfill_stage => 'backfill');
select count(*) from (select pepsi.webhook_event_ingest('acme', 'g_' || lpad(n::text, 2, '0'), 'x'::bytea)
                        from generate_series(1, 9) n where n <> 4) x;
select pepsi.reconcile(now() + interval '1 minute');
select run_id as r6 from pepsi.reconcile(now() + interval '2 minutes') \gset
select results_eq(format($$select kind, object, action from pepsi.reconcile_findings where run_id = %s$$, :r6),
                  $$values ('gap'::text, 'acme/g_04'::text, 'recorded'::text)$$,
                  'W-29: a pass records a gap');
select run_id as r7 from pepsi.reconcile(now() + interval '3 minutes') \gset
select results_eq(format($$select kind, object, action from pepsi.reconcile_findings where run_id = %s$$, :r7),
                  $$values ('backfill'::text, 'acme/g_04'::text, 'backfill_requested'::text)$$,
                  'W-33: the next pass requests its back-fill');
select pepsi.webhook_event_ingest('acme', 'g_04', 'x'::bytea);
select pepsi.reconcile(now() + interval '4 minutes');
select results_eq($$select kind, resolution from pepsi.reconcile_findings where object = 'acme/g_04' order by kind$$,
                  $$values ('backfill'::text, 'arrived'::text), ('gap', 'arrived')$$,
                  'once the gap is resolved, its findings are resolved with the outcome');

-- Retention.
select count(*)::int as before_n from pepsi.reconcile_findings where resolved_at is not null \gset
select pepsi.reconcile(now() + interval '31 days');
select cmp_ok((select count(*)::int from pepsi.reconcile_findings where resolved_at < now()), '=', 0,
              'findings resolved longer ago than the retention are forgotten');
select cmp_ok(:before_n, '>', 0, 'there were some');
select is((select count(*)::int from pepsi.reconcile_findings
            where resolved_at is null and kind in ('processed_with_message', 'payload_mismatch')), 2,
          'open findings are kept however old');
select ok(not exists (select 1 from pepsi.reconcile_runs r where r.started_at < now()
                       and not exists (select 1 from pepsi.reconcile_findings f where f.run_id = r.run_id)),
          'runs older than the retention without findings are forgotten');

-- Issue 14: workqueue_paused_idx leads with the owner slot, so the stuck
-- paused step reads each slot's overdue range, not every paused row: with
-- 20,000 paused rows due in an hour and 3 overdue, a run touches a handful
-- of index blocks (an unbounded read of the index takes dozens).
delete from pepsi.workqueue;
insert into pepsi.workqueue (stage, status, timeout)
select 'other', 'paused', now() + interval '1 hour' from generate_series(1, 20000);
insert into pepsi.workqueue (stage, status, timeout)
select 'other', 'paused', now() - interval '1 hour' from generate_series(1, 3);
select pg_stat_get_xact_blocks_fetched('pepsi.workqueue_paused_idx'::regclass) as paused_blocks \gset
select run_id as r_slot from pepsi.reconcile(now(), 'manual', '{}') \gset
select is((select count(*) from pepsi.reconcile_findings where run_id = :r_slot and kind = 'stuck_paused'), 3::bigint,
          'issue 14: the three overdue paused rows are released');
select cmp_ok(pg_stat_get_xact_blocks_fetched('pepsi.workqueue_paused_idx'::regclass) - :paused_blocks, '<=', 10::bigint,
              'issue 14: finding them reads the overdue range of each owner slot, not the 20,000 paused rows (blocks of workqueue_paused_idx)');

select * from finish();
rollback;
