-- issue 13: the webhook linkage is a real column, pepsi.workqueue.webhook_event_id
-- (nullable, partial index where not null), no longer state->>'webhook_event'.
-- Every function that makes a message from an event sets it (the ingest, so
-- the back-fill's answer; reconciliation's re-injection), a split's siblings
-- and a move carry it, and everything that follows the link (the finish
-- triggers, workqueue_delete's tombstone, reconciliation, the anomaly views)
-- reads the column, probing the index instead of scanning the queue.
-- state.webhook_event is still written: the README documents it for stage
-- programs.

begin;
select plan(29);

-- The column and its index ------------------------------------------------------------

select has_column('pepsi', 'workqueue', 'webhook_event_id', 'issue 13: workqueue has webhook_event_id');
select col_type_is('pepsi', 'workqueue', 'webhook_event_id', 'bigint', 'issue 13: a bigint, like webhook_events.webhook_event_id');
select col_is_null('pepsi', 'workqueue', 'webhook_event_id', 'issue 13: nullable: most messages carry no event');
select is((select indexdef from pg_indexes where schemaname = 'pepsi' and indexname = 'workqueue_webhook_event_idx'),
          'CREATE INDEX workqueue_webhook_event_idx ON pepsi.workqueue USING btree (webhook_event_id) WHERE (webhook_event_id IS NOT NULL)',
          'issue 13: a partial index on it, holding only the linked messages');

-- Nothing in SQL follows state.webhook_event any more: no function body, view
-- or trigger condition reads the key (writing it, for stage programs, is fine).
select is((select string_agg(x.what, ', ' order by x.what) from (
              select p.oid::regprocedure::text as what, p.prosrc as src
                from pg_proc p where p.pronamespace = 'pepsi'::regnamespace
              union all
              select c.oid::regclass::text, pg_get_viewdef(c.oid)
                from pg_class c where c.relnamespace = 'pepsi'::regnamespace and c.relkind in ('v', 'm')
              union all
              select t.tgname::text, pg_get_triggerdef(t.oid)
                from pg_trigger t where t.tgrelid = 'pepsi.workqueue'::regclass and not t.tgisinternal) x
            where x.src ~ $re$(->>?|#>>?|\?)\s*'webhook_event'$re$),
          null, 'issue 13: no function, view or trigger reads state->''webhook_event''');
select ok((select count(*) = 2 and bool_and(pg_get_triggerdef(t.oid) like '%WHEN %old.webhook_event_id IS NOT NULL%'
                                        and pg_get_triggerdef(t.oid) not like '%state%')
             from pg_trigger t where t.tgname in ('workqueue_webhook_finished', 'workqueue_webhook_delivered')),
          'issue 13: the finish triggers fire on the column (their WHEN clause reads old.webhook_event_id)');

-- Who sets it ----------------------------------------------------------------------------

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver',
                                  p_id_source => 'json:id');
select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_backfill_stage => 'backfill-acme');
select webhook_event_id as ev1, workqueue_id as msg1
  from pepsi.webhook_event_ingest('acme', 'evt_0001', 'one'::bytea, '{}', now() - interval '1 hour') \gset
select row_eq(format($$select webhook_event_id, (state->>'webhook_event')::bigint from pepsi.workqueue where workqueue_id = %s$$, :msg1),
              row(:ev1::bigint, :ev1::bigint),
              'issue 13: the ingest sets webhook_event_id, and still writes state.webhook_event (README: stage programs read it)');
select is((select count(*)::int from pepsi.workqueue w join pepsi.webhook_events e on e.webhook_event_id = w.webhook_event_id
            where w.webhook_event_id is distinct from (w.state->>'webhook_event')::bigint), 0,
          'the two agree on every message made from an event');

select pepsi.webhook_backfill_request('acme', 'evt_0002') as req \gset
select is((select webhook_event_id from pepsi.workqueue where workqueue_id = :req), null,
          'a back-fill request is not an event''s message: no link');
update pepsi.workqueue set status = 'running' where workqueue_id = :req;
select pepsi.webhook_backfill_store(:req, 'backfill-acme', 200, convert_to('{"id":"evt_0002"}', 'UTF8'), '{}');
select pepsi.workqueue_finish(:req, 'backfill-acme');
select webhook_event_id as ev2 from pepsi.webhook_events where external_id = 'evt_0002' \gset
select is((select count(*)::int from pepsi.workqueue where webhook_event_id = :ev2 and stage = 'deliver'), 1,
          'issue 13: the back-fill''s answer makes its message with webhook_event_id set');

select webhook_event_id as ev3, workqueue_id as msg3
  from pepsi.webhook_event_ingest('acme', 'evt_0003', 'three'::bytea, '{}', now() - interval '1 hour') \gset
delete from pepsi.workqueue where workqueue_id = :msg3;   -- lost, as far as anyone can tell
select pepsi.reconcile();
select is((select count(*)::int from pepsi.workqueue where webhook_event_id = :ev3 and state->>'reinjected_by_run' is not null), 1,
          'issue 13: reconciliation''s re-injection sets webhook_event_id');
select is((select findings from pepsi.reconcile()), 0, 'W-28: and the next pass sees the event''s message through it');

-- Who carries it -------------------------------------------------------------------------

update pepsi.workqueue set status = 'running', recipients = '{a@example.org,b@example.org}' where workqueue_id = :msg1;
select (pepsi.workqueue_split(:msg1, 'deliver', '[["a@example.org"], ["b@example.org"]]'))[1] as sib \gset
select is((select webhook_event_id from pepsi.workqueue where workqueue_id = :sib), :ev1::bigint,
          'issue 13: a split''s sibling carries webhook_event_id');
select is(pepsi.workqueue_move(:msg1, 'deliver', 'archive'), 'ok', 'a move');
select is((select webhook_event_id from pepsi.workqueue where workqueue_id = :msg1), :ev1::bigint,
          'issue 13: keeps webhook_event_id');
select pepsi.workqueue_finish(:msg1, 'archive');
update pepsi.workqueue set status = 'running', state = state || '{"webhook_event": "rewritten by a stage"}'
 where workqueue_id = :sib;
select pepsi.workqueue_finish(:sib, 'deliver');
select isnt((select processed_at from pepsi.webhook_events where webhook_event_id = :ev1), null,
            'issue 13: the finish marks the event by the column, whatever a stage wrote into state');
select isnt((select processed_digest from pepsi.webhook_events where webhook_event_id = :ev1), null,
            'W-22: with the digest of what its message delivered');

-- What follows it ------------------------------------------------------------------------

select pepsi.workqueue_inject('deliver', p_state => format('{"webhook_event": %s}', :ev2)::jsonb) as forged \gset
update pepsi.workqueue set status = 'paused', timeout = now() + interval '1 day',
                           state = state - 'webhook_event' where webhook_event_id = :ev2;
select is(pepsi.workqueue_delete(array[(select workqueue_id from pepsi.workqueue where webhook_event_id = :ev2)], 'test'), 1,
          'workqueue_delete');
select is((select webhook_event_id from pepsi.workqueue_tombstones), :ev2::bigint,
          'issue 13: its tombstone names the event of the column (state no longer did)');
select is((select findings from pepsi.reconcile(now() + interval '1 hour')), 0,
          'a pass honours the tombstone, and a producer''s state naming the event is no message of it (no finding)');
delete from pepsi.workqueue_tombstones;
select run_id as r_forged from pepsi.reconcile(now() + interval '1 hour') \gset
select is((select count(*)::int from pepsi.reconcile_findings where run_id = :r_forged and kind = 'lost_message'
              and webhook_event_id = :ev2), 1,
          'issue 13: without the tombstone the event is lost: a message that only names it in state does not keep it');
delete from pepsi.workqueue where workqueue_id = :forged;

-- Plans at scale: through the index, no scan of the queue -------------------------------------
-- 50,000 messages without an event and a few with one, as in a mail queue
-- that also takes webhooks; the planner sees the statistics.

select count(*) from (select pepsi.workqueue_inject_batch(
           (select jsonb_agg(jsonb_build_object('stage', 'deliver', 'state', jsonb_build_object('n', g)))
              from generate_series(1, 10000) g)) from generate_series(1, 5)) b;
select count(*) from (select pepsi.webhook_event_ingest('acme', 'bulk_' || g, 'x'::bytea, '{}', now() - interval '2 hours')
                        from generate_series(1, 20) g) i;
delete from pepsi.workqueue where state->>'external_id' in ('bulk_1', 'bulk_2');   -- two lost
update pepsi.workqueue set webhook_event_id = 999999999   -- one message naming no event
 where workqueue_id = (select min(workqueue_id) from pepsi.workqueue where state->>'n' = '1');
analyze pepsi.workqueue;
analyze pepsi.webhook_events;
insert into pepsi.reconcile_runs (trigger, started_at) values ('manual', now());
select max(run_id) as run from pepsi.reconcile_runs \gset

create function pg_temp.scans(p_sql text) returns table (seq bigint, idx bigint)
language plpgsql as $f$
-- The scans of pepsi.workqueue that running p_sql starts in this
-- transaction (pg_stat_xact_all_tables counts them as they happen): the
-- plans of the statements inside functions and triggers, which EXPLAIN of
-- the call cannot show.
declare
    v_seq bigint;
    v_idx bigint;
begin
    select s.seq_scan, s.idx_scan into v_seq, v_idx from pg_stat_xact_all_tables s where s.relid = 'pepsi.workqueue'::regclass;
    execute p_sql;
    return query select s.seq_scan - v_seq, s.idx_scan - v_idx from pg_stat_xact_all_tables s
                  where s.relid = 'pepsi.workqueue'::regclass;
end
$f$;

select row_eq(format($$select seq, idx > 0 from pg_temp.scans('select pepsi.reconcile_lost(%s, now(), (select s from pepsi.reconcile_settings s))')$$, :run),
              row(0::bigint, true), 'issue 13: reconcile_lost anti-joins through the index, no scan of the queue');
select is((select count(*)::int from pepsi.reconcile_findings where run_id = :run and kind = 'lost_message'), 2,
          'and finds the two lost events');
select row_eq(format($$select seq, idx > 0 from pg_temp.scans('select pepsi.reconcile_links(%s, now(), (select s from pepsi.reconcile_settings s))')$$, :run),
              row(0::bigint, true), 'issue 13: reconcile_links reads the linked messages through the index, no scan of the queue');
select is((select object from pepsi.reconcile_findings where run_id = :run and kind = 'message_without_event'),
          'message:' || (select workqueue_id from pepsi.workqueue where webhook_event_id = 999999999),
          'and flags the message naming no event');
select row_eq(format($$select seq, idx > 0 from pg_temp.scans('select pepsi.workqueue_delete(array[%s], ''test'')')$$,
                     (select workqueue_id from pepsi.workqueue where state->>'external_id' = 'bulk_4')),
              row(0::bigint, true), 'issue 13: workqueue_delete and its tombstone: no scan of the queue');

-- The orphan view, whose plan EXPLAIN shows: the linked messages through
-- the index; the one sequential scan left is messages_missing_body's
-- (every message with a body), which reads no webhook_event_id.
create function pg_temp.orphan_plan() returns setof jsonb
language plpgsql as $f$
declare
    v_plan jsonb;
begin
    execute 'explain (format json, verbose) ' || pg_get_viewdef('pepsi.anomaly_orphan_mv'::regclass) into v_plan;
    return query select n from jsonb_path_query(v_plan, 'strict $.**') n
                  where jsonb_typeof(n) = 'object' and n ? 'Node Type';
end
$f$;
select ok(exists (select 1 from pg_temp.orphan_plan() n where n->>'Index Name' = 'workqueue_webhook_event_idx'),
          'issue 13: anomaly_orphan_mv reads the linked messages through workqueue_webhook_event_idx');
select is((select count(*)::int from pg_temp.orphan_plan() n
            where n->>'Node Type' = 'Seq Scan' and n->>'Relation Name' = 'workqueue'
              and (n - 'Plans')::text like '%webhook_event%'), 0,
          'issue 13: no sequential scan of the queue for the webhook link');

-- The same calls without the index scan the queue: the checks above can fail.
drop index pepsi.workqueue_webhook_event_idx;
analyze pepsi.workqueue;
select cmp_ok((select seq from pg_temp.scans(format('select pepsi.reconcile_links(%s, now(), (select s from pepsi.reconcile_settings s))', :run))),
              '>', 0::bigint, 'without workqueue_webhook_event_idx, reconcile_links scans the queue');

select * from finish();
rollback;
