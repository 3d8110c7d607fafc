-- workqueue_resume: operators send failed, paused and timed-out rows back
-- to pending (D-33 notifies; the rest is the function's own contract).

begin;
select plan(43);

-- A row in the state p_how, reached through the functions that put rows
-- there: pending, running, failed (permanent), retries-exhausted, paused,
-- crashed (three crash strikes), timed-out (three hang strikes).
create function pg_temp.mk(p_stage text, p_how text, p_tube text default 'default')
returns bigint language plpgsql as $$
declare
    v_id bigint;
    v_kind text;
begin
    v_id := pepsi.workqueue_inject(p_stage, p_tube => p_tube);
    if p_how = 'pending' then
        return v_id;
    end if;
    update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = v_id;
    case p_how
        when 'running' then null;
        when 'failed' then perform pepsi.workqueue_fail(v_id, p_stage, 'permanent error');
        when 'retries-exhausted' then perform pepsi.workqueue_fail(v_id, p_stage, 'gave up', 'retries-exhausted');
        when 'paused' then perform pepsi.workqueue_pause(v_id, p_stage, '2030-01-01 00:00:00+00', 'greylisted');
        when 'crashed', 'timed-out' then
            v_kind := case p_how when 'crashed' then 'crash' else 'hang' end;
            for i in 1..3 loop
                update pepsi.workqueue set status = 'running' where workqueue_id = v_id;
                perform pepsi.workqueue_strike(v_id, p_stage, v_kind, v_kind || ' ' || i);
            end loop;
    end case;
    return v_id;
end $$;

select has_function('pepsi', 'workqueue_resume', array['bigint[]', 'text', 'text', 'text', 'pepsi.workqueue_status[]'],
                    'workqueue_resume(ids, stage, failure_class, tube, statuses) exists');

-- Refusals --------------------------------------------------------------------------------

select pg_temp.mk('x', 'failed') as x_failed \gset
select throws_ok($$select pepsi.workqueue_resume()$$, 'PX003', null,
                 'PX003: resume needs a selector (a bare call would resume the whole queue)');
select throws_ok($$select pepsi.workqueue_resume(p_statuses => '{failed}')$$, 'PX003', null,
                 'PX003: statuses alone are not a selector');
select throws_ok($$select pepsi.workqueue_resume(p_stage => 'x', p_statuses => '{pending}')$$, 'PX003', null,
                 'PX003: statuses including pending');
select throws_ok($$select pepsi.workqueue_resume(p_stage => 'x', p_statuses => '{failed,running}')$$, 'PX003', null,
                 'PX003: statuses including running');
select throws_ok($$select pepsi.workqueue_resume(p_stage => 'x', p_statuses => '{}')$$, 'PX003', null,
                 'PX003: empty statuses');
select throws_ok($$select pepsi.workqueue_resume(p_stage => 'x', p_statuses => null)$$, 'PX003', null,
                 'PX003: NULL statuses');
select is((select status::text from pepsi.workqueue where workqueue_id = :x_failed), 'failed',
          'a refused resume changes nothing');

-- By ids ----------------------------------------------------------------------------------------

select pg_temp.mk('ia', 'crashed') as ia1 \gset
select pg_temp.mk('ia', 'failed') as ia2 \gset
select pg_temp.mk('ia', 'running') as ia_run \gset
select pg_temp.mk('ia', 'pending') as ia_pend \gset

select is(pepsi.workqueue_resume(p_ids => array[:ia1, :ia_run, :ia_pend]::bigint[]), 1,
          'resume by ids returns how many rows moved (only the resumable one)');
select row_eq(format('select stage, status::text, timeout from pepsi.workqueue where workqueue_id = %s', :ia1),
              row('ia'::text, 'pending'::text, null::timestamptz), 'resume by ids: the row is pending at its stage');
select is((select state from pepsi.workqueue where workqueue_id = :ia1), '{"last_error": "crash 3"}'::jsonb,
          'resume clears strikes, failure_class and failed_stage but keeps last_error');
select is((select status::text from pepsi.workqueue where workqueue_id = :ia2), 'failed',
          'resume by ids leaves a failed row it was not given');
select is((select status::text from pepsi.workqueue where workqueue_id = :ia_run), 'running',
          'resume never touches a running row, even by id');
select is((select status::text from pepsi.workqueue where workqueue_id = :ia_pend), 'pending',
          'resume never touches a pending row');
select is((select count(*) from pepsi.workqueue_claim('{ia}', '{1}') c where c.workqueue_id = :ia1), 1::bigint,
          'a resumed row is claimed again by the dispatcher');
select is(pepsi.workqueue_resume(p_ids => '{}'), 0, 'resume of an empty id list moves nothing');
select is(pepsi.workqueue_resume(p_ids => array[-1]::bigint[]), 0, 'resume of an unknown id moves nothing');

-- By stage ----------------------------------------------------------------------------------------

select pg_temp.mk('sb', 'failed') as sb_failed \gset
select pg_temp.mk('sb', 'paused') as sb_paused \gset
select pg_temp.mk('sb', 'timed-out') as sb_timeout \gset
select pg_temp.mk('sb', 'running') as sb_run \gset
select pg_temp.mk('sb', 'pending') as sb_pend \gset
select pg_temp.mk('sb-x', 'failed') as sbx_failed \gset

select is(pepsi.workqueue_resume(p_stage => 'sb'), 3,
          'resume by stage moves the failed, paused and timed-out rows of that stage (default statuses)');
select ok((select bool_and(status = 'pending' and timeout is null) from pepsi.workqueue
            where workqueue_id in (:sb_failed, :sb_paused, :sb_timeout)),
          'resume by stage: those rows are pending with timeout cleared');
select is((select state from pepsi.workqueue where workqueue_id = :sb_paused), '{"pause_reason": "greylisted"}'::jsonb,
          'resume of a paused row keeps its other state keys');
select is((select state from pepsi.workqueue where workqueue_id = :sb_timeout), '{"last_error": "hang 3"}'::jsonb,
          'resume of a timed-out row clears strikes, failure_class, failed_stage; keeps last_error');
select results_eq(format('select status::text from pepsi.workqueue where workqueue_id in (%s, %s) order by workqueue_id', :sb_run, :sb_pend),
                  $$values ('running'), ('pending')$$, 'resume by stage leaves running and pending rows alone');
select is((select status::text from pepsi.workqueue where workqueue_id = :sbx_failed), 'failed',
          'resume by stage leaves other stages alone');
select is(pepsi.workqueue_resume(p_stage => 'sb'), 0, 'a second resume of the same stage moves nothing');
select is(pepsi.workqueue_resume(p_stage => 'no-such-stage'), 0, 'resume of a stage with no rows moves nothing');

-- By failure class ----------------------------------------------------------------------------------

update pepsi.workqueue set status = 'pending', state = '{}' where status in ('failed', 'paused', 'timeout');  -- clean slate
select pg_temp.mk('fc', 'crashed') as fc_crash \gset
select pg_temp.mk('fc2', 'crashed') as fc_crash2 \gset
select pg_temp.mk('fc', 'failed') as fc_perm \gset
select pg_temp.mk('fc', 'timed-out') as fc_timed \gset
select pg_temp.mk('fc', 'retries-exhausted') as fc_re \gset

select is(pepsi.workqueue_resume(p_failure_class => 'crashed'), 2,
          'resume by failure_class moves every row of that class, whatever the stage');
select ok((select bool_and(status = 'pending') from pepsi.workqueue where workqueue_id in (:fc_crash, :fc_crash2)),
          'resume by failure_class: the crashed rows are pending');
select results_eq(format('select status::text from pepsi.workqueue where workqueue_id in (%s, %s, %s) order by workqueue_id', :fc_perm, :fc_timed, :fc_re),
                  $$values ('failed'), ('timeout'), ('failed')$$, 'resume by failure_class leaves the other classes');
select is(pepsi.workqueue_resume(p_failure_class => 'timed-out'), 1, 'resume by failure_class timed-out');
select is((select status::text from pepsi.workqueue where workqueue_id = :fc_timed), 'pending',
          'resume by failure_class timed-out: the timed-out row is pending');
select is(pepsi.workqueue_resume(p_stage => 'fc', p_failure_class => 'retries-exhausted'), 1,
          'resume by stage and failure_class: both filters must match');
select is((select status::text from pepsi.workqueue where workqueue_id = :fc_perm), 'failed',
          'the permanent failure stays failed');

-- By tube --------------------------------------------------------------------------------------------

select pg_temp.mk('td', 'failed', 'tube-d') as td_failed \gset
select pg_temp.mk('td', 'paused', 'tube-d') as td_paused \gset
select pg_temp.mk('td', 'running', 'tube-d') as td_run \gset
select pg_temp.mk('td', 'failed') as td_default \gset

select is(pepsi.workqueue_resume(p_tube => 'tube-d'), 2, 'resume by tube moves that tube''s resumable rows');
select ok((select bool_and(status = 'pending') from pepsi.workqueue where workqueue_id in (:td_failed, :td_paused)),
          'resume by tube: those rows are pending');
select is((select status::text from pepsi.workqueue where workqueue_id = :td_run), 'running', 'resume by tube leaves running rows alone');
select is((select status::text from pepsi.workqueue where workqueue_id = :td_default), 'failed',
          'resume by tube leaves rows of other tubes alone');

-- The statuses filter ----------------------------------------------------------------------------------

select pg_temp.mk('se', 'failed') as se_failed \gset
select pg_temp.mk('se', 'paused') as se_paused \gset
select pg_temp.mk('se', 'timed-out') as se_timeout \gset

select is(pepsi.workqueue_resume(p_stage => 'se', p_statuses => '{paused}'), 1,
          'resume with statuses {paused} moves only paused rows');
select is((select status::text from pepsi.workqueue where workqueue_id = :se_paused), 'pending', 'the paused row is pending');
select results_eq(format('select status::text from pepsi.workqueue where workqueue_id in (%s, %s) order by workqueue_id', :se_failed, :se_timeout),
                  $$values ('failed'), ('timeout')$$, 'failed and timed-out rows are left when statuses is {paused}');
select is(pepsi.workqueue_resume(p_stage => 'se', p_statuses => '{timeout}'), 1,
          'resume with statuses {timeout} moves only timed-out rows');
select is(pepsi.workqueue_resume(p_ids => array[:se_failed]::bigint[], p_statuses => '{paused,timeout}'), 0,
          'resume by id of a failed row with statuses not including failed moves nothing');
select is(pepsi.workqueue_resume(p_ids => array[:se_failed]::bigint[], p_stage => 'other'), 0,
          'resume by id and a stage the row is not at moves nothing (all filters must match)');
select is(pepsi.workqueue_resume(p_ids => array[:se_failed]::bigint[], p_stage => 'se'), 1,
          'resume by id and its stage moves it');

select * from finish();
rollback;
