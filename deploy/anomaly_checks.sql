-- Deploy pepsi:anomaly_checks to pg
-- requires: reconcile
-- requires: views
-- requires: control_signal
-- requires: workqueue_delete
-- requires: topology
--
-- The anomaly-check suite (W-37..W-43): named checks in a registry table,
-- each comparing one metric with its expected range. A check's metric is
-- a query kept in the table, returning rows (subject, value): one value
-- per provider, stage, table ... ($1 is the evaluation's clock, p_now).
-- The check fires when any subject's value leaves [min_value, max_value]
-- (a NULL bound is open); no rows, or only NULL values, is "no_data".
-- Thresholds are tuned values, not derived ones (W-43): change them with
-- anomaly_check_set, without a deploy; the next run uses them.
--
-- Most metrics read four materialized views (W-38) that pepsi.anomaly_run
-- refreshes with REFRESH MATERIALIZED VIEW CONCURRENTLY (each has a
-- unique index, which CONCURRENTLY needs): readers are never blocked and
-- the checks add no reads to the tables ingestion writes while they are
-- evaluated:
--   anomaly_event_mv   per provider: events of the last 25 hours (through
--                      a BRIN index on received_at), received→processed
--                      latency p50/p95/p99 of the last hour, unprocessed
--                      events and the oldest (through the partial index
--                      webhook_events_unprocessed_idx), the last event
--   anomaly_queue_mv   per stage and status: messages, oldest arrival,
--                      oldest claim, earliest paused timeout
--   anomaly_orphan_mv  per kind of orphan: how many, and one example
--   anomaly_gap_mv     per provider: open gaps, the oldest, failed back-fills
-- Rates of counters (stage failures, ingress duplicates and rejections)
-- come from anomaly_sample: each run keeps a snapshot of the cumulative
-- counters, and a rate is the difference over a window. Health checks
-- read PostgreSQL's own statistics views, which cost nothing to read.
--
-- anomaly_run() evaluates every check, keeps each one's state and since
-- when (anomaly_state), records a signal per episode out of range
-- (anomaly_signal), and when a check starts firing sends NOTIFY reconcile:
-- the runner answers with a reconciliation pass at once (W-41), subject
-- to the pass's try-lock (W-27).

begin;

-- Lets the 25-hour window of anomaly_event_mv skip the older events. BRIN:
-- a few pages for the whole table, and received_at is already in the
-- partial index webhook_events_unprocessed_idx, so no update that was HOT
-- stops being HOT.
create index webhook_events_received_at_brin on pepsi.webhook_events using brin (received_at);

-- ---- counters the ingress reports ----

create table pepsi.ingress_stats (
    instance   text not null
               constraint ingress_stats_instance_check check (instance <> '' and octet_length(instance) <= 200),
    counter    text not null
               constraint ingress_stats_counter_check
               check (counter ~ '^(stored|duplicate|rejected\.[a-z][a-z0-9_]{0,62})$'),
    value      bigint not null default 0,
    updated_at timestamptz not null default now(),
    constraint ingress_stats_pkey primary key (instance, counter)
);

comment on table pepsi.ingress_stats is
    'Cumulative counters of each ingress instance: stored (new events), duplicate (redeliveries), rejected.<reason>. Written with ingress_stats_flush; the duplicate_rate and rejection_rate checks read their rates.';

create function pepsi.ingress_stats_flush(p_instance text, p_deltas jsonb, p_now timestamptz default now())
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Adds an ingress instance's counter deltas, e.g. {"stored": 120,
-- "duplicate": 3, "rejected.bad_signature": 2}, in one statement.
-- Counter names: stored, duplicate, rejected.<reason> (the reasons of
-- GET /metrics). Raises PX003 (no instance, not an object of
-- non-negative integers, an unknown counter, a NULL p_now).
-- Tables: ingress_stats.
begin
    if p_instance is null or p_instance = '' or octet_length(p_instance) > 200 then
        raise exception 'invalid ingress instance name' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if p_deltas is null or jsonb_typeof(p_deltas) <> 'object' or exists (
            select 1 from jsonb_each_text(p_deltas) d
             where d.value !~ '^[0-9]{1,18}$'
                or d.key !~ '^(stored|duplicate|rejected\.[a-z][a-z0-9_]{0,62})$') then
        raise exception 'ingress counters must be {"stored"|"duplicate"|"rejected.<reason>": N, ...}'
            using errcode = 'PX003';
    end if;
    insert into pepsi.ingress_stats as s (instance, counter, value, updated_at)
    select p_instance, d.key, d.value::bigint, p_now from jsonb_each_text(p_deltas) d
    on conflict (instance, counter) do update
       set value = s.value + excluded.value, updated_at = excluded.updated_at;
end
$$;

-- ---- the materialized views ----

create materialized view pepsi.anomaly_event_mv as
-- Per provider (every provider, and any provider name found on events
-- without a provider row): the last 25 hours of events and the
-- unprocessed ones (but for those whose message an operator deleted on
-- purpose: workqueue_tombstones, issue 12). Ages are computed by the
-- checks from the timestamps, against the evaluation's clock.
with recent as (
    select e.provider, e.received_at, e.processed_at
      from pepsi.webhook_events e
     where e.received_at >= now() - interval '25 hours'
), per as (
    select r.provider,
           count(*) filter (where r.received_at >= now() - interval '15 minutes') as received_15m,
           count(*) filter (where r.received_at < now() - interval '1 hour') as received_baseline,
           count(*) filter (where r.processed_at >= now() - interval '1 hour') as processed_1h,
           percentile_cont(0.50) within group (order by extract(epoch from r.processed_at - r.received_at)::float8)
               filter (where r.processed_at >= now() - interval '1 hour') as latency_p50,
           percentile_cont(0.95) within group (order by extract(epoch from r.processed_at - r.received_at)::float8)
               filter (where r.processed_at >= now() - interval '1 hour') as latency_p95,
           percentile_cont(0.99) within group (order by extract(epoch from r.processed_at - r.received_at)::float8)
               filter (where r.processed_at >= now() - interval '1 hour') as latency_p99,
           max(r.received_at) as last_received_at
      from recent r
     group by r.provider
), unprocessed as (
    select e.provider, count(*) as unprocessed, min(e.received_at) as oldest_unprocessed_at
      from pepsi.webhook_events e
     where e.processed_at is null
       and not exists (select 1 from pepsi.workqueue_tombstones t where t.webhook_event_id = e.webhook_event_id)
     group by e.provider
), names as (
    select p.provider from pepsi.webhook_provider p
    union select x.provider from per x
    union select u.provider from unprocessed u
)
select n.provider, wp.provider is not null as known, coalesce(wp.stage is null, false) as pulled,
       coalesce(wp.enabled, false) as enabled, wp.created_at as provider_created_at,
       coalesce(x.received_15m, 0) as received_15m, coalesce(x.received_baseline, 0) as received_baseline,
       coalesce(x.processed_1h, 0) as processed_1h,
       x.latency_p50, x.latency_p95, x.latency_p99, x.last_received_at,
       coalesce(u.unprocessed, 0) as unprocessed, u.oldest_unprocessed_at,
       now() as refreshed_at
  from names n
  left join pepsi.webhook_provider wp on wp.provider = n.provider
  left join per x on x.provider = n.provider
  left join unprocessed u on u.provider = n.provider;

create unique index anomaly_event_mv_key on pepsi.anomaly_event_mv (provider);

create materialized view pepsi.anomaly_queue_mv as
-- Per stage and status: messages, oldest arrival, oldest claim, earliest
-- paused timeout. One scan of the workqueue per refresh.
select w.stage, w.status::text as status, count(*) as messages, min(w.arrived_at) as oldest_arrived_at,
       min(w.claimed_at) as oldest_claimed_at, min(w.timeout) as earliest_timeout, now() as refreshed_at
  from pepsi.workqueue w
 group by w.stage, w.status;

create unique index anomaly_queue_mv_key on pepsi.anomaly_queue_mv (stage, status);

create materialized view pepsi.anomaly_orphan_mv as
-- Orphaned and contradictory records (W-40), one row per kind: how many
-- and an example (the smallest id). Webhook messages are read once,
-- through the partial index on webhook_event_id (issue 13).
with hooked as materialized (
    select w.workqueue_id, w.status, w.state->>'webhook_provider' as provider, w.state->>'external_id' as external_id,
           w.webhook_event_id as event_id
      from pepsi.workqueue w
     where w.webhook_event_id is not null
), linked as materialized (
    select h.*, e.webhook_event_id as found_id, e.provider as e_provider, e.external_id as e_external_id,
           e.processed_at
      from hooked h
      left join pepsi.webhook_events e on e.webhook_event_id = h.event_id
), kinds as (
    select 'messages_missing_body'::text as kind, count(*) as found, 'message ' || min(w.workqueue_id) as example
      from pepsi.workqueue w
     where w.body_id is not null
       and not exists (select 1 from pepsi.workqueue_body b where b.body_id = w.body_id)
    union all
    select 'messages_missing_event', count(*), 'message ' || min(l.workqueue_id)
      from linked l where l.found_id is null
    union all
    select 'bodies_without_message', count(*), 'body ' || min(b.body_id)
      from pepsi.workqueue_body b
     where b.created_at < now() - interval '10 minutes'
       and not exists (select 1 from pepsi.workqueue w where w.body_id = b.body_id)
    union all
    select 'unprocessed_events_without_message', count(*), 'event ' || min(e.webhook_event_id)
      from pepsi.webhook_events e
      join pepsi.webhook_provider p on p.provider = e.provider and p.stage is not null
     where e.processed_at is null
       and e.received_at < now() - (select s.lost_after from pepsi.reconcile_settings s)
       -- against the webhook messages read once above (through the partial
       -- index, issue 13), never a scan of the whole queue per event (which
       -- a stale estimate of webhook_events once turned into minutes per
       -- refresh)
       and not exists (select 1 from hooked h where h.event_id = e.webhook_event_id)
       -- deleted on purpose (workqueue_delete), not lost: issue 12
       and not exists (select 1 from pepsi.workqueue_tombstones t where t.webhook_event_id = e.webhook_event_id)
    union all
    select 'processed_events_with_live_message', count(*), 'event ' || min(l.found_id)
      from linked l where l.processed_at is not null and l.status in ('pending', 'running', 'paused')
    union all
    select 'tombstones_for_existing_events', count(*), min(t.provider || '/' || t.external_id)
      from pepsi.webhook_tombstones t
     where exists (select 1 from pepsi.webhook_events e where e.provider = t.provider and e.external_id = t.external_id)
    union all
    select 'events_of_unknown_provider', coalesce(sum(m.unprocessed + m.received_15m + m.received_baseline), 0),
           min(m.provider)
      from pepsi.anomaly_event_mv m where not m.known
    union all
    select 'message_event_mismatch', count(*), 'message ' || min(l.workqueue_id)
      from linked l
     where l.found_id is not null
       and (l.provider is distinct from l.e_provider or l.external_id is distinct from l.e_external_id)
)
select k.kind, k.found, k.example, now() as refreshed_at from kinds k;

create unique index anomaly_orphan_mv_key on pepsi.anomaly_orphan_mv (kind);

create materialized view pepsi.anomaly_gap_mv as
-- Per provider with an id sequence or gaps: unresolved gaps, the oldest,
-- failed back-fills.
select s.provider,
       count(g.external_id) filter (where g.resolved_at is null) as open_gaps,
       min(g.first_seen_at) filter (where g.resolved_at is null) as oldest_open_at,
       count(g.external_id) filter (where g.state = 'failed') as failed_backfills,
       now() as refreshed_at
  from (select q.provider from pepsi.webhook_id_sequence q union select x.provider from pepsi.webhook_gaps x) s
  left join pepsi.webhook_gaps g on g.provider = s.provider
 group by s.provider;

create unique index anomaly_gap_mv_key on pepsi.anomaly_gap_mv (provider);

-- ---- counter snapshots ----

create table pepsi.anomaly_sample (
    source     text not null,
    counter    text not null,
    subject    text not null,
    sampled_at timestamptz not null,
    value      bigint not null,
    constraint anomaly_sample_pkey primary key (source, counter, subject, sampled_at)
);

comment on table pepsi.anomaly_sample is
    'Snapshots of cumulative counters taken by each anomaly_run (kept two days): source stage (per stage: stages_executed, failed, strikes, tempfailed), ingress (subject all: stored, duplicate; subject <reason>: rejected) table (per queue table: modified, rows inserted + updated + deleted, for dead_tuple_ratio) and dispatcher (subject owner slot N: holders, the sessions holding its dispatcher lock, for dispatcher_lock; the latest of each slot is kept past two days). Rates are differences over a window (anomaly_delta).';

create function pepsi.dispatcher_slots()
returns table (owner_slot int, holders int)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Each owner slot of the partition map (slot 0 alone when there is no
-- map) and how many sessions hold its dispatcher lock now (advisory lock
-- pepsi.lock_key('dispatcher', slot), the runner's session lock: 0 or 1).
-- Read by anomaly_sample_take and the dispatcher_lock check (issue 14).
-- Tables: partition_map, pg_locks (read).
    select s.slot, (select count(*)::int from pg_catalog.pg_locks l
                     where l.locktype = 'advisory' and l.granted and l.objsubid = 2
                       and l.classid = k.class_id::oid and l.objid = k.object_id::oid
                       and l.database = (select d.oid from pg_catalog.pg_database d
                                          where d.datname = current_database()))
      from (select distinct m.owner_slot as slot from pepsi.partition_map m
            union
            select 0 where not exists (select 1 from pepsi.partition_map)) s
           cross join lateral pepsi.lock_key('dispatcher', s.slot) k
$$;

create function pepsi.anomaly_sample_take(p_now timestamptz)
returns void
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Snapshots the counters of stage_stats (summed over owner slots),
-- ingress_stats (summed over instances), the rows written to each
-- queue table (workqueue, workqueue_body, webhook_events: n_tup_ins +
-- n_tup_upd + n_tup_del, which dead_tuple_ratio needs) and the holders
-- of each owner slot's dispatcher lock (source dispatcher, counter
-- holders, subject "owner slot N": when a slot was first seen without a
-- runner, for the dispatcher_lock check, issue 14) at p_now, each only
-- when it differs from its latest snapshot, so that an idle queue writes
-- nothing (D-139, issue 12; anomaly_delta reads an unchanged counter's
-- latest snapshot as it is), and forgets snapshots older than two days
-- but the latest of each dispatcher series (a slot down for days is
-- still down since then). Tables: anomaly_sample; stage_stats,
-- ingress_stats, pg_stat_user_tables, partition_map, pg_locks (read).
    insert into pepsi.anomaly_sample (source, counter, subject, sampled_at, value)
    select n.source, n.counter, n.subject, p_now, n.value
      from (select 'stage'::text as source, c.counter, s.stage as subject, c.value
              from (select t.stage, sum(t.stages_executed)::bigint as executed, sum(t.failed)::bigint as failed,
                           sum(t.strikes)::bigint as strikes, sum(t.tempfailed)::bigint as tempfailed
                      from pepsi.stage_stats t group by t.stage) s
             cross join lateral (values ('stages_executed', s.executed), ('failed', s.failed), ('strikes', s.strikes),
                                        ('tempfailed', s.tempfailed)) as c(counter, value)
            union all
            select 'ingress', case when i.counter like 'rejected.%' then 'rejected' else i.counter end,
                   case when i.counter like 'rejected.%' then substr(i.counter, 10) else 'all' end, sum(i.value)::bigint
              from pepsi.ingress_stats i
             group by i.counter
            union all
            select 'table', 'modified', t.relname::text, (t.n_tup_ins + t.n_tup_upd + t.n_tup_del)::bigint
              from pg_catalog.pg_stat_user_tables t
             where t.schemaname = 'pepsi' and t.relname in ('workqueue', 'workqueue_body', 'webhook_events')
            union all
            select 'dispatcher', 'holders', 'owner slot ' || d.owner_slot, d.holders
              from pepsi.dispatcher_slots() d) n
     where n.value is distinct from (select l.value from pepsi.anomaly_sample l
                                      where l.source = n.source and l.counter = n.counter and l.subject = n.subject
                                        and l.sampled_at <= p_now
                                      order by l.sampled_at desc limit 1)
    on conflict on constraint anomaly_sample_pkey do nothing;
    delete from pepsi.anomaly_sample s
     where s.sampled_at < p_now - interval '2 days'
       and (s.source <> 'dispatcher'
            or exists (select 1 from pepsi.anomaly_sample n
                        where n.source = s.source and n.counter = s.counter and n.subject = s.subject
                          and n.sampled_at > s.sampled_at));
$$;

create function pepsi.anomaly_delta(p_source text, p_counter text, p_window interval, p_now timestamptz)
returns table (subject text, delta bigint, span interval)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- How much a counter grew per subject between its latest snapshot at or
-- before p_now and the latest one at least p_window older. A counter that
-- went down (statistics reset) gives no row. Tables: anomaly_sample (read).
    with latest as (
        select distinct on (s.subject) s.subject, s.sampled_at, s.value
          from pepsi.anomaly_sample s
         where s.source = p_source and s.counter = p_counter and s.sampled_at <= p_now
         order by s.subject, s.sampled_at desc
    ), older as (
        select distinct on (s.subject) s.subject, s.sampled_at, s.value
          from pepsi.anomaly_sample s
         where s.source = p_source and s.counter = p_counter and s.sampled_at <= p_now - p_window
         order by s.subject, s.sampled_at desc
    )
    select l.subject, l.value - o.value, l.sampled_at - o.sampled_at
      from latest l
      join older o on o.subject = l.subject
     where l.value >= o.value
$$;

-- ---- the registry, state and signals ----

create table pepsi.anomaly_check (
    name        text
                constraint anomaly_check_pkey primary key
                constraint anomaly_check_name_check check (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    family      text not null
                constraint anomaly_check_family_check
                check (family in ('latency', 'referential', 'volume', 'health')),
    description text not null,
    metric      text not null,
    reads       text not null
                constraint anomaly_check_reads_check check (reads in ('matview', 'samples', 'live')),
    unit        text not null default '',
    min_value   numeric,
    max_value   numeric,
    severity    text not null default 'warning'
                constraint anomaly_check_severity_check check (severity in ('info', 'warning', 'critical')),
    enabled     boolean not null default true,
    updated_at  timestamptz not null default now(),
    constraint anomaly_check_range_check
        check ((min_value is not null or max_value is not null)
               and (min_value is null or max_value is null or min_value <= max_value))
);

comment on table pepsi.anomaly_check is
    'The anomaly checks (W-37): what each measures (metric: a query returning subject, value; $1 is the clock), the expected range, severity, whether enabled. Tune with anomaly_check_set (W-43).';

create table pepsi.anomaly_state (
    check_name   text
                 constraint anomaly_state_pkey primary key
                 constraint anomaly_state_check_name_fkey references pepsi.anomaly_check (name) on delete cascade,
    state        text not null
                 constraint anomaly_state_state_check
                 check (state in ('ok', 'firing', 'no_data', 'error', 'disabled')),
    value        numeric,
    subject      text,
    detail       text,
    since        timestamptz not null,
    evaluated_at timestamptz not null
);

comment on table pepsi.anomaly_state is
    'Each check''s latest evaluation: state, the value reported (the worst subject when firing), and since when the state holds.';

create table pepsi.anomaly_signal (
    signal_id  bigint generated always as identity
               constraint anomaly_signal_pkey primary key,
    check_name text not null
               constraint anomaly_signal_check_name_fkey references pepsi.anomaly_check (name) on delete cascade,
    severity   text not null,
    raised_at  timestamptz not null,
    cleared_at timestamptz,
    value      numeric,
    last_value numeric,
    subject    text,
    detail     text
);

comment on table pepsi.anomaly_signal is
    'One row per episode of a check out of range: raised_at, cleared_at (NULL while firing), the value when raised and the latest.';

create unique index anomaly_signal_open_key on pepsi.anomaly_signal (check_name) where cleared_at is null;

-- ---- evaluation ----

create function pepsi.anomaly_refresh(p_view text default null)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Refreshes the checks' materialized views, CONCURRENTLY (W-38): readers
-- of the old contents are not blocked. p_view names one of them
-- (anomaly_event_mv, anomaly_queue_mv, anomaly_orphan_mv, anomaly_gap_mv);
-- NULL refreshes all four, anomaly_event_mv first (anomaly_orphan_mv
-- reads it). The runner's maintenance refreshes one view per statement,
-- so that no transaction of it holds the xmin horizon back for the whole
-- suite (issue 12). A view another session is refreshing is skipped
-- (advisory try-lock pepsi.lock_key('anomaly_refresh', n), transaction-level): returns
-- false when any was. Raises PX003 for an unknown view.
-- Tables: the four anomaly_*_mv.
declare
    v_views constant text[] := array['anomaly_event_mv', 'anomaly_queue_mv', 'anomaly_orphan_mv', 'anomaly_gap_mv'];
    v_all boolean := true;
begin
    if p_view is not null and not p_view = any(v_views) then
        raise exception 'unknown anomaly view "%"', p_view
            using errcode = 'PX003', hint = 'One of ' || array_to_string(v_views, ', ') || '.';
    end if;
    for i in 1 .. cardinality(v_views) loop
        continue when p_view is not null and v_views[i] <> p_view;
        if (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('anomaly_refresh', i) k) then
            execute format('refresh materialized view concurrently pepsi.%I', v_views[i]);
        else
            v_all := false;
        end if;
    end loop;
    return v_all;
end
$$;

create function pepsi.anomaly_evaluate(p_name text, p_now timestamptz default now())
returns table (state text, value numeric, subject text, detail text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Evaluates check p_name at p_now without recording anything (the
-- materialized views as they were last refreshed): disabled; error (the
-- metric query failed: detail has the message); no_data (no subject has
-- a value); firing (some subject out of range: value and subject are the
-- one farthest out); ok (value and subject are the one closest to a
-- bound). detail says how many subjects are out of range.
-- Raises PX003 (a NULL p_now), PX024 (unknown check). Tables: anomaly_check and what its metric reads.
declare
    v_check pepsi.anomaly_check;
    v_rows jsonb;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select * into v_check from pepsi.anomaly_check c where c.name = p_name;
    if not found then
        raise exception 'unknown anomaly check "%"', coalesce(p_name, '<null>') using errcode = 'PX024';
    end if;
    if not v_check.enabled then
        return query select 'disabled'::text, null::numeric, null::text, null::text;
        return;
    end if;
    begin
        execute format('select coalesce(jsonb_agg(jsonb_build_object(''s'', m.subject::text, ''v'', m.value::numeric)), ''[]'')'
                       ' from (%s) as m(subject, value)', v_check.metric)
           into v_rows using p_now;
    exception when others then
        return query select 'error'::text, null::numeric, null::text, sqlerrm;
        return;
    end;
    return query
    with r as (
        select x.s, x.v,
               (v_check.min_value is not null and x.v < v_check.min_value)
               or (v_check.max_value is not null and x.v > v_check.max_value) as out_of_range,
               greatest(coalesce(v_check.min_value - x.v, 0), coalesce(x.v - v_check.max_value, 0)) as excess
          from jsonb_to_recordset(v_rows) as x(s text, v numeric)
         where x.v is not null
    ), summary as (
        select count(*) as n, count(*) filter (where r.out_of_range) as n_out from r
    ), pick as (
        select r.* from r
         order by r.out_of_range desc, r.excess desc,
                  case when v_check.max_value is not null then -r.v else r.v end, r.s
         limit 1
    )
    select case when s.n = 0 then 'no_data' when s.n_out > 0 then 'firing' else 'ok' end,
           p.v, p.s,
           case when s.n = 0 then null
                else format('%s of %s out of range', s.n_out, s.n) end
      from summary s
      left join pick p on true;
end
$$;

create function pepsi.anomaly_run(p_now timestamptz default now(), p_refresh boolean default true)
returns table (check_name text, state text, value numeric, subject text, changed boolean)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Runs the suite (W-37..W-43): refreshes the materialized views (unless
-- p_refresh is false), snapshots the counters, evaluates every check
-- (anomaly_evaluate; one check's error does not stop the others), keeps
-- each state with since when it holds, opens a signal when a check starts
-- firing and closes it when it stops, and, when any check started firing,
-- sends NOTIFY reconcile so that a reconciliation pass runs at once
-- (W-41). A check that keeps firing does not notify again: the pass it
-- started, and the scheduled ones, take it from there. One run at a time:
-- a run that finds another under way (advisory lock
-- pepsi.lock_key('anomaly_evaluate'), transaction-level) returns no rows at once. Returns one row per check.
-- Raises PX003 (no clock). Tables: anomaly_state, anomaly_signal,
-- anomaly_sample (write), the materialized views (refresh), and what the
-- metrics read.
#variable_conflict use_column
declare
    v_check record;
    v_res record;
    v_old record;
    v_had boolean;
    v_started boolean := false;
begin
    if p_now is null then
        raise exception 'p_now must not be null' using errcode = 'PX003';
    end if;
    if not (select pg_try_advisory_xact_lock(k.class_id, k.object_id) from pepsi.lock_key('anomaly_evaluate') k) then
        return;
    end if;
    if coalesce(p_refresh, true) then
        perform pepsi.anomaly_refresh(null);
    end if;
    perform pepsi.anomaly_sample_take(p_now);
    for v_check in select c.name, c.severity, coalesce(c.max_value, c.min_value) as bound
                     from pepsi.anomaly_check c order by c.name loop
        select * into v_res from pepsi.anomaly_evaluate(v_check.name, p_now);
        select s.state, s.value, s.subject, s.detail, s.since into v_old
          from pepsi.anomaly_state s where s.check_name = v_check.name;
        v_had := found;
        -- An unchanged result writes nothing, not even a row lock (D-139).
        -- Changed means: another state; for a firing check or one in
        -- error, another subject or detail; or a value that moved by more
        -- than 1% of the check's bound. A live measure jitters on an idle
        -- database (the age of the oldest transaction, and which backend
        -- holds it), which is no news while the check is ok. evaluated_at
        -- is when the row was last written.
        if not v_had then
            insert into pepsi.anomaly_state (check_name, state, value, subject, detail, since, evaluated_at)
            values (v_check.name, v_res.state, v_res.value, v_res.subject, v_res.detail, p_now, p_now)
            on conflict on constraint anomaly_state_pkey do nothing;
        elsif v_old.state is distinct from v_res.state
              or (v_res.state in ('firing', 'error')
                  and (v_old.subject, v_old.detail) is distinct from (v_res.subject, v_res.detail))
              or (v_old.value is null) <> (v_res.value is null)
              or abs(v_res.value - v_old.value) > 0.01 * abs(coalesce(v_check.bound, 0)) then
            update pepsi.anomaly_state s
               set state = v_res.state, value = v_res.value, subject = v_res.subject, detail = v_res.detail,
                   evaluated_at = p_now, since = case when s.state = v_res.state then s.since else p_now end
             where s.check_name = v_check.name;
        end if;
        if v_res.state = 'firing' and not (v_had and v_old.state = 'firing') then
            insert into pepsi.anomaly_signal (check_name, severity, raised_at, value, last_value, subject, detail)
            values (v_check.name, v_check.severity, p_now, v_res.value, v_res.value, v_res.subject, v_res.detail)
            on conflict (check_name) where cleared_at is null do nothing;
            v_started := true;
        elsif v_res.state = 'firing' then
            update pepsi.anomaly_signal g set last_value = v_res.value, subject = v_res.subject, detail = v_res.detail
             where g.check_name = v_check.name and g.cleared_at is null
               and (g.last_value, g.subject, g.detail) is distinct from (v_res.value, v_res.subject, v_res.detail);
        elsif v_had and v_old.state = 'firing' then
            update pepsi.anomaly_signal g set cleared_at = p_now
             where g.check_name = v_check.name and g.cleared_at is null;
        end if;
        return query select v_check.name, v_res.state, v_res.value, v_res.subject,
                            not (v_had and v_old.state = v_res.state);
    end loop;
    if v_started then
        perform pepsi.control_signal_send('reconcile');
    end if;
    delete from pepsi.anomaly_signal g where g.cleared_at < p_now - interval '30 days';
end
$$;

create function pepsi.anomaly_check_set(p_name text, p_changes jsonb)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: tunes check p_name without a deploy (W-43). Keys of
-- p_changes: min_value, max_value (a number, or null for an open bound),
-- severity (info, warning, critical), enabled (true/false), description.
-- The next anomaly_run uses the new values.
-- Raises PX003 (not an object, unknown key, wrong type, no bound left,
-- min above max), PX024 (unknown check). Tables: anomaly_check (update).
declare
    v_row pepsi.anomaly_check;
    v_bad text;
begin
    if p_changes is null or jsonb_typeof(p_changes) <> 'object' then
        raise exception 'changes must be a JSON object' using errcode = 'PX003';
    end if;
    select k into v_bad from jsonb_object_keys(p_changes) k
     where k not in ('min_value', 'max_value', 'severity', 'enabled', 'description')
     limit 1;
    if found then
        raise exception 'unknown anomaly check key "%"', v_bad using errcode = 'PX003';
    end if;
    select * into v_row from pepsi.anomaly_check c where c.name = p_name for update;
    if not found then
        raise exception 'unknown anomaly check "%"', coalesce(p_name, '<null>') using errcode = 'PX024';
    end if;
    if (p_changes ? 'min_value' and jsonb_typeof(p_changes->'min_value') not in ('number', 'null'))
       or (p_changes ? 'max_value' and jsonb_typeof(p_changes->'max_value') not in ('number', 'null'))
       or (p_changes ? 'enabled' and jsonb_typeof(p_changes->'enabled') <> 'boolean')
       or (p_changes ? 'severity' and coalesce(p_changes->>'severity', '') not in ('info', 'warning', 'critical'))
       or (p_changes ? 'description' and jsonb_typeof(p_changes->'description') <> 'string') then
        raise exception 'invalid anomaly check settings %', p_changes
            using errcode = 'PX003',
                  hint = 'min_value and max_value: numbers or null; severity: info, warning or critical; enabled: true or false.';
    end if;
    if p_changes ? 'min_value' then v_row.min_value := (p_changes->>'min_value')::numeric; end if;
    if p_changes ? 'max_value' then v_row.max_value := (p_changes->>'max_value')::numeric; end if;
    if p_changes ? 'severity' then v_row.severity := p_changes->>'severity'; end if;
    if p_changes ? 'enabled' then v_row.enabled := (p_changes->>'enabled')::boolean; end if;
    if p_changes ? 'description' then v_row.description := p_changes->>'description'; end if;
    if (v_row.min_value is null and v_row.max_value is null) or v_row.min_value > v_row.max_value then
        raise exception 'check "%" needs a bound, and min_value at most max_value', p_name using errcode = 'PX003';
    end if;
    update pepsi.anomaly_check c
       set min_value = v_row.min_value, max_value = v_row.max_value, severity = v_row.severity,
           enabled = v_row.enabled, description = v_row.description, updated_at = now()
     where c.name = p_name;
end
$$;

-- ---- the checks ----

insert into pepsi.anomaly_check (name, family, reads, unit, min_value, max_value, severity, description, metric) values
-- latency (W-39)
('event_latency_p50', 'latency', 'matview', 's', null, 60, 'warning',
 'Median time from an event being received to being processed, per provider, over events processed in the last hour.',
 $m$select m.provider, m.latency_p50 from pepsi.anomaly_event_mv m where m.processed_1h > 0$m$),
('event_latency_p95', 'latency', 'matview', 's', null, 300, 'warning',
 '95th percentile of received-to-processed time per provider (last hour): a queue quietly falling behind widens it first.',
 $m$select m.provider, m.latency_p95 from pepsi.anomaly_event_mv m where m.processed_1h > 0$m$),
('event_latency_p99', 'latency', 'matview', 's', null, 900, 'warning',
 '99th percentile of received-to-processed time per provider (last hour).',
 $m$select m.provider, m.latency_p99 from pepsi.anomaly_event_mv m where m.processed_1h > 0$m$),
('oldest_unprocessed_event', 'latency', 'matview', 's', null, 900, 'critical',
 'Age of the oldest event not yet processed, per provider (0 when none); an event whose message an operator deleted (workqueue_delete) is not waiting.',
 $m$select m.provider, coalesce(extract(epoch from $1 - m.oldest_unprocessed_at), 0) from pepsi.anomaly_event_mv m$m$),
('time_since_last_event', 'latency', 'matview', 's', null, 86400, 'warning',
 'Time since the last event of each enabled provider (counted from its creation when it never sent one; at least 25 hours when none came in the last 25).',
 $m$select m.provider, extract(epoch from $1 - coalesce(m.last_received_at,
        greatest(m.provider_created_at, m.refreshed_at - interval '25 hours')))
      from pepsi.anomaly_event_mv m where m.known and m.enabled$m$),
('oldest_pending_message', 'latency', 'matview', 's', null, 600, 'warning',
 'Age of the oldest pending message per stage (since it arrived): a stage nobody claims from.',
 $m$select coalesce(q.stage, 'all'), coalesce(extract(epoch from $1 - q.oldest_arrived_at), 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'pending'$m$),
('oldest_paused_message', 'latency', 'matview', 's', null, 432000, 'warning',
 'Age of the oldest paused message per stage: older than MAX_LIFETIME (120 h) it should have failed or bounced.',
 $m$select coalesce(q.stage, 'all'), coalesce(extract(epoch from $1 - q.oldest_arrived_at), 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'paused'$m$),
('paused_overdue', 'latency', 'matview', 's', null, 300, 'warning',
 'How long the most overdue paused message per stage is past its retry time: the paused sweep is not running.',
 $m$select coalesce(q.stage, 'all'), greatest(coalesce(extract(epoch from $1 - q.earliest_timeout), 0), 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'paused'$m$),
('longest_running_message', 'latency', 'matview', 's', null, 3600, 'warning',
 'How long the oldest claim still running per stage has run: past MAX_RUNTIME its worker should have been killed.',
 $m$select coalesce(q.stage, 'all'), coalesce(extract(epoch from $1 - q.oldest_claimed_at), 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'running'$m$),
-- referential: orphaned and contradictory records (W-40)
('messages_missing_body', 'referential', 'matview', 'messages', null, 0, 'critical',
 'Messages whose body_id names no body.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'messages_missing_body'$m$),
('messages_missing_event', 'referential', 'matview', 'messages', null, 0, 'critical',
 'Messages whose state names a webhook event that is not stored.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'messages_missing_event'$m$),
('bodies_without_message', 'referential', 'matview', 'bodies', null, 100, 'info',
 'Bodies older than 10 minutes that no message refers to (workqueue_body_gc collects them after traffic).',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'bodies_without_message'$m$),
('unprocessed_events_without_message', 'referential', 'matview', 'events', null, 0, 'critical',
 'Events of pipeline providers, unprocessed for longer than reconcile lost_after, with no message and no tombstone (workqueue_delete): lost messages.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'unprocessed_events_without_message'$m$),
('processed_events_with_live_message', 'referential', 'matview', 'events', null, 0, 'warning',
 'Events marked processed while a message for them is still pending, running or paused.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'processed_events_with_live_message'$m$),
('tombstones_for_existing_events', 'referential', 'matview', 'tombstones', null, 0, 'warning',
 'Tombstones ("never sent") for ids whose event is stored.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'tombstones_for_existing_events'$m$),
('events_of_unknown_provider', 'referential', 'matview', 'events', null, 0, 'warning',
 'Recent or unprocessed events whose provider has no row in webhook_provider.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'events_of_unknown_provider'$m$),
('message_event_mismatch', 'referential', 'matview', 'messages', null, 0, 'critical',
 'Messages whose state names an event by id but another provider or external id.',
 $m$select coalesce(o.example, 'none'), o.found from pepsi.anomaly_orphan_mv o where o.kind = 'message_event_mismatch'$m$),
('reconcile_findings_open', 'referential', 'live', 'findings', null, 0, 'warning',
 'Findings of reconciliation passes flagged for a person and still open (pepsi.reconcile_open), per kind.',
 $m$select coalesce(f.kind, 'none'), count(f.finding_id)
      from (select 1) one
      left join pepsi.reconcile_findings f on f.resolved_at is null and f.action = 'flagged'
     group by f.kind$m$),
-- volume
('pending_backlog', 'volume', 'matview', 'messages', null, 100000, 'warning',
 'Pending messages per stage.',
 $m$select coalesce(q.stage, 'all'), coalesce(q.messages, 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'pending'$m$),
('failed_messages', 'volume', 'matview', 'messages', null, 10, 'warning',
 'Failed messages waiting for an operator, per stage (pepsi.failed).',
 $m$select coalesce(q.stage, 'all'), coalesce(q.messages, 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'failed'$m$),
('timed_out_messages', 'volume', 'matview', 'messages', null, 0, 'warning',
 'Messages that hung past MAX_RUNTIME three times (status timeout), per stage.',
 $m$select coalesce(q.stage, 'all'), coalesce(q.messages, 0)
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'timeout'$m$),
('ingest_rate_vs_baseline', 'volume', 'matview', 'ratio', 0.1, 10, 'warning',
 'Events per minute of the last 15 minutes against the same provider''s mean of the 24 hours before the last hour (only with at least 100 events in that baseline).',
 $m$select m.provider, (m.received_15m / 15.0) / (m.received_baseline / 1440.0)
      from pepsi.anomaly_event_mv m where m.received_baseline >= 100$m$),
('duplicate_rate', 'volume', 'samples', 'ratio', null, 0.5, 'warning',
 'Share of redeliveries among the deliveries the ingress stored over the last 15 minutes (ingress_stats; at least 50 deliveries).',
 $m$select 'ingress', d.delta::numeric / (d.delta + s.delta)
      from pepsi.anomaly_delta('ingress', 'duplicate', interval '15 minutes', $1) d
      join pepsi.anomaly_delta('ingress', 'stored', interval '15 minutes', $1) s on s.subject = d.subject
     where d.delta + s.delta >= 50$m$),
('rejection_rate', 'volume', 'samples', 'ratio', null, 0.05, 'warning',
 'Share of requests the ingress rejected over the last 15 minutes, per reason (ingress_stats; at least 50 requests).',
 $m$with r as (select * from pepsi.anomaly_delta('ingress', 'rejected', interval '15 minutes', $1)),
         t as (select coalesce((select sum(x.delta) from r x), 0)
                      + coalesce((select sum(y.delta) from pepsi.anomaly_delta('ingress', 'stored', interval '15 minutes', $1) y), 0)
                      + coalesce((select sum(z.delta) from pepsi.anomaly_delta('ingress', 'duplicate', interval '15 minutes', $1) z), 0)
                      as total)
    select r.subject, r.delta::numeric / t.total from r, t where t.total >= 50$m$),
('stage_failure_rate', 'volume', 'samples', 'ratio', null, 0.05, 'warning',
 'Share of worker passes per stage that failed their message over the last 15 minutes (at least 20 passes).',
 $m$select f.subject, f.delta::numeric / x.delta
      from pepsi.anomaly_delta('stage', 'failed', interval '15 minutes', $1) f
      join pepsi.anomaly_delta('stage', 'stages_executed', interval '15 minutes', $1) x on x.subject = f.subject
     where x.delta >= 20$m$),
('stage_strike_rate', 'volume', 'samples', 'ratio', null, 0.01, 'warning',
 'Crash and hang strikes per worker pass, per stage, over the last 15 minutes (at least 20 passes).',
 $m$select f.subject, f.delta::numeric / x.delta
      from pepsi.anomaly_delta('stage', 'strikes', interval '15 minutes', $1) f
      join pepsi.anomaly_delta('stage', 'stages_executed', interval '15 minutes', $1) x on x.subject = f.subject
     where x.delta >= 20$m$),
('stage_tempfail_rate', 'volume', 'samples', 'ratio', null, 0.1, 'warning',
 'Worker passes per stage that reported database overload (status 75) over the last 15 minutes (at least 20 passes).',
 $m$select f.subject, f.delta::numeric / x.delta
      from pepsi.anomaly_delta('stage', 'tempfailed', interval '15 minutes', $1) f
      join pepsi.anomaly_delta('stage', 'stages_executed', interval '15 minutes', $1) x on x.subject = f.subject
     where x.delta >= 20$m$),
('open_gaps', 'volume', 'matview', 'ids', null, 100, 'warning',
 'Ids missing from a provider''s sequence and not resolved yet (waiting for a retry or a back-fill), per provider.',
 $m$select g.provider, g.open_gaps from pepsi.anomaly_gap_mv g$m$),
('oldest_open_gap', 'volume', 'matview', 's', null, 3600, 'warning',
 'How long the oldest unresolved gap per provider has been known.',
 $m$select g.provider, coalesce(extract(epoch from $1 - g.oldest_open_at), 0) from pepsi.anomaly_gap_mv g$m$),
('backfill_failures', 'volume', 'matview', 'ids', null, 0, 'critical',
 'Back-fill requests that failed (the API answered an error, or never answered), per provider.',
 $m$select g.provider, g.failed_backfills from pepsi.anomaly_gap_mv g$m$),
-- health
('reconcile_staleness', 'health', 'live', 's', null, 1800, 'warning',
 'Time since the last reconciliation pass finished (RECONCILE_INTERVAL is 5 minutes by default), while there is something a pass has not seen: 0 when the data has not changed since (scheduled passes then skip, D-139).',
 $m$select 'reconcile', case when pepsi.reconcile_unchanged() then 0
                             else extract(epoch from $1 - max(r.finished_at)) end
      from pepsi.reconcile_runs r
    having max(r.finished_at) is not null$m$),
-- dead_tuple_ratio (issue 12): at full speed most of a queue table is
-- dead rows between two autovacuums (0.958 was seen in a healthy run:
-- few live rows, every hop a dead one), so dead rows now say nothing.
-- What matters is dead rows a vacuum could not remove (a transaction
-- holding the xmin horizon while the queue churns). PostgreSQL 15 keeps
-- no count of those apart, so the check bounds them from below: of the
-- n_dead_tup dead rows now, at most (rows written now - rows written at
-- a snapshot S) died after S, where S is the latest snapshot of the
-- table's counters (anomaly_sample, source table) taken before its last
-- vacuum ended; the rest were dead at S and still are after a later
-- vacuum. Pruning and vacuum only lower n_dead_tup, so the bound errs
-- low. Value: those survivors over live + dead rows.
('dead_tuple_ratio', 'health', 'samples', 'ratio', null, 0.25, 'warning',
 'Share of each queue table (workqueue, workqueue_body, webhook_events; at least 1000 rows) that is dead rows which were already dead before its last vacuum and survived it (a lower bound): something holds the xmin horizon while the queue churns. Dead rows merely waiting for the next autovacuum do not count.',
 $m$select t.relname::text,
           greatest(t.n_dead_tup - ((t.n_tup_ins + t.n_tup_upd + t.n_tup_del) - b.value), 0)::numeric
           / (t.n_live_tup + t.n_dead_tup)
      from pg_catalog.pg_stat_user_tables t
     cross join lateral (
           select a.value from pepsi.anomaly_sample a
            where a.source = 'table' and a.counter = 'modified' and a.subject = t.relname::text
              and a.sampled_at <= $1 and a.sampled_at < greatest(t.last_vacuum, t.last_autovacuum)
            order by a.sampled_at desc limit 1) b
     where t.schemaname = 'pepsi' and t.relname in ('workqueue', 'workqueue_body', 'webhook_events')
       and t.n_live_tup + t.n_dead_tup >= 1000
       and t.n_tup_ins + t.n_tup_upd + t.n_tup_del >= b.value$m$),
('xmin_horizon_age', 'health', 'live', 's', null, 900, 'warning',
 'Age of the oldest transaction holding back the xmin horizon (an open session or a prepared transaction): no dead row younger than it can be vacuumed.',
 $m$select format('pid %s (%s)', a.pid, coalesce(nullif(a.application_name, ''), a.backend_type)),
           extract(epoch from $1 - a.xact_start)
      from pg_catalog.pg_stat_activity a
     where a.backend_xmin is not null and a.xact_start is not null
    union all
    select format('prepared %s', p.gid), extract(epoch from $1 - p.prepared) from pg_catalog.pg_prepared_xacts p$m$),
('connection_usage', 'health', 'live', 'ratio', null, 0.8, 'warning',
 'Client connections against max_connections: near 1, workers start failing with overload (status 75).',
 $m$select 'connections', count(*)::numeric / current_setting('max_connections')::int
      from pg_catalog.pg_stat_activity a where a.backend_type = 'client backend'$m$),
('stats_freshness', 'health', 'live', 's', null, 300, 'critical',
 'While messages wait (pending), the time since each owner slot''s dispatcher last wrote its statistics (every STATS_INTERVAL while it claims): is a dispatcher working? An idle queue reads 0, since an idle dispatcher writes nothing (D-139).',
 $m$select 'owner slot ' || d.owner_slot,
           case when exists (select 1 from pepsi.workqueue w where w.status = 'pending')
                then extract(epoch from $1 - d.updated_at) else 0 end
      from pepsi.dispatch_stats d$m$),
('dispatcher_lock', 'health', 'live', 'dispatchers', 1, 1, 'critical',
 'Per owner slot of the partition map (slot 0 alone without one), the dispatchers holding its lock (advisory lock pepsi.lock_key(''dispatcher'', slot)): exactly one each (issue 14). A slot without one reads 0 once it has been without one for a minute, counted from the first anomaly run that saw it so (a sample of source dispatcher; with ANOMALY_INTERVAL 1min it fires one to two minutes after its runner stopped); until then it reads nothing, so that a runner restarting does not fire. A count over all slots would hide a dead slot behind a live one.',
 $m$select 'owner slot ' || d.owner_slot,
           case when d.holders > 0 then d.holders
                when $1 - u.since >= interval '1 minute' then 0 end
      from pepsi.dispatcher_slots() d
      left join lateral (
           select min(a.sampled_at) as since
             from pepsi.anomaly_sample a
            where a.source = 'dispatcher' and a.counter = 'holders' and a.subject = 'owner slot ' || d.owner_slot
              and a.value = 0 and a.sampled_at <= $1
              and a.sampled_at > coalesce((select max(b.sampled_at) from pepsi.anomaly_sample b
                                            where b.source = a.source and b.counter = a.counter
                                              and b.subject = a.subject and b.value > 0 and b.sampled_at <= $1),
                                          '-infinity')) u on true$m$),
-- issue 15: a stage no running dispatcher serves. Each dispatcher
-- publishes the stages it serves (pepsi.stage_served) at start-up and on
-- every reload; a slot serves them while its dispatcher lock is held
-- (pepsi.stage_served_live). Evaluated on each anomaly_run (every
-- ANOMALY_INTERVAL, 1 minute by default), so it fires within a minute.
('unserved_stage', 'health', 'matview', 'messages', null, 0, 'warning',
 'Messages pending at a stage that no running dispatcher serves: no dispatcher holding its owner slot''s lock published that stage (pepsi.stage_served_live). A message injected at a misspelt or removed stage, or at one only a stopped runner served, otherwise waits silently.',
 $m$select coalesce(q.stage, 'all'),
           case when q.stage is null or exists (select 1 from pepsi.stage_served_live() s where s.stage = q.stage)
                then 0 else q.messages end
      from (select 1) one left join pepsi.anomaly_queue_mv q on q.status = 'pending'$m$);

revoke all on table pepsi.ingress_stats, pepsi.anomaly_event_mv, pepsi.anomaly_queue_mv, pepsi.anomaly_orphan_mv,
                    pepsi.anomaly_gap_mv, pepsi.anomaly_sample, pepsi.anomaly_check, pepsi.anomaly_state,
                    pepsi.anomaly_signal from public;
revoke all on function pepsi.ingress_stats_flush(text, jsonb, timestamptz) from public;
revoke all on function pepsi.dispatcher_slots() from public;
revoke all on function pepsi.anomaly_sample_take(timestamptz) from public;
revoke all on function pepsi.anomaly_delta(text, text, interval, timestamptz) from public;
revoke all on function pepsi.anomaly_refresh(text) from public;
revoke all on function pepsi.anomaly_evaluate(text, timestamptz) from public;
revoke all on function pepsi.anomaly_run(timestamptz, boolean) from public;
revoke all on function pepsi.anomaly_check_set(text, jsonb) from public;
grant execute on function pepsi.ingress_stats_flush(text, jsonb, timestamptz) to pepsi_ingress;
grant execute on function pepsi.anomaly_run(timestamptz, boolean) to pepsi_runner;
grant execute on function pepsi.anomaly_refresh(text) to pepsi_runner;
grant select on pepsi.ingress_stats, pepsi.anomaly_event_mv, pepsi.anomaly_queue_mv, pepsi.anomaly_orphan_mv,
                pepsi.anomaly_gap_mv, pepsi.anomaly_sample, pepsi.anomaly_check, pepsi.anomaly_state,
                pepsi.anomaly_signal to pepsi_reader;

commit;
