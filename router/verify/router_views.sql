-- Verify pepsi_router:router_views on pg

begin;

select shard, tube, stage, status, messages, oldest_age, next_retry from pepsi.queue_overview where false;
select shard, workqueue_id, tube, stage, status, failed_stage, failure_class, last_error, strikes, sender_key, arrived_at from pepsi.failed where false;
select shard, workqueue_id, tube, stage, sender_key, claimed_at, running_for, arrived_at, state from pepsi.stuck where false;
select shard, stage, sender_key, waiting, oldest_age, oldest_workqueue_id from pepsi.sender_backlog where false;
select shard, stage, stages_executed, runs, run_usec, avg_usec, succeeded, failed, tempfailed, strikes, requeued, updated_at from pepsi.stage_totals where false;
select shard, check_name, state, severity, family, value, unit, expected, subject, since, evaluated_at, detail, description from pepsi.anomaly_dashboard where false;

rollback;
