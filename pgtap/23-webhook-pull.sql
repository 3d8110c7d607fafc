-- Pull mode (W-15..W-19): webhook_events_pull and
-- webhook_events_mark_processed. Here, in one session: which rows a pull
-- returns and which it locks (pgrowlocks: the row locks of this
-- transaction, and their mode). Two pullers at once need two sessions:
-- runner/tests/e2e/ingress-pull.t tests SKIP LOCKED for real (W-16,
-- W-17: a second puller neither waits for the first one's rows nor gets
-- them).

begin;
select plan(20);
create extension pgrowlocks;

-- The rows of webhook_events this transaction holds locked, and how.
create function pg_temp.locked_events() returns table (external_id text, modes text[], mine boolean)
language sql as $$
    select e.external_id, l.modes, l.pids = array[pg_backend_pid()]
      from pgrowlocks('pepsi.webhook_events') l join pepsi.webhook_events e on e.ctid = l.locked_row
     order by e.external_id
$$;

select has_function('pepsi', 'webhook_events_pull', array['text', 'integer'], 'W-15: webhook_events_pull(provider, limit) exists');
select has_function('pepsi', 'webhook_events_mark_processed', array['bigint[]', 'timestamp with time zone'],
                    'W-18: webhook_events_mark_processed(ids, now) exists');
select has_view('pepsi', 'webhook_event_overview', 'view webhook_event_overview exists');

select pepsi.webhook_provider_add('app', 'github', '{secret}');                 -- pulled
select pepsi.webhook_provider_add('other', 'github', '{secret}');               -- pulled
select pepsi.webhook_provider_add('piped', 'github', '{secret}', 'deliver');    -- pipeline

select pepsi.webhook_event_ingest('app', 'e' || g, ('p' || g)::bytea, '{}', '2026-11-30T06:00:00Z'::timestamptz + g * interval '1 second')
  from generate_series(5, 1, -1) g;
select pepsi.webhook_event_ingest('other', 'o1', 'o'::bytea, '{}', '2026-11-30T05:00:00Z');

select is((select array_agg(external_id) from pepsi.webhook_events_pull('app', 3)), '{e1,e2,e3}'::text[],
          'W-15, W-19: oldest received first (a preference), at most the limit');
select results_eq($$select * from pg_temp.locked_events()$$,
                  $$values ('e1'::text, '{"For Update"}'::text[], true), ('e2', '{"For Update"}', true), ('e3', '{"For Update"}', true)$$,
                  'W-15: the pull locks FOR UPDATE exactly the rows it returns: none past its limit, none of another provider');
select is((select count(*)::int from pepsi.webhook_events_pull('app', 50)), 5, 'W-15: only that provider''s events');
select row_eq($$select external_id, payload, headers from pepsi.webhook_events_pull('app', 1)$$,
              row('e1'::text, 'p1'::bytea, '{}'::jsonb), 'the pull returns payload and headers');
select is((select array_agg(external_id) from pg_temp.locked_events() where mine and modes = '{"For Update"}'),
          '{e1,e2,e3,e4,e5}'::text[], 'the pulled rows stay locked by this transaction after the calls return, until it ends');

select is(pepsi.webhook_events_mark_processed(array(select webhook_event_id from pepsi.webhook_events
                                                     where external_id in ('e1', 'e2')), '2026-11-30T08:00:00Z'), 2,
          'W-18: mark_processed marks two events and says so');
select is((select array_agg(external_id) from pepsi.webhook_events_pull('app', 50)), '{e3,e4,e5}'::text[],
          'W-18: processed events are not pulled again');
select is(pepsi.webhook_events_mark_processed(array(select webhook_event_id from pepsi.webhook_events where external_id = 'e1')), 0,
          'a second mark changes nothing');
select is((select processed_at from pepsi.webhook_events where external_id = 'e1'), '2026-11-30T08:00:00Z'::timestamptz,
          'the first mark''s time stays');
select is(pepsi.webhook_events_mark_processed('{-1}'), 0, 'an unknown id is skipped');

select row_eq($$select events, unprocessed, oldest_unprocessed_at from pepsi.webhook_event_overview where provider = 'app'$$,
              row(5::bigint, 3::bigint, '2026-11-30T06:00:03Z'::timestamptz), 'webhook_event_overview counts them');

select throws_ok($$select * from pepsi.webhook_events_pull('piped', 10)$$, 'PX013', null,
                 'PX013: a pipeline provider''s events are not pulled');
select throws_ok($$select * from pepsi.webhook_events_pull('nobody', 10)$$, 'PX011', null, 'PX011: an unknown provider');
select throws_ok($$select * from pepsi.webhook_events_pull('app', 0)$$, 'PX003', null, 'PX003: a limit below 1');
select throws_ok($$select pepsi.webhook_events_mark_processed(null)$$, 'PX003', null, 'PX003: no ids');

select ok(has_function_privilege('pepsi_worker', 'pepsi.webhook_events_pull(text, integer)', 'execute')
          and has_function_privilege('pepsi_worker', 'pepsi.webhook_events_mark_processed(bigint[], timestamptz)', 'execute')
          and not has_function_privilege('public', 'pepsi.webhook_events_pull(text, integer)', 'execute')
          and has_table_privilege('pepsi_reader', 'pepsi.webhook_event_overview', 'select'),
          'pepsi_worker pulls and marks; pepsi_reader reads the overview');
set local role pepsi_worker;
select is((select count(*)::int from pepsi.webhook_events_pull('app', 10)), 3, 'pepsi_worker: webhook_events_pull runs');
reset role;

select * from finish();
rollback;
