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
select 1 / (count(*) = 4)::int from pg_catalog.pg_indexes
 where schemaname = 'pepsi'
   and indexname in ('anomaly_event_mv_key', 'anomaly_queue_mv_key', 'anomaly_orphan_mv_key', 'anomaly_gap_mv_key');
select 1 / pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.anomaly_run(timestamptz, boolean)', 'execute')::int;
select 'pepsi.anomaly_check_set(text, jsonb)'::regprocedure;
select 'pepsi.anomaly_evaluate(text, timestamptz)'::regprocedure;
select 1 / pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.anomaly_refresh(text)', 'execute')::int;

rollback;
