-- Issue 19: who holds the xmin horizon. A REPEATABLE READ transaction
-- held for 120 s cost the pipeline 90 % of its throughput; the checks
-- xmin_horizon_age (warning, 60 s) and xmin_horizon_age_critical
-- (critical, 300 s) must name the session. The holders are second
-- sessions (dblink), as in production: a snapshot this test's own
-- session takes would be its own. This transaction started first and
-- has a transaction id, so it is itself the oldest holder: the checks are
-- tested against it, the listing against the second sessions by pid.
-- The two-session case end to end (pepsi-runner status names the pid,
-- goes warning, critical, then ok): runner/tests/e2e/83-xmin-horizon.t.

begin;
select plan(20);

create extension if not exists dblink;
create function pg_temp.conn() returns text language sql as $$
    select format('dbname=%s port=%s host=%s application_name=%s', current_database(), current_setting('port'),
                  split_part(current_setting('unix_socket_directories'), ',', 1), 'xmin-holder-65') $$;
select dblink_connect('rr', pg_temp.conn());
select dblink_connect('rc', pg_temp.conn());
create function pg_temp.on(p_conn text, p_sql text) returns text language sql as $$
    select v from dblink(p_conn, p_sql) as d(v text) $$;
-- pg_stat_activity is a snapshot taken once per transaction: cleared
-- before each look.
create function pg_temp.listed(p_conn text) returns text language sql as $$
    select pg_stat_clear_snapshot();
    select string_agg(h.kind || ' ' || h.state, ',')
      from pepsi.xmin_horizon_holders() h
     where h.pid = (select pg_temp.on(p_conn, 'select pg_backend_pid()::text')::int) $$;

select has_function('pepsi', 'xmin_horizon_holders', array['timestamp with time zone'], 'issue 19: xmin_horizon_holders exists');

-- Nothing held: an idle session, and a READ COMMITTED transaction that
-- has neither written nor runs a statement, hold nothing.
select is(pg_temp.listed('rr'), null, 'issue 19: an idle session is not listed');
select pg_temp.on('rc', 'begin; select 1');
select is(pg_temp.listed('rc'), null,
          'issue 19: nor a READ COMMITTED transaction between statements that has not written (it holds no snapshot)');

-- A REPEATABLE READ snapshot held, idle in transaction: the issue's case.
select pg_temp.on('rr', 'begin isolation level repeatable read; select 1');
select is(pg_temp.listed('rr'), 'session idle in transaction',
          'issue 19: a REPEATABLE READ transaction holding its snapshot is listed, idle in transaction');
select pg_temp.on('rr', 'select pg_backend_pid()::text') as rr_pid \gset
select pg_temp.on('rr', 'select to_char(now(), ''YYYY-MM-DD HH24:MI:SS.US TZH:TZM'')') as rr_since \gset
select is((select row(h.usename, h.application_name, h.since)::text from pepsi.xmin_horizon_holders() h
            where h.pid = :rr_pid),
          row(current_user::text, 'xmin-holder-65', :'rr_since'::timestamptz)::text,
          'issue 19: with its user, application and the start of its transaction');
select is((select h.holder from pepsi.xmin_horizon_holders(:'rr_since'::timestamptz + interval '125 seconds') h
            where h.pid = :rr_pid),
          format('pid %s (user %s, application xmin-holder-65, idle in transaction, 125 s)', :rr_pid, current_user),
          'issue 19: and one line naming it: pid, user, application, state, how long');
select is((select h.age_seconds from pepsi.xmin_horizon_holders(:'rr_since'::timestamptz + interval '125 seconds') h
            where h.pid = :rr_pid), 125.000, 'issue 19: its age in seconds at p_now');

-- READ COMMITTED after a write: an xid, no snapshot between statements.
select pg_temp.on('rc', 'select txid_current()::text');
select is(pg_temp.listed('rc'), 'session idle in transaction',
          'issue 19: a READ COMMITTED transaction that wrote (has a transaction id) is listed');

-- Oldest first. This transaction has a transaction id: listed too.
select ok((select bool_and(x.ordered) from (
               select coalesce(h.since >= lag(h.since) over (order by o), true) as ordered
                 from pepsi.xmin_horizon_holders() with ordinality as h(kind, pid, usename, application_name, state,
                                                                        since, age_seconds, holder, o)) x),
          'issue 19: holders are listed oldest first');
select is((select count(*)::int from pepsi.xmin_horizon_holders() h where h.pid = pg_backend_pid()), 1,
          'issue 19: this test''s own transaction, which wrote, is listed');

-- The checks read it.
create function pg_temp.eval(p_name text, p_after interval) returns text language sql as $$
    select e.state || ' ' || coalesce(e.subject, '-')
      from pepsi.anomaly_evaluate(p_name, now() + p_after) e $$;
create function pg_temp.first_holder(p_after interval) returns text language sql as $$
    select h.holder from pepsi.xmin_horizon_holders(now() + p_after) h limit 1 $$;
select is((select max_value from pepsi.anomaly_check where name = 'xmin_horizon_age'), 60::numeric,
          'issue 19: xmin_horizon_age warns above 60 s by default');
select is((select severity || ' ' || max_value from pepsi.anomaly_check where name = 'xmin_horizon_age_critical'),
          'critical 300', 'issue 19: xmin_horizon_age_critical is critical above 300 s');
select is(pg_temp.eval('xmin_horizon_age', interval '30 seconds'), 'ok ' || pg_temp.first_holder(interval '30 seconds'),
          'issue 19: xmin_horizon_age is ok at 30 s, naming the oldest holder');
select is(pg_temp.eval('xmin_horizon_age', interval '61 seconds'), 'firing ' || pg_temp.first_holder(interval '61 seconds'),
          'issue 19: xmin_horizon_age fires past 60 s and names the holder');
select is(pg_temp.eval('xmin_horizon_age_critical', interval '61 seconds'), 'ok ' || pg_temp.first_holder(interval '61 seconds'),
          'issue 19: xmin_horizon_age_critical is still ok at 61 s');
select is(pg_temp.eval('xmin_horizon_age_critical', interval '301 seconds'), 'firing ' || pg_temp.first_holder(interval '301 seconds'),
          'issue 19: xmin_horizon_age_critical fires past 300 s');
select pepsi.anomaly_check_set('xmin_horizon_age_critical', '{"max_value": 3600}');
select is(pg_temp.eval('xmin_horizon_age_critical', interval '301 seconds'), 'ok ' || pg_temp.first_holder(interval '301 seconds'),
          'issue 19: its bound is tuned with anomaly_check_set like any check');

-- Readers: status and dashboards call it as pepsi_reader.
select pg_stat_clear_snapshot();
set local role pepsi_reader;
select is((select count(*)::int from pepsi.xmin_horizon_holders() h where h.pid = :rr_pid), 1,
          'issue 19: pepsi_reader calls it and sees the other session');
reset role;

-- Ended: gone.
select pg_temp.on('rr', 'commit; select 1');
select pg_temp.on('rc', 'commit; select 1');
select is(pg_temp.listed('rr'), null, 'issue 19: a holder that committed is no longer listed');
select is((select count(*)::int from pepsi.xmin_horizon_holders() h where h.application_name = 'xmin-holder-65'), 0,
          'issue 19: none of the second sessions is');

select dblink_disconnect('rr');
select dblink_disconnect('rc');

select * from finish();
rollback;
