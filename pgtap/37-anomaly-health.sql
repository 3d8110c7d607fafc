-- Anomaly checks, health family: the reconciliation schedule, the xmin
-- horizon, connections, whether a dispatcher is alive and holds its lock.
-- Each is silent on a healthy state and fires on a crafted bad one; the
-- dead-tuple check needs committed garbage (39-anomaly-dead-tuples.sql).

begin;
select plan(17);

create function pg_temp.state_of(p_name text, p_now timestamptz default now())
returns text language sql as $$ select e.state from pepsi.anomaly_evaluate(p_name, p_now) e $$;

-- Reconciliation: a pass just ran; an hour later none has.
select pepsi.reconcile();
select is(pg_temp.state_of('reconcile_staleness'), 'ok', 'reconcile_staleness is silent right after a pass');
select is(pg_temp.state_of('reconcile_staleness', now() + interval '1 hour'), 'ok',
          'D-139: nor an hour later while nothing changed (scheduled passes skip an unchanged queue)');
select pepsi.workqueue_inject('r') as running_id \gset
update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = :running_id;
select is(pg_temp.state_of('reconcile_staleness', now() + interval '1 hour'), 'firing',
          'reconcile_staleness fires when no pass finished for an hour while there is something to look at');
delete from pepsi.workqueue where workqueue_id = :running_id;

-- The xmin horizon: this transaction holds it; an hour on, it is old.
select is(pg_temp.state_of('xmin_horizon_age'), 'ok', 'xmin_horizon_age is silent for a young transaction');
select is(pg_temp.state_of('xmin_horizon_age', now() + interval '1 hour'), 'firing',
          'xmin_horizon_age fires when a transaction has held the horizon for an hour');
-- The oldest holder may be an autovacuum worker older than this
-- transaction: the check must name whichever is oldest, in the same
-- snapshot of pg_stat_activity (issue 12: this test was flaky).
select is((select subject from pepsi.anomaly_evaluate('xmin_horizon_age', now() + interval '1 hour')),
          (select format('pid %s (%s)', a.pid, coalesce(nullif(a.application_name, ''), a.backend_type))
             from pg_stat_activity a where a.backend_xmin is not null and a.xact_start is not null
            order by a.xact_start limit 1),
          'and names the backend holding it (the oldest)');

-- Connections: a few of max_connections. Filling 80% of the slots is not
-- something a test does to its cluster: the bad state is a lowered bound.
select is(pg_temp.state_of('connection_usage'), 'ok', 'connection_usage is silent at a few connections');
select pepsi.anomaly_check_set('connection_usage', '{"max_value": 0.000001}');
select is(pg_temp.state_of('connection_usage'), 'firing', 'connection_usage fires above its bound');

-- Statistics freshness: a dispatcher writes every STATS_INTERVAL.
select pepsi.stats_flush(0, null, '{"claims": 1}', now() - interval '10 seconds');
select is(pg_temp.state_of('stats_freshness'), 'ok', 'stats_freshness is silent when a dispatcher wrote 10 seconds ago');
select pepsi.stats_flush(1, null, '{"claims": 1}', now() - interval '10 minutes');
select is(pg_temp.state_of('stats_freshness'), 'ok',
          'D-139: stats_freshness is silent for a slot silent for 10 minutes while nothing waits (an idle dispatcher writes nothing)');
select pepsi.workqueue_inject('waiting');
select is(pg_temp.state_of('stats_freshness'), 'firing',
          'stats_freshness fires for an owner slot silent for 10 minutes while a message waits');
delete from pepsi.workqueue where stage = 'waiting';

-- The dispatcher lock: nobody holds it here; take it as a dispatcher would.
select is(pg_temp.state_of('dispatcher_lock'), 'firing', 'dispatcher_lock fires when no runner holds a dispatcher lock');
select pg_advisory_xact_lock(1885696115, 0);
select is(pg_temp.state_of('dispatcher_lock'), 'ok', 'dispatcher_lock is silent while owner slot 0''s lock is held');

-- issue 14: per owner slot of the map, exactly one dispatcher. The map is
-- written directly: topology_set would hold every slot's lock for the rest
-- of this transaction (its try-lock), and the check reads only the map.
insert into pepsi.partition_map select g, g / 4 from generate_series(0, 7) g;
select is(pg_temp.state_of('dispatcher_lock'), 'firing',
          'issue 14: dispatcher_lock fires when slot 1 of the map has no dispatcher, though slot 0 has one');
select is((select array_agg(e.subject || '=' || e.value order by e.subject)
             from pepsi.anomaly_evaluate('dispatcher_lock', now()) e),
          '{"owner slot 1=0"}'::text[], 'issue 14: it names the slot without a dispatcher (0), not slot 0 (1)');
select pg_advisory_xact_lock(1885696115, 1);
select is(pg_temp.state_of('dispatcher_lock'), 'ok', 'issue 14: silent once each slot of the map has its dispatcher');
update pepsi.partition_map set owner_slot = 2 where partition >= 6;
select is(pg_temp.state_of('dispatcher_lock'), 'firing', 'issue 14: fires for slot 2, new in the map, until its runner starts');

select * from finish();
rollback;
