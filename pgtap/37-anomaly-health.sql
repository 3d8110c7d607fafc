-- Anomaly checks, health family: the reconciliation schedule, the xmin
-- horizon, connections, whether a dispatcher is alive and holds its lock.
-- Each is silent on a healthy state and fires on a crafted bad one; the
-- dead-tuple check needs committed garbage (39-anomaly-dead-tuples.sql).

begin;
select plan(30);

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
          (select h.holder from pepsi.xmin_horizon_holders(now() + interval '1 hour') h limit 1),
          'and names the backend holding it (the oldest; issue 19: pepsi.xmin_horizon_holders, 65-xmin-horizon.sql)');

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

-- The dispatcher lock (issue 14): per owner slot of the map, exactly one
-- dispatcher; a slot without one fires once it has been without one for
-- more than a minute, counted from the first anomaly run (sample) that saw
-- it so, never at once: its runner may be restarting. "A runner holds slot
-- n" is a second session (dblink) holding pepsi.lock_key('dispatcher', n),
-- as the runner does; the clock moves through p_now.
create extension if not exists dblink;
select dblink_connect('run0', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                     split_part(current_setting('unix_socket_directories'), ',', 1)));
select dblink_connect('run1', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                     split_part(current_setting('unix_socket_directories'), ',', 1)));
create function pg_temp.lock_in(p_conn text, p_slot int, p_fn text) returns boolean language sql as $$
    select got from dblink(p_conn, format('select %s(k.class_id, k.object_id)::text is distinct from ''false'''
                                          ' from pepsi.lock_key(''dispatcher'', %s) k', p_fn, p_slot)) as d(got boolean) $$;
create function pg_temp.lock_eval(p_now timestamptz) returns text language sql as $$
    select e.state || ' ' || e.subject || '=' || e.value from pepsi.anomaly_evaluate('dispatcher_lock', p_now) e $$;

select is(pg_temp.state_of('dispatcher_lock'), 'no_data',
          'issue 14: dispatcher_lock does not fire at once for a slot without a runner that no anomaly run has seen so (it may be restarting)');
select pepsi.anomaly_sample_take(now() - interval '30 seconds');
select is(pg_temp.state_of('dispatcher_lock'), 'no_data',
          'issue 14: nor for a slot without an owner for 30 seconds (first seen so by the run 30 s ago)');
select is(pg_temp.lock_eval(now() + interval '31 seconds'), 'firing owner slot 0=0',
          'issue 14: dispatcher_lock fires for a slot without an owner for more than a minute, naming it (0 dispatchers)');
select ok(pg_temp.lock_in('run0', 0, 'pg_try_advisory_lock'), 'slot 0''s runner starts (a second session takes its lock)');
select is(pg_temp.lock_eval(now() + interval '31 seconds'), 'ok owner slot 0=1',
          'issue 14: dispatcher_lock is silent while owner slot 0''s lock is held');

-- A runner restarting: seen holding at +40 s, then without one from +100 s.
select pepsi.anomaly_sample_take(now() + interval '40 seconds');
select ok(pg_temp.lock_in('run0', 0, 'pg_advisory_unlock'), 'slot 0''s runner stops (its lock released)');
select pepsi.anomaly_sample_take(now() + interval '100 seconds');
select is(pg_temp.state_of('dispatcher_lock', now() + interval '130 seconds'), 'no_data',
          'issue 14: a slot whose runner is briefly restarting (30 s without an owner) does not fire; the earlier gap does not count');
select is(pg_temp.lock_eval(now() + interval '161 seconds'), 'firing owner slot 0=0',
          'issue 14: the same slot fires once it has been without an owner for more than a minute');
select ok(pg_temp.lock_in('run0', 0, 'pg_try_advisory_lock'), 'slot 0''s runner is back');
select pepsi.anomaly_sample_take(now() + interval '170 seconds');

-- Two slots in the map (written directly: topology_set would hold every
-- slot's lock for the rest of this transaction, and the check reads only
-- the map).
insert into pepsi.partition_map select g, g / 4 from generate_series(0, 7) g;
select is(pg_temp.lock_eval(now() + interval '175 seconds'), 'ok owner slot 0=1',
          'issue 14: slot 1, new in the map, is not counted out before a run saw it without a runner');
select pepsi.anomaly_sample_take(now() + interval '180 seconds');
select is(pg_temp.lock_eval(now() + interval '241 seconds'), 'firing owner slot 1=0',
          'issue 14: dispatcher_lock fires, naming slot 1, when slot 1 of the map has had no dispatcher for more than a minute though slot 0 has one');
select ok(pg_temp.lock_in('run1', 1, 'pg_try_advisory_lock'), 'slot 1''s runner starts');
select is(pg_temp.state_of('dispatcher_lock', now() + interval '241 seconds'), 'ok',
          'issue 14: silent once each slot of the map has its dispatcher');
select pepsi.anomaly_sample_take(now() + interval '250 seconds');
select is((select string_agg(subject || '=' || value, ',' order by sampled_at) from pepsi.anomaly_sample where source = 'dispatcher'),
          'owner slot 0=0,owner slot 0=1,owner slot 0=0,owner slot 0=1,owner slot 1=0,owner slot 1=1',
          'D-139: samples of the lock holders only where they changed');
select pepsi.anomaly_sample_take(now() + interval '310 seconds');
select is((select count(*)::int from pepsi.anomaly_sample where source = 'dispatcher'), 6,
          'D-139: a run over unchanged lock holders writes no sample');

-- More than one holder of a slot's lock cannot be two runners (the
-- runner's lock is exclusive) but is still out of range: shared holders.
select ok(pg_temp.lock_in('run1', 1, 'pg_advisory_unlock'), 'slot 1''s runner stops');
select ok(pg_temp.lock_in('run1', 1, 'pg_advisory_lock_shared') and pg_temp.lock_in('run0', 1, 'pg_advisory_lock_shared'),
          'two sessions share slot 1''s lock');
select is(pg_temp.lock_eval(now() + interval '320 seconds'), 'firing owner slot 1=2',
          'issue 14: dispatcher_lock fires on more than one holder of a slot''s lock');

-- Retention: three days on, slot 0's holder unchanged since +170 s: its
-- latest sample stays (a slot down for days is down since then).
select pepsi.anomaly_sample_take(now() + interval '3 days');
select is((select string_agg(subject || '=' || value, ',') from pepsi.anomaly_sample
            where source = 'dispatcher' and sampled_at < now() + interval '1 day'), 'owner slot 0=1',
          'issue 14: the two-day retention keeps the latest dispatcher sample of each slot');

select dblink_disconnect('run0');
select dblink_disconnect('run1');

select * from finish();
rollback;
