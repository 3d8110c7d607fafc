-- Deploy pepsi:anomaly_dashboard to pg
-- requires: anomaly_checks
--
-- The one view a person glances at to answer "have we lost data?"
-- (W-42): every check with its value, its expected range, its state and
-- since when, worst first. `pepsi-runner status` prints the same rows as
-- a table in the terminal.

begin;

create view pepsi.anomaly_dashboard as
-- One row per check: state (firing, error, no_data, ok, disabled, or
-- pending when no run has evaluated it yet), the value reported (the
-- worst subject when firing) rounded to 3 decimals, its unit, the
-- expected range as text ("<= 300", ">= 1", "0.1 .. 10"), the subject
-- (provider, stage, table ...), since when the state holds, when it was
-- evaluated, how many subjects are out of range, severity and family.
-- Ordered: firing critical first, then firing, error, not run yet, ok,
-- no data (nothing to judge: a provider that has no sequence, a rate
-- without traffic), disabled.
select c.name as check_name,
       coalesce(s.state, 'pending') as state,
       c.severity,
       c.family,
       round(s.value, 3) as value,
       c.unit,
       case when c.min_value is null then '<= ' || c.max_value
            when c.max_value is null then '>= ' || c.min_value
            else c.min_value || ' .. ' || c.max_value end as expected,
       s.subject,
       s.since,
       s.evaluated_at,
       s.detail,
       c.description
  from pepsi.anomaly_check c
  left join pepsi.anomaly_state s on s.check_name = c.name
 order by case coalesce(s.state, 'pending')
               when 'firing' then case c.severity when 'critical' then 0 when 'warning' then 1 else 2 end
               when 'error' then 3 when 'pending' then 4 when 'ok' then 5 when 'no_data' then 6 else 7 end,
          c.family, c.name;

comment on view pepsi.anomaly_dashboard is
    'Every anomaly check: state, value, expected range, subject, since when; firing first (W-42). pepsi-runner status prints it.';

revoke all on table pepsi.anomaly_dashboard from public;
grant select on pepsi.anomaly_dashboard to pepsi_reader, pepsi_runner;

commit;
