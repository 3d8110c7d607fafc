-- Verify pepsi:anomaly_dashboard on pg

begin;

select check_name, state, severity, family, value, unit, expected, subject, since, evaluated_at, detail, description
  from pepsi.anomaly_dashboard where false;
select 1 / pg_catalog.has_table_privilege('pepsi_reader', 'pepsi.anomaly_dashboard', 'select')::int;

rollback;
