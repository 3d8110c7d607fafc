-- Anomaly checks, latency family (W-39): each is silent on a healthy
-- state and fires on a crafted bad one.

begin;
select plan(20);

create function pg_temp.state_of(p_name text, p_now timestamptz default now())
returns text language sql as $$ select e.state from pepsi.anomaly_evaluate(p_name, p_now) e $$;
create function pg_temp.subject_of(p_name text)
returns text language sql as $$ select e.subject from pepsi.anomaly_evaluate(p_name, now()) e $$;

-- A healthy state: events processed within a second, fresh messages.
select pepsi.webhook_provider_add('good', 'github', '{s}', 'deliver');
select pepsi.webhook_provider_add('slow', 'github', '{s}', 'deliver');
insert into pepsi.webhook_events (provider, external_id, payload, received_at, processed_at)
select p, p || n, 'x', now() - interval '30 minutes', now() - interval '30 minutes' + interval '1 second'
  from generate_series(1, 50) n, unnest(array['good', 'slow']) p;
insert into pepsi.webhook_events (provider, external_id, payload, received_at)
values ('good', 'fresh', 'x', now() - interval '1 minute'), ('slow', 'fresh', 'x', now() - interval '1 minute');
select pepsi.workqueue_inject('deliver', p_arrived_at => now() - interval '1 minute');
select pepsi.workqueue_inject('retry', p_arrived_at => now() - interval '1 hour') as paused \gset
update pepsi.workqueue set status = 'paused', timeout = now() + interval '5 minutes' where workqueue_id = :paused;
select pepsi.workqueue_inject('deliver', p_arrived_at => now() - interval '2 minutes') as running \gset
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '1 minute' where workqueue_id = :running;
select pepsi.anomaly_refresh();

select is(pg_temp.state_of('event_latency_p50'), 'ok', 'W-39: event_latency_p50 is silent when events take a second');
select is(pg_temp.state_of('event_latency_p95'), 'ok', 'W-39: event_latency_p95 is silent');
select is(pg_temp.state_of('event_latency_p99'), 'ok', 'W-39: event_latency_p99 is silent');
select is(pg_temp.state_of('oldest_unprocessed_event'), 'ok', 'W-39: oldest_unprocessed_event is silent at a minute');
select is(pg_temp.state_of('time_since_last_event'), 'ok', 'time_since_last_event is silent when events keep coming');
select is(pg_temp.state_of('oldest_pending_message'), 'ok', 'oldest_pending_message is silent at a minute');
select is(pg_temp.state_of('oldest_paused_message'), 'ok', 'oldest_paused_message is silent at an hour');
select is(pg_temp.state_of('paused_overdue'), 'ok', 'paused_overdue is silent while the retry time is ahead');
select is(pg_temp.state_of('longest_running_message'), 'ok', 'longest_running_message is silent at a minute');

-- Bad states.
insert into pepsi.webhook_events (provider, external_id, payload, received_at, processed_at)
select 'slow', 'late' || n, 'x', now() - interval '50 minutes', now() - interval '50 minutes' + interval '20 minutes'
  from generate_series(1, 60) n;
insert into pepsi.webhook_events (provider, external_id, payload, received_at)
values ('slow', 'stuck', 'x', now() - interval '2 hours');
select pepsi.webhook_provider_add('quiet', 'github', '{s}', 'deliver');
update pepsi.webhook_provider set created_at = now() - interval '3 days' where provider = 'quiet';
select pepsi.workqueue_inject('deliver', p_arrived_at => now() - interval '1 hour');
update pepsi.workqueue set timeout = now() - interval '10 minutes', arrived_at = now() - interval '6 days'
 where workqueue_id = :paused;
update pepsi.workqueue set claimed_at = now() - interval '2 hours' where workqueue_id = :running;
select pepsi.anomaly_refresh();

select is(pg_temp.state_of('event_latency_p50'), 'firing', 'W-39: event_latency_p50 fires when most events take 20 minutes');
select is(pg_temp.subject_of('event_latency_p50'), 'slow', 'W-39: and names the provider');
select is(pg_temp.state_of('event_latency_p95'), 'firing', 'W-39: event_latency_p95 fires');
select is(pg_temp.state_of('event_latency_p99'), 'firing', 'W-39: event_latency_p99 fires');
select is(pg_temp.state_of('oldest_unprocessed_event'), 'firing', 'W-39: oldest_unprocessed_event fires at two hours');
select is(pg_temp.state_of('time_since_last_event'), 'firing', 'time_since_last_event fires for a provider silent for days');
select is(pg_temp.subject_of('time_since_last_event'), 'quiet', 'and names it');
select is(pg_temp.state_of('oldest_pending_message'), 'firing', 'oldest_pending_message fires at an hour');
select is(pg_temp.state_of('oldest_paused_message'), 'firing', 'oldest_paused_message fires past 120 hours');
select is(pg_temp.state_of('paused_overdue'), 'firing', 'paused_overdue fires 10 minutes past the retry time');
select is(pg_temp.state_of('longest_running_message'), 'firing', 'longest_running_message fires at two hours');

select * from finish();
rollback;
