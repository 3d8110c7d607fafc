-- Revert pepsi:anomaly_dashboard from pg

begin;

drop view pepsi.anomaly_dashboard;

commit;
