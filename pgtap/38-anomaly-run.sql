-- The anomaly suite as a whole (W-37, W-38, W-41..W-43): the registry,
-- the materialized views and their concurrent refresh, anomaly_run's
-- states, since-when and signals, errors kept to their check, tuning
-- without a deploy, and the dashboard.

begin;
select plan(45);

select cmp_ok((select count(*)::int from pepsi.anomaly_check), '>', 30, 'W-37: more than 30 named checks');
select set_eq($$select distinct family from pepsi.anomaly_check$$, array['latency', 'referential', 'volume', 'health'],
              'the families: latency, referential, volume, health');
select cmp_ok((select (count(*) filter (where reads = 'matview') * 2)::int from pepsi.anomaly_check), '>',
              (select count(*)::int from pepsi.anomaly_check), 'W-38: most checks read materialized views');
-- What a metric reads, from its plan (issue 12: not from its text).
create function pg_temp.plan_relkinds(p_sql text) returns table (rel text, relkind "char")
language plpgsql as $f$
declare
    v_plan jsonb;
begin
    execute 'explain (format json, verbose) ' || p_sql into v_plan using now();
    return query
    select distinct format('%I.%I', n->>'Schema', n->>'Relation Name'), c.relkind
      from jsonb_path_query(v_plan, 'strict $.**') n
      join pg_class c on c.oid = format('%I.%I', n->>'Schema', n->>'Relation Name')::regclass
     where jsonb_typeof(n) = 'object' and n ? 'Relation Name';
end
$f$;
select is((select string_agg(c.name, ', ' order by c.name) from pepsi.anomaly_check c
            where (c.reads = 'matview') is distinct from
                  (exists (select 1 from pg_temp.plan_relkinds(c.metric) p where p.relkind = 'm')
                   and not exists (select 1 from pg_temp.plan_relkinds(c.metric) p where p.relkind <> 'm'))),
          null, 'W-38: the plan of a check said to read a materialized view reads materialized views only; no other check''s plan reads one');
select is((select count(*)::int from pepsi.anomaly_check c
            where (c.min_value is null and c.max_value is null) or c.description = ''), 0,
          'W-37: every check has an expected range and a description');
select columns_are('pepsi', 'anomaly_check',
                   array['name', 'family', 'description', 'metric', 'reads', 'unit', 'min_value', 'max_value', 'severity',
                         'enabled', 'updated_at'],
                   'W-37: the registry: name, family, description, metric query, expected range, severity, enabled');
select is((select count(*)::int from pg_matviews where schemaname = 'pepsi' and matviewname like 'anomaly_%_mv'), 4,
          'W-38: four materialized views');
select is((select count(*)::int from pg_matviews m
            where m.schemaname = 'pepsi' and m.matviewname like 'anomaly_%_mv'
              and exists (select 1 from pg_index i where i.indrelid = format('pepsi.%I', m.matviewname)::regclass
                             and i.indisunique and i.indpred is null)), 4,
          'W-38: each has a unique index without a WHERE clause, as REFRESH ... CONCURRENTLY needs');
select pepsi.workqueue_inject('mv-probe');
select is((select count(*)::int from pepsi.anomaly_queue_mv where stage = 'mv-probe'), 0, 'a view holds what it held');
select is(pepsi.anomaly_refresh('anomaly_queue_mv'), true, 'issue 12: anomaly_refresh refreshes one view by name');
select is((select messages::int from pepsi.anomaly_queue_mv where stage = 'mv-probe'), 1, 'and it holds the new row');
select throws_ok($$select pepsi.anomaly_refresh('pg_class')$$, 'PX003', null, 'PX003: not one of the four views');
select ok(has_function_privilege('pepsi_runner', 'pepsi.anomaly_refresh(text)', 'execute'),
          'issue 12: the runner refreshes them one statement at a time');
delete from pepsi.workqueue where stage = 'mv-probe';
select pepsi.anomaly_refresh();
select ok(has_function_privilege('pepsi_runner', 'pepsi.anomaly_run(timestamptz, boolean)', 'execute'),
          'the runner runs the suite');

-- A healthy queue. The checks of the whole cluster's health (dead rows
-- left by earlier test files, this transaction's age, connections) are
-- tested in 37 and 39 and left out here; the dispatcher lock is taken as
-- a runner would hold it, and the stage it serves published (issue 15).
select pepsi.anomaly_check_set(c, '{"enabled": false}')
  from unnest(array['dead_tuple_ratio', 'xmin_horizon_age', 'xmin_horizon_age_critical', 'connection_usage']) c;
select pg_advisory_xact_lock(1885696115, 0);
select pepsi.stage_served_publish(0, '[{"stage": "deliver", "program": "pepsi-stage-pass"}]');
select pepsi.reconcile();
select pepsi.stats_flush(0, null, '{"claims": 1}');
select is((select count(*)::int from pepsi.anomaly_run(now())), (select count(*)::int from pepsi.anomaly_check),
          'anomaly_run returns one row per check');
select is((select count(*)::int from pg_locks where locktype = 'advisory' and classid = 1885696115 and objid = 4294967294
              and pid = pg_backend_pid()), 1, 'a run holds its own lock (1885696115, -2) until the transaction ends');
select is((select count(*)::int from pepsi.anomaly_run(now()) where state = 'firing'), 0,
          'W-37: on a healthy queue no check fires');
select is((select count(*)::int from pepsi.anomaly_state), (select count(*)::int from pepsi.anomaly_check),
          'every check has a state');
select is((select count(*)::int from pepsi.anomaly_signal), 0, 'no signal');
-- Idle means idle (D-139, issue 12): a run over an unchanged queue
-- writes nothing, neither states nor counter snapshots.
create temporary table idle_before as
    select (select string_agg(ctid::text, ',' order by check_name) from pepsi.anomaly_state) as states,
           (select count(*) from pepsi.anomaly_sample) as samples;
select count(*) from pepsi.anomaly_run(now() + interval '10 seconds', false);
select is((select string_agg(ctid::text, ',' order by check_name) from pepsi.anomaly_state),
          (select states from idle_before), 'D-139: a run that changes no result rewrites no state row');
select is((select count(*) from pepsi.anomaly_sample), (select samples from idle_before),
          'D-139: nor snapshots a counter that did not move');

-- A check starts firing: a signal, since when, changed.
select pepsi.workqueue_inject('deliver', p_state => '{"webhook_event": 555555555}') as orphan \gset
update pepsi.workqueue set webhook_event_id = 555555555 where workqueue_id = :orphan;   -- the link (issue 13), to no event
select version as reconcile_v0 from pepsi.control_signal where channel = 'reconcile' \gset
select results_eq($$select state, changed from pepsi.anomaly_run(now() + interval '1 minute') where check_name = 'messages_missing_event'$$,
                  $$values ('firing'::text, true)$$, 'W-37: a check leaving its range fires (changed)');
select row_eq($$select check_name, severity, raised_at, cleared_at, value, subject from pepsi.anomaly_signal$$,
              row('messages_missing_event'::text, 'critical'::text, now() + interval '1 minute', null::timestamptz, 1::numeric,
                  ('message ' || (select max(workqueue_id) from pepsi.workqueue))::text),
              'W-37: it raises a signal: check, severity, when, value, subject');
select row_eq($$select state, since from pepsi.anomaly_state where check_name = 'messages_missing_event'$$,
              row('firing'::text, now() + interval '1 minute'), 'the state says since when');
select is((select version from pepsi.control_signal where channel = 'reconcile'), (:reconcile_v0 + 1)::bigint,
          'W-41: a check that starts firing asks for a reconciliation pass (the reconcile version moved, issue 11)');
select results_eq($$select state, changed from pepsi.anomaly_run(now() + interval '2 minutes') where check_name = 'messages_missing_event'$$,
                  $$values ('firing'::text, false)$$, 'still firing at the next run: not changed');
select is((select version from pepsi.control_signal where channel = 'reconcile'), (:reconcile_v0 + 1)::bigint,
          'W-41: one that keeps firing does not ask again');
select is((select since from pepsi.anomaly_state where check_name = 'messages_missing_event'), now() + interval '1 minute',
          'since stays at the start of the episode');
select is((select count(*)::int from pepsi.anomaly_signal), 1, 'one signal per episode');
delete from pepsi.workqueue where webhook_event_id = 555555555;
select results_eq($$select state, changed from pepsi.anomaly_run(now() + interval '3 minutes') where check_name = 'messages_missing_event'$$,
                  $$values ('ok'::text, true)$$, 'back in range: ok');
select is((select cleared_at from pepsi.anomaly_signal), now() + interval '3 minutes', 'the signal is cleared');

-- Tuning without a deploy (W-43).
select pepsi.workqueue_inject('deliver') from generate_series(1, 5);
select is((select state from pepsi.anomaly_run(now() + interval '4 minutes') where check_name = 'pending_backlog'), 'ok',
          'W-43: 5 pending is fine with the shipped bound');
select pepsi.anomaly_check_set('pending_backlog', '{"max_value": 3, "severity": "critical"}');
select row_eq($$select max_value, severity from pepsi.anomaly_check where name = 'pending_backlog'$$,
              row(3::numeric, 'critical'::text), 'W-43: anomaly_check_set changes the bound and severity');
select is((select state from pepsi.anomaly_run(now() + interval '5 minutes') where check_name = 'pending_backlog'), 'firing',
          'W-43: the next run uses the tuned bound');
select pepsi.anomaly_check_set('pending_backlog', '{"enabled": false}');
select is((select state from pepsi.anomaly_run(now() + interval '6 minutes') where check_name = 'pending_backlog'), 'disabled',
          'a disabled check is not evaluated');
select throws_ok($$select pepsi.anomaly_check_set('no_such_check', '{"max_value": 1}')$$, 'PX024', null, 'PX024: unknown check');
select throws_ok($$select pepsi.anomaly_check_set('pending_backlog', '{"max_value": "many"}')$$, 'PX003', null, 'PX003: not a number');
select throws_ok($$select pepsi.anomaly_check_set('pending_backlog', '{"min_value": 10, "max_value": 1}')$$, 'PX003', null,
                 'PX003: min above max');
select throws_ok($$select pepsi.anomaly_check_set('pending_backlog', '{"metric": "select 1"}')$$, 'PX003', null,
                 'PX003: the metric is not a threshold');

-- A broken metric is an error of that check alone.
update pepsi.anomaly_check set metric = 'select 1/0, 1' where name = 'failed_messages';
select results_eq($$select state, count(*)::int from pepsi.anomaly_run(now() + interval '7 minutes')
                    where check_name in ('failed_messages', 'timed_out_messages') group by state order by state$$,
                  $$values ('error'::text, 1), ('ok', 1)$$, 'a metric that fails: state error; the other checks still run');
select is((select detail from pepsi.anomaly_state where check_name = 'failed_messages'), 'division by zero',
          'the error says why');

-- The dashboard (W-42).
select columns_are('pepsi', 'anomaly_dashboard',
                   array['check_name', 'state', 'severity', 'family', 'value', 'unit', 'expected', 'subject', 'since',
                         'evaluated_at', 'detail', 'description'],
                   'W-42: the dashboard: each check, its value, range, state, since when');
select is((select array_agg(distinct state) from (select state from pepsi.anomaly_dashboard limit 2) d), array['error', 'firing'],
          'W-42: the firing check (stats_freshness, 7 minutes old now) and the error come first');
select is((select array_agg(d.state) from pepsi.anomaly_dashboard d),
          (select array_agg(d.state order by case d.state when 'firing' then 0 when 'error' then 1 when 'pending' then 2
                                                          when 'ok' then 3 when 'no_data' then 4 else 5 end)
             from pepsi.anomaly_dashboard d),
          'W-42: then ok, no data, disabled');
select is((select expected from pepsi.anomaly_dashboard where check_name = 'stats_freshness'), '<= 300',
          'W-42: the range as text');

select * from finish();
rollback;
