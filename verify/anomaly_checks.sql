-- Verify pepsi:anomaly_checks on pg

begin;

select 1 / (count(*) > 30)::int from pepsi.anomaly_check;
select name, family, description, metric, reads, unit, min_value, max_value, severity, enabled, updated_at
  from pepsi.anomaly_check where false;
select check_name, state, value, subject, detail, since, evaluated_at from pepsi.anomaly_state where false;
select signal_id, check_name, severity, raised_at, cleared_at, value, last_value, subject, detail
  from pepsi.anomaly_signal where false;
select source, counter, subject, sampled_at, value from pepsi.anomaly_sample where false;
select instance, counter, value, updated_at from pepsi.ingress_stats where false;
select 1 / pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.anomaly_run(timestamptz, boolean)', 'execute')::int;
select 'pepsi.anomaly_check_set(text, jsonb)'::regprocedure;
select 'pepsi.anomaly_evaluate(text, timestamptz)'::regprocedure;
select 1 / pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.anomaly_refresh(text)', 'execute')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.anomaly_delta(text, text, interval, timestamptz)'::regprocedure;
select 'pepsi.anomaly_sample_take(timestamptz)'::regprocedure;
select 'pepsi.dispatcher_slots()'::regprocedure;
select 'pepsi.ingress_stats_flush(text, jsonb, timestamptz)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.anomaly_check_pkey'::regclass;
select 'pepsi.anomaly_event_mv_key'::regclass;
select 'pepsi.anomaly_gap_mv_key'::regclass;
select 'pepsi.anomaly_orphan_mv_key'::regclass;
select 'pepsi.anomaly_queue_mv_key'::regclass;
select 'pepsi.anomaly_sample_pkey'::regclass;
select 'pepsi.anomaly_signal_open_key'::regclass;
select 'pepsi.anomaly_signal_pkey'::regclass;
select 'pepsi.anomaly_state_pkey'::regclass;
select 'pepsi.ingress_stats_pkey'::regclass;
select 'pepsi.webhook_events_received_at_brin'::regclass;

rollback;
