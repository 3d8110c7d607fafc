-- Verify pepsi:views on pg

begin;

select tube, stage, status, messages, oldest_age, next_retry from pepsi.queue_overview where false;
select workqueue_id, tube, stage, sender_key, claimed_at, running_for from pepsi.stuck where false;
select workqueue_id, stage, status, failed_stage, failure_class, last_error, strikes from pepsi.failed where false;
select stage, stages_executed, runs, avg_usec from pepsi.stage_totals where false;

rollback;
