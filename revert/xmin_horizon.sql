-- Revert pepsi:xmin_horizon from pg
--
-- xmin_horizon_age back to its anomaly_checks definition (the shipped
-- bound of 15 minutes unless an operator tuned it since).

begin;

delete from pepsi.anomaly_check where name = 'xmin_horizon_age_critical';

update pepsi.anomaly_check
   set metric = $m$select format('pid %s (%s)', a.pid, coalesce(nullif(a.application_name, ''), a.backend_type)),
           extract(epoch from $1 - a.xact_start)
      from pg_catalog.pg_stat_activity a
     where a.backend_xmin is not null and a.xact_start is not null
    union all
    select format('prepared %s', p.gid), extract(epoch from $1 - p.prepared) from pg_catalog.pg_prepared_xacts p$m$,
       description = 'Age of the oldest transaction holding back the xmin horizon (an open session or a prepared transaction): no dead row younger than it can be vacuumed.',
       max_value = case when max_value = 60 then 900 else max_value end,
       updated_at = now()
 where name = 'xmin_horizon_age';

drop function pepsi.xmin_horizon_holders(timestamptz);

commit;
