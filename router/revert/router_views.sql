-- Revert pepsi_router:router_views from pg

begin;

drop view pepsi.queue_overview;
drop function pepsi_router.queue_overview_all();
drop view pepsi.failed;
drop function pepsi_router.failed_all();
drop view pepsi.stuck;
drop function pepsi_router.stuck_all();
drop view pepsi.sender_backlog;
drop function pepsi_router.sender_backlog_all();
drop view pepsi.stage_totals;
drop function pepsi_router.stage_totals_all();
drop view pepsi.anomaly_dashboard;
drop function pepsi_router.anomaly_dashboard_all();

commit;
