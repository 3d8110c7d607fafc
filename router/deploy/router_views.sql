-- Deploy pepsi_router:router_views to pg
-- requires: router_api
--
-- The operator views on the router (issue 18): each is the shard's view
-- of the same name read on every shard at once (PL/Proxy RUN ON ALL, in
-- parallel) with a first column shard (the shard that answered, from its
-- pepsi.shard_self): the same columns as on a shard, one set of rows per
-- shard, so sum(messages) over queue_overview is the whole queue, and
-- where shard = n it is shard n's own view. A shard that does not answer
-- makes the view fail (PL/Proxy's error, XX000, names the shard's
-- dbname): a partial view would read as a healthy one.

begin;

create function pepsi_router.queue_overview_all()
returns table (shard int, tube text, stage text, status pepsi.workqueue_status, messages bigint, oldest_age interval, next_retry timestamptz)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.tube, v.stage, v.status, v.messages, v.oldest_age, v.next_retry from pepsi.queue_overview v;
$$;

comment on function pepsi_router.queue_overview_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.queue_overview on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.queue_overview as select * from pepsi_router.queue_overview_all();

comment on view pepsi.queue_overview is
    'Router (issue 18): per shard, tube, stage and status: messages, age of the oldest, next retry of paused rows; the shard''s pepsi.queue_overview with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.queue_overview_all() from public;
grant execute on function pepsi_router.queue_overview_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.queue_overview to pepsi_reader, pepsi_runner;

create function pepsi_router.failed_all()
returns table (shard int, workqueue_id bigint, tube text, stage text, status pepsi.workqueue_status, failed_stage text, failure_class text, last_error text, strikes int, sender_key text, arrived_at timestamptz)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.workqueue_id, v.tube, v.stage, v.status, v.failed_stage, v.failure_class, v.last_error, v.strikes, v.sender_key, v.arrived_at from pepsi.failed v;
$$;

comment on function pepsi_router.failed_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.failed on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.failed as select * from pepsi_router.failed_all();

comment on view pepsi.failed is
    'Router (issue 18): failed and timed-out rows of every shard; the shard''s pepsi.failed with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.failed_all() from public;
grant execute on function pepsi_router.failed_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.failed to pepsi_reader, pepsi_runner;

create function pepsi_router.stuck_all()
returns table (shard int, workqueue_id bigint, tube text, stage text, sender_key text, claimed_at timestamptz, running_for interval, arrived_at timestamptz, state jsonb)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.workqueue_id, v.tube, v.stage, v.sender_key, v.claimed_at, v.running_for, v.arrived_at, v.state from pepsi.stuck v;
$$;

comment on function pepsi_router.stuck_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.stuck on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.stuck as select * from pepsi_router.stuck_all();

comment on view pepsi.stuck is
    'Router (issue 18): rows running longer than each shards pepsi.stuck_after; the shard''s pepsi.stuck with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.stuck_all() from public;
grant execute on function pepsi_router.stuck_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.stuck to pepsi_reader, pepsi_runner;

create function pepsi_router.sender_backlog_all()
returns table (shard int, stage text, sender_key text, waiting bigint, oldest_age interval, oldest_workqueue_id bigint)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.stage, v.sender_key, v.waiting, v.oldest_age, v.oldest_workqueue_id from pepsi.sender_backlog v;
$$;

comment on function pepsi_router.sender_backlog_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.sender_backlog on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.sender_backlog as select * from pepsi_router.sender_backlog_all();

comment on view pepsi.sender_backlog is
    'Router (issue 18): waiting rows per shard, stage and sender; the shard''s pepsi.sender_backlog with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.sender_backlog_all() from public;
grant execute on function pepsi_router.sender_backlog_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.sender_backlog to pepsi_reader, pepsi_runner;

create function pepsi_router.stage_totals_all()
returns table (shard int, stage text, stages_executed numeric, runs numeric, run_usec numeric, avg_usec numeric, succeeded numeric, failed numeric, tempfailed numeric, strikes numeric, requeued numeric, updated_at timestamptz)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.stage, v.stages_executed, v.runs, v.run_usec, v.avg_usec, v.succeeded, v.failed, v.tempfailed, v.strikes, v.requeued, v.updated_at from pepsi.stage_totals v;
$$;

comment on function pepsi_router.stage_totals_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.stage_totals on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.stage_totals as select * from pepsi_router.stage_totals_all();

comment on view pepsi.stage_totals is
    'Router (issue 18): each shards stage_totals (stage_stats summed over its owner slots); the shard''s pepsi.stage_totals with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.stage_totals_all() from public;
grant execute on function pepsi_router.stage_totals_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.stage_totals to pepsi_reader, pepsi_runner;

create function pepsi_router.anomaly_dashboard_all()
returns table (shard int, check_name text, state text, severity text, family text, value numeric, unit text, expected text, subject text, since timestamptz, evaluated_at timestamptz, detail text, description text)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select (select s.shard from pepsi.shard_self s) as shard, v.check_name, v.state, v.severity, v.family, v.value, v.unit, v.expected, v.subject, v.since, v.evaluated_at, v.detail, v.description from pepsi.anomaly_dashboard v;
$$;

comment on function pepsi_router.anomaly_dashboard_all() is
    'Internal (issue 18): PL/Proxy read of pepsi.anomaly_dashboard on every shard (RUN ON ALL), with the shard that answered.';

create view pepsi.anomaly_dashboard as select * from pepsi_router.anomaly_dashboard_all();

comment on view pepsi.anomaly_dashboard is
    'Router (issue 18): every anomaly check of every shard: value, range, state and since when; the shard''s pepsi.anomaly_dashboard with a first column shard, read on every shard (RUN ON ALL).';

revoke all on function pepsi_router.anomaly_dashboard_all() from public;
grant execute on function pepsi_router.anomaly_dashboard_all() to pepsi_reader, pepsi_runner;
grant select on pepsi.anomaly_dashboard to pepsi_reader, pepsi_runner;

commit;
