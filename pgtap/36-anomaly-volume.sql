-- Anomaly checks, volume family: queue sizes, the ingest rate against its
-- own baseline, rates of counters (ingress duplicates and rejections,
-- stage failures, strikes, overload), gaps and back-fills. Each is silent
-- on a healthy state and fires on a crafted bad one.

begin;
select plan(25);

create function pg_temp.state_of(p_name text, p_now timestamptz default now())
returns text language sql as $$ select e.state from pepsi.anomaly_evaluate(p_name, p_now) e $$;

-- ---- queue sizes ----
select pepsi.workqueue_inject('deliver') from generate_series(1, 10);
insert into pepsi.workqueue (stage, status, state)
select 'deliver', 'failed', '{"last_error": "x"}' from generate_series(1, 10);
select pepsi.anomaly_refresh();
select is(pg_temp.state_of('pending_backlog'), 'ok', 'pending_backlog is silent at 10 pending');
select is(pg_temp.state_of('failed_messages'), 'ok', 'failed_messages is silent at 10 failed');
select is(pg_temp.state_of('timed_out_messages'), 'ok', 'timed_out_messages is silent with none');
insert into pepsi.workqueue (stage) select 'deliver' from generate_series(1, 100000);
insert into pepsi.workqueue (stage, status, state) values ('deliver', 'failed', '{}'), ('hang', 'timeout', '{}');
select pepsi.anomaly_refresh();
select is(pg_temp.state_of('pending_backlog'), 'firing', 'pending_backlog fires past 100000 pending');
select is(pg_temp.state_of('failed_messages'), 'firing', 'failed_messages fires past 10 failed');
select is(pg_temp.state_of('timed_out_messages'), 'firing', 'timed_out_messages fires for a timed-out message');

-- ---- the ingest rate against its baseline ----
select pepsi.webhook_provider_add('steady', 'github', '{s}');
select pepsi.webhook_provider_add('burst', 'github', '{s}');
select pepsi.webhook_provider_add('dried', 'github', '{s}');
-- One event a minute for the 24 hours before the last hour, for all three.
insert into pepsi.webhook_events (provider, external_id, payload, received_at)
select p, 'b' || n, 'x', now() - interval '25 hours' + n * interval '1 minute'
  from generate_series(1, 1430) n, unnest(array['steady', 'burst', 'dried']) p;
-- The last 15 minutes: steady and burst one a minute, dried none.
insert into pepsi.webhook_events (provider, external_id, payload, received_at)
select p, 'r' || n, 'x', now() - n * interval '1 minute' from generate_series(1, 15) n, unnest(array['steady', 'burst']) p;
select pepsi.anomaly_refresh();
select is((select subject from pepsi.anomaly_evaluate('ingest_rate_vs_baseline') where state = 'firing'), 'dried',
          'ingest_rate_vs_baseline fires for a provider that stopped sending (ratio below 0.1), and names it');
delete from pepsi.webhook_provider where provider = 'dried';
delete from pepsi.webhook_events where provider = 'dried';
select pepsi.anomaly_refresh();
select is(pg_temp.state_of('ingest_rate_vs_baseline'), 'ok', 'ingest_rate_vs_baseline is silent at the usual rate');
insert into pepsi.webhook_events (provider, external_id, payload, received_at)
select 'burst', 'x' || n, 'x', now() - (n % 900) * interval '1 second' from generate_series(1, 450) n;
select pepsi.anomaly_refresh();
select is(pg_temp.state_of('ingest_rate_vs_baseline'), 'firing', 'ingest_rate_vs_baseline fires at 30 times the usual rate');
select is((select subject from pepsi.anomaly_evaluate('ingest_rate_vs_baseline')), 'burst', 'and names the provider');

-- ---- ingress counters ----
select pepsi.ingress_stats_flush('ingress-1', '{"stored": 1000, "duplicate": 10, "rejected.bad_signature": 1}');
select pepsi.anomaly_sample_take('2026-11-30T07:00:00Z');
select pepsi.ingress_stats_flush('ingress-1', '{"stored": 200, "duplicate": 20, "rejected.bad_signature": 2}');
select pepsi.ingress_stats_flush('ingress-2', '{"stored": 100, "duplicate": 5}');
select pepsi.anomaly_sample_take('2026-11-30T07:20:00Z');
select is(pg_temp.state_of('duplicate_rate', '2026-11-30T07:20:00Z'), 'ok', 'duplicate_rate is silent at 8% redeliveries');
select is(pg_temp.state_of('rejection_rate', '2026-11-30T07:20:00Z'), 'ok', 'rejection_rate is silent at 0.6% rejected');
select is(pg_temp.state_of('duplicate_rate', '2026-11-30T07:10:00Z'), 'no_data', 'no rate without two snapshots 15 minutes apart');
select pepsi.ingress_stats_flush('ingress-1', '{"stored": 100, "duplicate": 400, "rejected.bad_signature": 60, "rejected.stale_timestamp": 1}');
select pepsi.anomaly_sample_take('2026-11-30T07:40:00Z');
select is(pg_temp.state_of('duplicate_rate', '2026-11-30T07:40:00Z'), 'firing', 'duplicate_rate fires when 80% are redeliveries');
select is(pg_temp.state_of('rejection_rate', '2026-11-30T07:40:00Z'), 'firing', 'rejection_rate fires at 10% bad signatures');
select is((select subject from pepsi.anomaly_evaluate('rejection_rate', '2026-11-30T07:40:00Z')), 'bad_signature',
          'and names the reason');
select throws_ok($$select pepsi.ingress_stats_flush('i', '{"accepted": 1}')$$, 'PX003', null, 'PX003: an unknown ingress counter');

-- ---- stage counters ----
select pepsi.stats_flush(0, '[{"stage": "deliver", "stages_executed": 1000, "failed": 1}]', null);
select pepsi.anomaly_sample_take('2026-11-30T08:00:00Z');
select pepsi.stats_flush(0, '[{"stage": "deliver", "stages_executed": 100, "failed": 1, "strikes": 0, "tempfailed": 1}]', null);
select pepsi.stats_flush(1, '[{"stage": "deliver", "stages_executed": 100}]', null);
select pepsi.anomaly_sample_take('2026-11-30T08:20:00Z');
select is(pg_temp.state_of('stage_failure_rate', '2026-11-30T08:20:00Z'), 'ok', 'stage_failure_rate is silent at 0.5%');
select is(pg_temp.state_of('stage_strike_rate', '2026-11-30T08:20:00Z'), 'ok', 'stage_strike_rate is silent without strikes');
select is(pg_temp.state_of('stage_tempfail_rate', '2026-11-30T08:20:00Z'), 'ok', 'stage_tempfail_rate is silent at 0.5%');
select pepsi.stats_flush(0, '[{"stage": "deliver", "stages_executed": 100, "failed": 20, "strikes": 5, "tempfailed": 30}]', null);
select pepsi.anomaly_sample_take('2026-11-30T08:40:00Z');
select is(pg_temp.state_of('stage_failure_rate', '2026-11-30T08:40:00Z'), 'firing', 'stage_failure_rate fires at 20% failed');
select is(pg_temp.state_of('stage_strike_rate', '2026-11-30T08:40:00Z'), 'firing', 'stage_strike_rate fires at 5% strikes');
select is(pg_temp.state_of('stage_tempfail_rate', '2026-11-30T08:40:00Z'), 'firing', 'stage_tempfail_rate fires at 30% overload');

-- ---- gaps and back-fills ----
select pepsi.webhook_provider_add('seq', 'github', '{s}');
select pepsi.webhook_id_sequence_set('seq', 'integer');
insert into pepsi.webhook_gaps (provider, external_id, number, first_seen_at, checked_at)
select 'seq', n::text, n, now() - interval '5 minutes', now() from generate_series(1, 100) n;
select pepsi.anomaly_refresh();
select ok(pg_temp.state_of('open_gaps') = 'ok' and pg_temp.state_of('oldest_open_gap') = 'ok'
          and pg_temp.state_of('backfill_failures') = 'ok',
          'open_gaps, oldest_open_gap and backfill_failures are silent at 100 young gaps');
insert into pepsi.webhook_gaps (provider, external_id, number, state, first_seen_at, checked_at, attempts, detail)
values ('seq', '101', 101, 'failed', now() - interval '2 hours', now(), 3, 'HTTP 401');
select pepsi.anomaly_refresh();
select ok(pg_temp.state_of('open_gaps') = 'firing' and pg_temp.state_of('oldest_open_gap') = 'firing'
          and pg_temp.state_of('backfill_failures') = 'firing',
          'open_gaps (101), oldest_open_gap (2 hours) and backfill_failures (a failed back-fill) fire');

select * from finish();
rollback;
