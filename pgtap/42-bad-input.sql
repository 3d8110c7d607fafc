-- issue 11: public functions answer bad input with their documented PX
-- codes, never with a raw SQLSTATE: casts inside JSON (an address, a time,
-- a number), NULLs where a value is required, and state keys of the wrong
-- type that a producer chose. A NULL time is PX003 everywhere; the list of
-- functions with a time parameter comes from the catalogue, so a new one
-- without its test fails "every time parameter is covered".

begin;
select plan(66);

-- A running message at stage p_stage with state p_state.
create function pg_temp.running(p_stage text, p_state jsonb default '{}', p_arrived timestamptz default now())
returns bigint
language plpgsql
as $$
declare
    v_id bigint := pepsi.workqueue_inject(p_stage, p_state => p_state, p_arrived_at => p_arrived);
begin
    update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = v_id;
    return v_id;
end
$$;

-- The raw SQLSTATEs of the issue ------------------------------------------------------

select pg_temp.running('he', '{}', now() - interval '200 hours') as he \gset
select throws_ok(format($$select pepsi.workqueue_host_error(%s, 'he', 'boom', p_now => null)$$, :he), 'PX003', null,
                 'issue 11: workqueue_host_error(p_now => NULL) raises PX003');
select row_eq(format($$select status::text, stage, state ? 'failure_class' from pepsi.workqueue where workqueue_id = %s$$, :he),
              row('running'::text, 'he'::text, false),
              'issue 11: ... and never bounces or fails the message as if its lifetime were over');
select throws_ok($$select pepsi.workqueue_inject('bad', p_origin_user => repeat('u', 10000000))$$, 'PX003', null,
                 'issue 11: a 10 MB origin_user is PX003, not 54000');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "a"}, {"stage": "a", "origin_addr": "not-an-ip"}]')$$,
                 'PX003', 'message 2: origin_addr "not-an-ip" is not an IP address',
                 'issue 11: a bad address in a batch is PX003 naming the element, not 22P02');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "a", "body_base64": "AGh"}]')$$,
                 'PX003', null, 'issue 11: a body_base64 that is not base64 is PX003, not 22023');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "a", "subject": {"x": 1}}]')$$,
                 'PX003', null, 'issue 11: a batch element whose subject is not a string is PX003');
select pg_temp.running('cm') as cm \gset
select throws_ok(format($$select * from pepsi.workqueue_commit('cm', '[{"id": %s, "do": "pause", "until": "next tuesday-ish"}]')$$, :cm),
                 'PX003', 'result 1: until "next tuesday-ish" is not a time',
                 'issue 11: a bad timestamp in a batch commit is PX003 naming the result, not 22007');
select throws_ok($$select * from pepsi.workqueue_commit('cm', '[{"id": "seven", "do": "finish"}]')$$,
                 'PX003', 'result 1: id "seven" is not an integer',
                 'issue 11: an id that is not an integer in a batch commit is PX003, not 22P02');
select throws_ok($$select * from pepsi.workqueue_commit('cm', '[{"id": 1e30, "do": "finish"}]')$$,
                 'PX003', null, 'issue 11: an id out of range in a batch commit is PX003, not 22003');
select throws_ok($$select * from pepsi.workqueue_commit('cm', '[5]')$$,
                 'PX003', 'result 1 is not a JSON object', 'issue 11: a result that is not an object is PX003, not 22023');
select is((select status::text from pepsi.workqueue where workqueue_id = :cm), 'running',
          'issue 11: the refused commits left the message running');

select pepsi.webhook_provider_add('bad-in', 'github', '{s3cret}');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "bad-in", "external_id": "e1", "payload": "x"},
                     {"provider": "bad-in", "external_id": "e2", "payload": "x", "received_at": "yesterday at noon"}]')$$,
                 'PX012', 'event 2: received_at "yesterday at noon" is not a time',
                 'issue 11: a bad received_at in a burst is PX012 naming the event, not 22007');
select throws_ok($$select * from pepsi.webhook_events_ingest('[{"provider": "bad-in", "external_id": "e3", "payload": "x",
                     "received_at": "294277-01-01"}]')$$,
                 'PX012', null, 'issue 11: an out-of-range received_at is PX012, not 22008');
select is((select count(*)::int from pepsi.webhook_events where provider = 'bad-in'), 0,
          'issue 11: the refused bursts stored no event');

select throws_ok($$select pepsi.stats_flush(0, '[{"stage": "a", "runs": "many"}]', null)$$, 'PX003',
                 'stage delta 1: runs must be a count (0 to 15 digits), not "many"',
                 'issue 11: a statistics delta that is not a number is PX003, not 22P02');
select throws_ok($$select pepsi.stats_flush(0, '[{"stage": "a", "runs": -4}]', null)$$, 'PX003', null,
                 'issue 11: a negative statistics delta is PX003');
select throws_ok($$select pepsi.stats_flush(0, '[]', '{"claims": 1.5}')$$, 'PX003', null,
                 'issue 11: a dispatch delta that is not a count is PX003');
select throws_ok($$select pepsi.stats_flush(0, '[7]', null)$$, 'PX003', 'stage delta 1 is not a JSON object',
                 'issue 11: a stage delta that is not an object is PX003, not 22023');

-- State keys a producer chose with the wrong type read as absent ----------------------

select pg_temp.running('sk', '{"strikes": "lots"}') as sk1 \gset
select is(pepsi.workqueue_strike(:sk1, 'sk', 'crash', 'died')::text, 'paused',
          'issue 11: strike on a state whose strikes is not a number: counted from zero, no 22P02');
select pg_temp.running('sk', '{"strikes": 99999999999}') as sk2 \gset
select is(pepsi.workqueue_strike(:sk2, 'sk', 'crash', 'died')::text, 'paused',
          'issue 11: strike on a state whose strikes is out of range: counted from zero, no 22003');
select pg_temp.running('hs', '{"generated_at": "the day before yesterday", "list_copy": "perhaps",
                                "temporary_failures": {"hs": "x"}}') as hs1 \gset
select is(pepsi.workqueue_host_error(:hs1, 'hs', 'down')::text, 'paused',
          'issue 11: host error on odd generated_at, list_copy and temporary_failures: paused, no cast error');
select is((select state->'temporary_failures'->>'hs' from pepsi.workqueue where workqueue_id = :hs1), '1',
          'issue 11: ... counting the retries from one');
select pg_temp.running('hs', '{"temporary_failures": [1, 2]}') as hs2 \gset
select is(pepsi.workqueue_host_error(:hs2, 'hs', 'down')::text, 'paused',
          'issue 11: host error on a temporary_failures that is not an object: paused');
select pg_temp.running('hs', '{"generated_at": "2020-01-01T00:00:00Z"}') as hs3 \gset
select is(pepsi.workqueue_host_error(:hs3, 'hs', 'down', p_bounce_stage => 'bounce')::text, 'pending',
          'issue 11: a valid generated_at still counts (D-107): an old notice is bounced');
select pepsi.workqueue_inject('odd', p_state => '{"strikes": "x"}');
update pepsi.workqueue set status = 'failed' where stage = 'odd';
select lives_ok($$select * from pepsi.failed$$,
                'issue 11: pepsi.failed reads a message whose strikes is not a number (no 22P02 for the reader)');

-- NULL where a value is required -------------------------------------------------------

select throws_ok($$select * from pepsi.workqueue_claim(array[null::text], '{1}')$$, 'PX003', null,
                 'issue 11: workqueue_claim refuses a NULL stage');
select throws_ok($$select * from pepsi.schema_check(null, null)$$, 'PX003', null,
                 'issue 11: schema_check refuses NULL arrays');

-- A NULL time is PX003 everywhere ------------------------------------------------------

create temp table time_cases (name text primary key, call text) on commit drop;
insert into time_cases values
    ('workqueue_claim',               $$select * from pepsi.workqueue_claim('{a}', '{1}', null)$$),
    ('workqueue_claim_fair',          $$select * from pepsi.workqueue_claim_fair('{a}', '{1}', '{1}', '{}', '{}', '{}', p_now => null)$$),
    ('workqueue_host_error',          $$select pepsi.workqueue_host_error(1, 'a', 'x', p_now => null)$$),
    ('workqueue_inject',              $$select pepsi.workqueue_inject('a', p_arrived_at => null)$$),
    ('workqueue_pause',               $$select pepsi.workqueue_pause(1, 'a', null)$$),
    ('workqueue_transition',          $$select * from pepsi.workqueue_transition('{}', 1000, null)$$),
    ('workqueue_unclaim',             $$select pepsi.workqueue_unclaim(null)$$),
    ('tube_stats',                    $$select * from pepsi.tube_stats('default', null)$$),
    ('tube_pause',                    $$select pepsi.tube_pause('default', 1, null)$$),
    ('workqueue_release_paused',      $$select * from pepsi.workqueue_release_paused(null)$$),
    ('workqueue_defer',               $$select pepsi.workqueue_defer('{1}', '{a}', null, 'x')$$),
    ('workqueue_strike',              $$select pepsi.workqueue_strike(1, 'a', 'crash', 'x', null)$$),
    ('workqueue_body_gc',             $$select pepsi.workqueue_body_gc(10, null)$$),
    ('workqueue_delete',              $$select pepsi.workqueue_delete('{1}', 'on purpose', null)$$),
    ('stats_flush',                   $$select pepsi.stats_flush(0, '[]', null, null)$$),
    ('webhook_event_ingest',          $$select * from pepsi.webhook_event_ingest('bad-in', 'n1', 'x', '{}', null)$$),
    ('webhook_events_mark_processed', $$select pepsi.webhook_events_mark_processed('{1}', null)$$),
    ('webhook_tombstone_add',         $$select pepsi.webhook_tombstone_add('bad-in', 'n2', 'never sent', null)$$),
    ('webhook_gaps_recheck',          $$select pepsi.webhook_gaps_recheck(null)$$),
    ('webhook_gaps_detect',           $$select * from pepsi.webhook_gaps_detect(null)$$),
    ('webhook_backfill_request',      $$select pepsi.webhook_backfill_request('bad-in', 'n3', null)$$),
    ('webhook_backfill_due',          $$select * from pepsi.webhook_backfill_due(null)$$),
    ('webhook_backfill_store',        $$select pepsi.webhook_backfill_store(1, 'a', 200, 'x', '{}', null)$$),
    ('reconcile',                     $$select * from pepsi.reconcile(null)$$),
    ('anomaly_run',                   $$select * from pepsi.anomaly_run(null)$$),
    ('anomaly_evaluate',              $$select * from pepsi.anomaly_evaluate('pending_backlog', null)$$),
    ('ingress_stats_flush',           $$select pepsi.ingress_stats_flush('i-1', '{"stored": 1}', null)$$),
    -- issue 16: the operators' actions and the history's maintenance
    ('workqueue_retry',               $$select pepsi.workqueue_retry('{1}', null)$$),
    ('workqueue_reroute',             $$select pepsi.workqueue_reroute('{1}', 'a', null)$$),
    ('workqueue_purge',               $$select pepsi.workqueue_purge('1 day', null)$$),
    ('workqueue_history_maintain',    $$select pepsi.workqueue_history_maintain(null)$$),
    ('xmin_horizon_holders',          $$select * from pepsi.xmin_horizon_holders(null)$$),
    -- issue 17: the beanstalkd frontend's clock
    ('beanstalk_reserve',             $$select * from pepsi.beanstalk_reserve(1, '{default}', null)$$),
    ('beanstalk_reserve_job',         $$select * from pepsi.beanstalk_reserve_job(1, 1, null)$$),
    ('beanstalk_touch',               $$select pepsi.beanstalk_touch(1, 1, null)$$),
    ('beanstalk_stats_job',           $$select * from pepsi.beanstalk_stats_job(1, null)$$),
    ('beanstalk_stats_tube',          $$select * from pepsi.beanstalk_stats_tube('default', null)$$),
    ('beanstalk_stats',               $$select * from pepsi.beanstalk_stats(null)$$);
-- Owner-only steps of a pass: only reconcile(), anomaly_run() and
-- webhook_backfill_request() call them, with a p_now they checked; and
-- transition_of, which only builds a value (its p_until is a pause's
-- time, checked by workqueue_transition: issue 13).
create temp table time_internal (name text primary key) on commit drop;
insert into time_internal values
    ('reconcile_flag'), ('reconcile_lost'), ('reconcile_stuck'), ('reconcile_links'), ('reconcile_digests'),
    ('reconcile_gaps'), ('reconcile_retention'), ('anomaly_sample_take'), ('anomaly_delta'),
    ('webhook_backfill_inject'),
    -- issue 13: helpers whose callers have checked the time
    ('workqueue_release_due'), ('webhook_event_item'), ('transition_of'),
    -- the claims' list of paused tubes: they check p_now before calling it
    ('tube_pause_current'),
    -- issue 16: the inject's run_at is a delay, not a clock: NULL is "no
    -- delay" by design (README "Enqueue options"); the check refuses an
    -- infinite or too distant one (PX053, pgtap/62)
    ('enqueue_options_check'),
    -- issue 17: the beanstalk functions' steps, called with a checked p_now
    ('beanstalk_requeue'), ('beanstalk_take'),
    -- issue 19: the claims' mark refresh, called by claim_mark_get with
    -- its own clock_timestamp()
    ('claim_mark_refresh'), ('claim_mark_set');

select is((select array_agg(distinct p.proname::text order by p.proname::text) from pg_proc p
            where p.pronamespace = 'pepsi'::regnamespace
              and 'timestamptz'::regtype = any (p.proargtypes::oid[])
              and p.proname not in (select name from time_cases union all select name from time_internal)),
          null, 'issue 11: every function with a time parameter is covered below (or an internal step of a pass)');

select throws_ok(call, 'PX003', null, format('issue 11: %s refuses a NULL time with PX003', name))
  from time_cases order by name;

select * from finish();
rollback;
