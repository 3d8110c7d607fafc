-- Deploy pepsi:views to pg
-- requires: workqueue
-- requires: stats

begin;

create view pepsi.queue_overview as
-- Per tube, stage and status: how many rows, the oldest arrival's age and,
-- for paused rows, the earliest retry time.
select w.tube, w.stage, w.status, count(*) as messages,
       now() - min(w.arrived_at) as oldest_age,
       min(w.timeout) as next_retry
  from pepsi.workqueue w
 group by w.tube, w.stage, w.status;

comment on view pepsi.queue_overview is
    'Per tube, stage and status: count, age of the oldest arrival, next retry of paused rows.';

create view pepsi.stuck as
-- Rows running longer than the threshold in the setting pepsi.stuck_after
-- (an interval; default 10 minutes: SET pepsi.stuck_after = '30s' to look
-- closer). A row running that long has outlived any sane MAX_RUNTIME, or
-- its dispatcher died and nobody has restarted it.
select w.workqueue_id, w.tube, w.stage, w.sender_key, w.claimed_at,
       now() - w.claimed_at as running_for, w.arrived_at, w.state
  from pepsi.workqueue w
 where w.status = 'running'
   and w.claimed_at < now() - coalesce(nullif(current_setting('pepsi.stuck_after', true), '')::interval,
                                       interval '10 minutes');

comment on view pepsi.stuck is
    'Rows running longer than pepsi.stuck_after (default 10 minutes).';

create view pepsi.failed as
-- Terminal rows: failed and timed out, with why and where.
select w.workqueue_id, w.tube, w.stage, w.status,
       w.state->>'failed_stage' as failed_stage,
       w.state->>'failure_class' as failure_class,
       w.state->>'last_error' as last_error,
       -- guarded like pepsi.state_count (a view may not call a function
       -- its readers cannot execute): a producer's odd value reads as 0
       case when jsonb_typeof(w.state->'strikes') in ('number', 'string')
                 and (w.state->>'strikes') ~ '^[0-9]{1,9}$'
            then (w.state->>'strikes')::int else 0 end as strikes,
       w.sender_key, w.arrived_at
  from pepsi.workqueue w
 where w.status in ('failed', 'timeout');

comment on view pepsi.failed is
    'Failed and timed-out rows with last_error, failure_class and failed_stage.';

create view pepsi.stage_totals as
-- stage_stats summed over owner slots, with the mean worker time per run.
select s.stage, sum(s.stages_executed) as stages_executed, sum(s.runs) as runs,
       sum(s.run_usec) as run_usec,
       case when sum(s.runs) > 0 then round(sum(s.run_usec)::numeric / sum(s.runs), 1) end as avg_usec,
       sum(s.succeeded) as succeeded, sum(s.failed) as failed,
       sum(s.tempfailed) as tempfailed,
       sum(s.strikes) as strikes, sum(s.requeued) as requeued, max(s.updated_at) as updated_at
  from pepsi.stage_stats s
 group by s.stage;

grant select on pepsi.queue_overview, pepsi.stuck, pepsi.failed, pepsi.stage_totals
    to pepsi_reader, pepsi_runner;

commit;
