-- Operator actions (issue 16): pausing a stage (the claims skip it, a
-- row of pepsi.stage_pause, resumed on demand), retry, reroute, cancel
-- (workqueue_delete) and purge; each refusal by its code, running rows
-- never touched, and who may call what.

begin;
select plan(45);

-- helpers: run a statement, say what came of it
create function pg_temp.outcome(p_sql text) returns text
language plpgsql as $$
begin
    execute p_sql;
    return 'ok';
exception when others then
    return sqlstate;
end
$$;
grant execute on function pg_temp.outcome(text) to public;

-- rows: id by name
create temp table m (name text primary key, id bigint) on commit drop;
insert into m select n, pepsi.workqueue_inject(s)
  from (values ('a1', 'a'), ('a2', 'a'), ('b1', 'b')) v(n, s);
create function pg_temp.id(p_name text) returns bigint language sql stable as
$$ select id from m where name = p_name $$;
create function pg_temp.row_of(p_name text) returns text language sql stable as
$$ select w.stage || '/' || w.status from pepsi.workqueue w where w.workqueue_id = pg_temp.id(p_name) $$;

-- Pause a stage -----------------------------------------------------------------------

select is(pepsi.workqueue_pause_stage('a', 'backend down'), true, 'issue 16: workqueue_pause_stage pauses a stage: true');
select is(pepsi.workqueue_pause_stage('a', 'again'), false, 'issue 16: pausing it again: false, nothing changed');
select is((select stage || '|' || reason || '|' || (paused_by = session_user) from pepsi.stage_pause),
          'a|backend down|true', 'issue 16: pepsi.stage_pause keeps the stage, the first reason and who paused it');
select is((select array_agg(c.stage order by c.workqueue_id) from pepsi.workqueue_claim('{a,b}', '{10,10}') c),
          '{b}', 'issue 16: workqueue_claim skips a paused stage and claims the others');
select is((select count(*)::int from pepsi.workqueue_claim_fair('{a}', '{10}', '{100}', null, null, null)), 0,
          'issue 16: workqueue_claim_fair skips a paused stage');
select is(pg_temp.row_of('a1') || ' ' || pg_temp.row_of('a2'), 'a/pending a/pending',
          'issue 16: the paused stage''s messages wait, pending');
select is(pepsi.workqueue_resume_stage('a'), true, 'issue 16: workqueue_resume_stage ends the pause: true');
select is(pepsi.workqueue_resume_stage('a'), false, 'issue 16: resuming a stage not paused: false');
select is((select count(*)::int from pepsi.workqueue_claim_fair('{a}', '{1}', '{100}', null, null, null)), 1,
          'issue 16: after resume the fair claim takes the stage''s messages again');
select is((select count(*)::int from pepsi.workqueue_claim('{a}', '{10}')), 1,
          'issue 16: and so does the plain claim');
select is(pg_temp.outcome($$select pepsi.workqueue_pause_stage('-bad')$$), 'PX001',
          'issue 16: pausing an invalid stage name: PX001');
select is(pg_temp.outcome($$select pepsi.workqueue_pause_stage(null)$$), 'PX001', 'issue 16: pausing stage NULL: PX001');
select is(pg_temp.outcome($$select pepsi.workqueue_resume_stage('a b')$$), 'PX001',
          'issue 16: resuming an invalid stage name: PX001');
select is(pg_temp.outcome($$select pepsi.workqueue_pause_stage('a', repeat('x', 1001))$$), 'PX003',
          'issue 16: a pause reason over 1000 bytes: PX003');
select is((select count(*)::int from pepsi.stage_pause), 0, 'the refused calls paused nothing');

-- Rows in each status for the other actions ------------------------------------------

insert into m select n, pepsi.workqueue_inject('s')
  from unnest('{pend,paus,fail,tout,run,old_fail,old_tout,old_run,old_pend}'::text[]) n;
update pepsi.workqueue w set status = 'paused', timeout = now() + interval '1 hour' where w.workqueue_id = pg_temp.id('paus');
update pepsi.workqueue w
   set status = v.st::pepsi.workqueue_status, claimed_at = now() - v.age,
       state = case when v.st in ('failed', 'timeout')
                    then '{"failure_class": "permanent", "failed_stage": "s", "last_error": "boom", "strikes": 3, "hops": 4}'::jsonb
                    else '{}' end
  from (values ('fail', 'failed', interval '1 minute'), ('tout', 'timeout', interval '1 minute'),
               ('run', 'running', interval '1 minute'), ('old_fail', 'failed', interval '2 days'),
               ('old_tout', 'timeout', interval '2 days'), ('old_run', 'running', interval '2 days')) v(n, st, age)
 where w.workqueue_id = pg_temp.id(v.n);
update pepsi.workqueue w set arrived_at = now() - interval '3 days' where w.workqueue_id = pg_temp.id('old_pend');

-- Retry ---------------------------------------------------------------------------------

select is(pepsi.workqueue_retry(array[pg_temp.id('fail'), pg_temp.id('tout'), pg_temp.id('pend'), pg_temp.id('run'),
                                      999999999]), 2,
          'issue 16: workqueue_retry moves the failed and timed-out ids, skips the others: 2');
select is(pg_temp.row_of('fail') || ' ' || pg_temp.row_of('tout'), 's/pending s/pending',
          'issue 16: retried rows are pending at their stage');
select is((select state from pepsi.workqueue where workqueue_id = pg_temp.id('fail')), '{"last_error": "boom"}',
          'issue 16: afresh (as workqueue_resume): strikes, failure class, failed stage and hops cleared');
select is(pg_temp.row_of('run'), 's/running', 'issue 16: retry leaves a running row alone');
select is(pg_temp.outcome($$select pepsi.workqueue_retry('{}')$$), 'PX003', 'issue 16: retry without ids: PX003');
select is(pg_temp.outcome($$select pepsi.workqueue_retry(array[1, null])$$), 'PX003', 'issue 16: retry of a NULL id: PX003');
select is(pg_temp.outcome(format('select pepsi.workqueue_retry(array(select generate_series(1, 10001)::bigint))')),
          'PX003', 'issue 16: retry of more than 10000 ids: PX003');

-- Reroute -------------------------------------------------------------------------------

update pepsi.workqueue w set status = 'failed', state = '{"failure_class": "permanent", "strikes": 2}'
 where w.workqueue_id = pg_temp.id('fail');
select is(pg_temp.outcome(format('select pepsi.workqueue_reroute(array[%s, %s], ''t'')', pg_temp.id('pend'), pg_temp.id('run'))),
          'PX005', 'issue 16: reroute refuses a running message: PX005');
select is(pg_temp.outcome(format('select pepsi.workqueue_reroute(array[%s, 999999999], ''t'')', pg_temp.id('pend'))),
          'PX004', 'issue 16: reroute refuses an unknown id: PX004');
select is(pg_temp.outcome(format('select pepsi.workqueue_reroute(array[%s], ''t t'')', pg_temp.id('pend'))),
          'PX001', 'issue 16: reroute to an invalid stage name: PX001');
select is(pg_temp.outcome($$select pepsi.workqueue_reroute('{}', 't')$$), 'PX003', 'issue 16: reroute without ids: PX003');
select is(pg_temp.row_of('pend') || ' ' || pg_temp.row_of('run'), 's/pending s/running',
          'issue 16: a refused reroute moved nothing (all or nothing)');
select is(pepsi.workqueue_reroute(array[pg_temp.id('pend'), pg_temp.id('paus'), pg_temp.id('fail')], 't',
                                  '2026-12-01T10:00:00Z'), 3,
          'issue 16: workqueue_reroute moves pending, paused and failed rows: 3');
select is(pg_temp.row_of('pend') || ' ' || pg_temp.row_of('paus') || ' ' || pg_temp.row_of('fail'),
          't/pending t/pending t/pending', 'issue 16: rerouted rows are pending at the new stage');
select is((select state from pepsi.workqueue where workqueue_id = pg_temp.id('fail')),
          '{"rerouted_at": "2026-12-01T10:00:00+00:00", "rerouted_from": "s"}',
          'issue 16: afresh, with where it came from and when');
select is((select timeout from pepsi.workqueue where workqueue_id = pg_temp.id('paus')), null,
          'issue 16: a rerouted paused row lost its timeout (pending)');

-- Cancel: workqueue_delete is the cancel --------------------------------------------------

select is(pg_temp.outcome(format('select pepsi.workqueue_delete(array[%s], ''cancel'')', pg_temp.id('run'))), 'PX005',
          'issue 16: cancel (workqueue_delete) refuses a running message: PX005');
select is(pepsi.workqueue_delete(array[pg_temp.id('pend')], 'customer asked'), 1,
          'issue 16: cancel (workqueue_delete) of a pending message');

-- Purge ---------------------------------------------------------------------------------

select is(pg_temp.outcome($$select pepsi.workqueue_purge(interval '59 minutes')$$), 'PX050',
          'issue 16: purge under the 1-hour floor: PX050');
select is(pg_temp.outcome($$select pepsi.workqueue_purge(null)$$), 'PX050', 'issue 16: purge without an age: PX050');
select is(pg_temp.outcome($$select pepsi.workqueue_purge(interval '-1 day')$$), 'PX050', 'issue 16: a negative age: PX050');
select is(pg_temp.outcome($$select pepsi.workqueue_purge(interval '1000 years')$$), 'PX050',
          'issue 16: an age over 100 years: PX050');
select is(pepsi.workqueue_purge(interval '1 day'), 2::bigint,
          'issue 16: workqueue_purge removes the failed and timed-out rows unchanged for the age: 2');
select is((select array_agg(m.name order by m.name) from m
            where not exists (select 1 from pepsi.workqueue w where w.workqueue_id = m.id)),
          '{old_fail,old_tout,pend}', 'issue 16: purge touched no running, pending or recent failed row');
select is((select array_agg(h.outcome order by h.workqueue_id) from pepsi.workqueue_history h
            where h.workqueue_id in (pg_temp.id('old_fail'), pg_temp.id('old_tout'))), '{purged,purged}',
          'issue 16: the purged rows are in the history, outcome purged');

-- Who may call what ---------------------------------------------------------------------

create temp table calls (i int, sql text) on commit drop;
insert into calls values
    (1, $$select pepsi.workqueue_pause_stage('zz')$$), (2, $$select pepsi.workqueue_resume_stage('zz')$$),
    (3, $$select pepsi.workqueue_retry('{}')$$), (4, $$select pepsi.workqueue_reroute('{}', 'zz')$$),
    (5, $$select pepsi.workqueue_purge(interval '0')$$), (6, $$select pepsi.workqueue_delete('{}', 'x')$$),
    (7, $$select * from pepsi.message_history(0)$$), (8, $$select count(*) from pepsi.workqueue_history$$),
    (9, $$select count(*) from pepsi.stage_pause$$);
grant select on calls to public;
create function pg_temp.calls_as() returns text[] language sql as
$$ select array_agg(pg_temp.outcome(sql) order by i) from calls $$;
grant execute on function pg_temp.calls_as() to public;

set local role pepsi_operator;
select is(pg_temp.calls_as(), '{ok,ok,PX003,PX003,PX050,PX003,ok,ok,ok}',
          'issue 16: pepsi_operator may pause, resume, retry, reroute, purge, cancel and read the history');
reset role;
set local role pepsi_reader;
select is(pg_temp.calls_as(), '{42501,42501,42501,42501,42501,42501,ok,ok,ok}',
          'issue 16: pepsi_reader reads the history and the paused stages, and acts on nothing (42501)');
reset role;
set local role pepsi_runner;
select is(pg_temp.calls_as(), '{42501,42501,42501,42501,42501,42501,42501,42501,42501}',
          'issue 16: pepsi_runner may call none of them (42501)');
reset role;
set local role pepsi_worker;
select is(pg_temp.calls_as(), '{42501,42501,42501,42501,42501,42501,42501,42501,42501}',
          'issue 16: pepsi_worker may call none of them (42501)');
reset role;
set local role pepsi_ingress;
select is(pg_temp.calls_as(), '{42501,42501,42501,42501,42501,42501,42501,42501,42501}',
          'issue 16: pepsi_ingress may call none of them (42501)');
reset role;

select * from finish();
rollback;
