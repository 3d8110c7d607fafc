-- Verify pepsi:xmin_horizon on pg

begin;

select kind, pid, usename, application_name, state, since, age_seconds, holder
  from pepsi.xmin_horizon_holders(now()) where false;
select pg_catalog.has_function_privilege('pepsi_reader', 'pepsi.xmin_horizon_holders(timestamptz)', 'execute');
select 1 / (pg_catalog.has_function_privilege('pepsi_reader', 'pepsi.xmin_horizon_holders(timestamptz)', 'execute')
            and pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.xmin_horizon_holders(timestamptz)', 'execute'))::int;
select 1 / count(*) from pepsi.anomaly_check
 where name = 'xmin_horizon_age_critical' and severity = 'critical';
select 1 / count(*) from pepsi.anomaly_check
 where name = 'xmin_horizon_age' and metric like '%pepsi.xmin_horizon_holders(%';

rollback;
