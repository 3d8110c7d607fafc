-- The dispatcher's writes besides the claim: workqueue_requeue (D-08,
-- D-89, D-90, D-95), workqueue_reset_running (D-18),
-- workqueue_release_paused (D-93), workqueue_defer (D-100) and
-- workqueue_strike (D-81..D-88).

begin;
select plan(77);

create function pg_temp.running(p_stage text, p_state jsonb default '{}')
returns bigint language plpgsql as $$
declare
    v_id bigint;
begin
    v_id := pepsi.workqueue_inject(p_stage, p_state => p_state);
    update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = v_id;
    return v_id;
end $$;

select has_function('pepsi', 'workqueue_requeue', array['bigint[]', 'text[]', 'integer'], 'workqueue_requeue exists');
select has_function('pepsi', 'workqueue_reset_running', array['integer'], 'workqueue_reset_running exists');
select has_function('pepsi', 'workqueue_release_paused', array['timestamp with time zone', 'integer'], 'workqueue_release_paused exists');
select has_function('pepsi', 'workqueue_defer', array['bigint[]', 'text[]', 'timestamp with time zone', 'text', 'integer'], 'workqueue_defer exists');
select has_function('pepsi', 'workqueue_strike', array['bigint', 'text', 'text', 'text', 'timestamp with time zone', 'integer'], 'workqueue_strike exists');
select function_returns('pepsi', 'workqueue_strike', array['bigint', 'text', 'text', 'text', 'timestamp with time zone', 'integer'],
                        'pepsi.workqueue_status', 'workqueue_strike returns the new status');

-- workqueue_requeue ------------------------------------------------------------------------

select pg_temp.running('q') as rq1 \gset
select pg_temp.running('q') as rq2 \gset
select pepsi.workqueue_inject('q') as rq_pending \gset
select pg_temp.running('q') as rq_moved \gset
select pepsi.workqueue_advance(:rq_moved, 'q', 'q2') is null as x \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :rq_moved;
select pg_temp.running('q') as rq_wrong \gset
select pg_temp.running('q') as rq_other \gset

select is(pepsi.workqueue_requeue(array[:rq1, :rq2, :rq_pending, :rq_moved, :rq_wrong]::bigint[],
                                  '{q,q,q,q,elsewhere}'),
          2, 'D-89: requeue returns how many rows went back to pending');
select ok((select bool_and(status = 'pending' and stage = 'q') from pepsi.workqueue where workqueue_id in (:rq1, :rq2)),
          'D-89: running rows whose id and stage match are pending again at the same stage');
select is((select status::text from pepsi.workqueue where workqueue_id = :rq_pending), 'pending',
          'requeue skips a row that is not running');
select row_eq(format('select stage, status::text from pepsi.workqueue where workqueue_id = %s', :rq_moved),
              row('q2'::text, 'running'::text),
              'D-89: requeue leaves alone a row that moved on to another stage and is running there');
select is((select status::text from pepsi.workqueue where workqueue_id = :rq_wrong), 'running',
          'requeue leaves alone a row whose stage does not match the pair');
select is((select status::text from pepsi.workqueue where workqueue_id = :rq_other), 'running',
          'requeue leaves alone a running row it was not given');
select is(pepsi.workqueue_requeue(array[:rq1, :rq2]::bigint[], '{q,q}'), 0,
          'requeue of rows already pending returns 0');
select is(pepsi.workqueue_requeue('{}', '{}'), 0, 'requeue of no ids returns 0');
select is(pepsi.workqueue_requeue(array[-5]::bigint[], '{q}'), 0, 'requeue of an unknown id returns 0');
select throws_ok($$select pepsi.workqueue_requeue('{1,2}', '{q}')$$, 'PX003', null,
                 'PX003: requeue with ids and stages of different lengths');
select throws_ok($$select pepsi.workqueue_requeue('{1}', null)$$, 'PX003', null,
                 'PX003: requeue with ids and NULL stages');
select is(pepsi.workqueue_requeue(array[:rq_other]::bigint[], '{q}'), 1, 'requeue of one pair returns 1');

-- workqueue_reset_running (D-18) -----------------------------------------------------------

select pg_temp.running('z1') as rr1 \gset
select pg_temp.running('z2') as rr2 \gset
select pepsi.workqueue_inject('z1') as rr_paused \gset
update pepsi.workqueue set status = 'paused', timeout = '2030-01-01' where workqueue_id = :rr_paused;
select pepsi.workqueue_inject('z1') as rr_failed \gset
update pepsi.workqueue set status = 'failed' where workqueue_id = :rr_failed;
select count(*) as running_before from pepsi.workqueue where status = 'running' \gset

select is(pepsi.workqueue_reset_running(), :running_before::int,
          'D-18: reset_running returns how many running rows it reset');
select is((select count(*) from pepsi.workqueue where status = 'running'), 0::bigint,
          'D-18: after reset_running no row is running');
select ok((select bool_and(status = 'pending') from pepsi.workqueue where workqueue_id in (:rr1, :rr2, :rq_wrong, :rq_moved)),
          'D-18: every orphaned running row is pending again, at any stage');
select is((select stage from pepsi.workqueue where workqueue_id = :rq_moved), 'q2', 'D-18: reset keeps each row''s stage');
select results_eq(format('select status::text from pepsi.workqueue where workqueue_id in (%s, %s) order by workqueue_id', :rr_paused, :rr_failed),
                  $$values ('paused'), ('failed')$$, 'D-18: reset_running leaves paused and failed rows alone');
select is(pepsi.workqueue_reset_running(), 0, 'D-18: a second reset_running finds nothing');

-- workqueue_release_paused (D-93) ----------------------------------------------------------------

update pepsi.workqueue set status = 'failed' where status = 'paused';  -- a clean slate of paused rows
select pepsi.workqueue_inject('rp') as rp_past \gset
select pepsi.workqueue_inject('rp') as rp_now \gset
select pepsi.workqueue_inject('rp') as rp_soon \gset
select pepsi.workqueue_inject('rp2') as rp_later \gset
select pepsi.workqueue_inject('rp') as rp_failed \gset
update pepsi.workqueue set status = 'paused', timeout = '2026-06-01 09:59:50+00' where workqueue_id = :rp_past;
update pepsi.workqueue set status = 'paused', timeout = '2026-06-01 10:00:00+00' where workqueue_id = :rp_now;
update pepsi.workqueue set status = 'paused', timeout = '2026-06-01 10:00:30+00' where workqueue_id = :rp_soon;
update pepsi.workqueue set status = 'paused', timeout = '2026-06-01 10:01:00+00' where workqueue_id = :rp_later;
update pepsi.workqueue set status = 'failed', timeout = '2026-06-01 10:00:10+00' where workqueue_id = :rp_failed;

select row_eq($$select * from pepsi.workqueue_release_paused('2026-06-01 10:00:00+00')$$,
              row(2, '2026-06-01 10:00:30+00'::timestamptz),
              'D-93: release_paused releases the rows due at or before p_now and returns the earliest remaining timeout');
select ok((select bool_and(status = 'pending' and timeout is null and stage = 'rp')
             from pepsi.workqueue where workqueue_id in (:rp_past, :rp_now)),
          'D-93: released rows are pending at their stage with timeout cleared');
select results_eq(format('select status::text, timeout from pepsi.workqueue where workqueue_id in (%s, %s) order by workqueue_id', :rp_soon, :rp_later),
                  $$values ('paused', '2026-06-01 10:00:30+00'::timestamptz), ('paused', '2026-06-01 10:01:00+00'::timestamptz)$$,
                  'D-93: rows due later stay paused with their timeout');
select is((select status::text from pepsi.workqueue where workqueue_id = :rp_failed), 'failed',
          'D-93: a failed row is never released, whatever its timeout');
select row_eq($$select * from pepsi.workqueue_release_paused('2026-06-01 10:00:00+00')$$,
              row(0, '2026-06-01 10:00:30+00'::timestamptz),
              'D-93: a sweep with nothing due releases 0 and still says when to sweep next');
select row_eq($$select * from pepsi.workqueue_release_paused('2026-06-01 10:00:45+00')$$,
              row(1, '2026-06-01 10:01:00+00'::timestamptz),
              'D-93: next_timeout ignores rows of other statuses (the failed row''s timeout)');
select row_eq($$select * from pepsi.workqueue_release_paused('2026-06-01 10:01:00+00')$$,
              row(1, null::timestamptz),
              'D-93: next_timeout is NULL when no paused row remains');
select row_eq($$select * from pepsi.workqueue_release_paused('2026-06-01 10:05:00+00')$$,
              row(0, null::timestamptz),
              'D-93: a sweep of an empty paused set returns (0, NULL)');
select is((select count(*) from pepsi.workqueue_release_paused()), 1::bigint,
          'release_paused returns exactly one row (p_now defaults to now())');

-- workqueue_defer (D-100) ---------------------------------------------------------------------------

select pg_temp.running('d', '{"k": 1, "strikes": 1}') as df1 \gset
select pg_temp.running('d2') as df2 \gset
select pepsi.workqueue_inject('d') as df_pending \gset
select is(pepsi.workqueue_defer(array[:df1, :df2, :df_pending]::bigint[], '{d,d2,d}', '2026-06-01 11:00:30+00', 'lost connection'), 2,
          'D-100: defer returns how many running rows it paused');
select results_eq(format('select stage, status::text, timeout from pepsi.workqueue where workqueue_id in (%s, %s) order by workqueue_id', :df1, :df2),
                  $$values ('d', 'paused', '2026-06-01 11:00:30+00'::timestamptz), ('d2', 'paused', '2026-06-01 11:00:30+00'::timestamptz)$$,
                  'D-100: deferred rows are paused at their stage until p_until');
select is((select state from pepsi.workqueue where workqueue_id = :df1), '{"k": 1, "strikes": 1, "last_error": "lost connection"}'::jsonb,
          'D-100: defer keeps the reason in state.last_error and counts no strike');
select is((select status::text from pepsi.workqueue where workqueue_id = :df_pending), 'pending',
          'defer skips a row that is not running');
select pg_temp.running('d') as df3 \gset
select is(pepsi.workqueue_defer(array[:df3]::bigint[], '{d}', '2026-06-01 11:00:30+00', null), 1, 'defer without a reason');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :df3), 'deferred',
          'defer without a reason records last_error "deferred"');
select pg_temp.running('d') as df4 \gset
select throws_ok(format($$select pepsi.workqueue_defer(array[%s]::bigint[], '{d}', null, 'x')$$, :df4), 'PX003', null,
                 'PX003: defer without a time to resume');
select throws_ok(format($$select pepsi.workqueue_defer(array[%s]::bigint[], '{d,d}', now(), 'x')$$, :df4), 'PX003', null,
                 'PX003: defer with ids and stages of different lengths');
select is(pepsi.workqueue_defer(array[:df4]::bigint[], '{elsewhere}', now() + interval '1 minute', 'x'), 0,
          'D-100: defer leaves a row that has moved on to another stage alone');
select is((select status::text from pepsi.workqueue where workqueue_id = :df4), 'running', 'a refused defer leaves the row running');
select is(pepsi.workqueue_defer('{}', '{}', now(), 'x'), 0, 'defer of no ids returns 0');
select is(pepsi.workqueue_defer(null, null, now(), 'x'), 0, 'defer of NULL ids returns 0');
select row_eq($$select released from pepsi.workqueue_release_paused('2026-06-01 11:00:30+00')$$, row(3),
              'D-100: the paused sweep returns deferred rows when they are due');
select results_eq(format('select stage, status::text from pepsi.workqueue where workqueue_id in (%s, %s, %s) order by workqueue_id', :df1, :df2, :df3),
                  $$values ('d', 'pending'), ('d2', 'pending'), ('d', 'pending')$$,
                  'D-100: ... to the same stage, pending');

-- workqueue_strike: crashes (D-81, D-84..D-87) -------------------------------------------------------

select pg_temp.running('w') as sc \gset
select is(pepsi.workqueue_strike(:sc, 'w', 'crash', 'segfault', '2026-06-01 12:00:00+00'), 'paused'::pepsi.workqueue_status,
          'D-84: the first strike returns paused');
select row_eq(format('select status::text, timeout, stage from pepsi.workqueue where workqueue_id = %s', :sc),
              row('paused'::text, '2026-06-01 12:01:00+00'::timestamptz, 'w'::text),
              'D-84: first strike pauses for 1 minute (timeout = p_now + 1 min) at the same stage');
select is((select state from pepsi.workqueue where workqueue_id = :sc), '{"strikes": 1, "last_error": "segfault"}'::jsonb,
          'D-86: after the first strike state.strikes = 1 and state.last_error = the reason');
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'w', 'crash', 'again')$$, :sc), 'PX005', null,
                 'PX005: a strike on a paused row (not running)');

update pepsi.workqueue set status = 'running' where workqueue_id = :sc;
select is(pepsi.workqueue_strike(:sc, 'w', 'crash', 'segfault 2', '2026-06-01 12:05:00+00'), 'paused'::pepsi.workqueue_status,
          'D-85: the second strike returns paused');
select is((select timeout from pepsi.workqueue where workqueue_id = :sc), '2026-06-01 12:07:00+00'::timestamptz,
          'D-85: second strike pauses for 2 minutes (timeout = p_now + 2 min)');
select is((select state from pepsi.workqueue where workqueue_id = :sc), '{"strikes": 2, "last_error": "segfault 2"}'::jsonb,
          'D-86: after the second strike state.strikes = 2 and last_error is the new reason');

update pepsi.workqueue set status = 'running' where workqueue_id = :sc;
select is(pepsi.workqueue_strike(:sc, 'w', 'crash', 'segfault 3', '2026-06-01 12:10:00+00'), 'failed'::pepsi.workqueue_status,
          'D-87: the third crash strike returns failed');
select row_eq(format('select status::text, timeout, stage from pepsi.workqueue where workqueue_id = %s', :sc),
              row('failed'::text, null::timestamptz, 'w'::text),
              'D-87: third crash strike leaves the row failed, no timeout');
select is((select state from pepsi.workqueue where workqueue_id = :sc),
          '{"strikes": 3, "last_error": "segfault 3", "failed_stage": "w", "failure_class": "crashed"}'::jsonb,
          'D-87: third crash strike fails the message with failure_class crashed and failed_stage');

-- workqueue_strike: hangs (D-82, D-88) --------------------------------------------------------------------

select pg_temp.running('h') as sh \gset
select is(pepsi.workqueue_strike(:sh, 'h', 'hang', 'no answer in 30s', '2026-06-01 13:00:00+00'), 'paused'::pepsi.workqueue_status,
          'D-84: the first hang strike pauses');
select is((select timeout from pepsi.workqueue where workqueue_id = :sh), '2026-06-01 13:01:00+00'::timestamptz,
          'D-84: first hang strike: timeout = p_now + 1 min');
update pepsi.workqueue set status = 'running' where workqueue_id = :sh;
select is(pepsi.workqueue_strike(:sh, 'h', 'hang', 'no answer in 30s', '2026-06-01 13:10:00+00'), 'paused'::pepsi.workqueue_status,
          'D-85: the second hang strike pauses');
select is((select timeout from pepsi.workqueue where workqueue_id = :sh), '2026-06-01 13:12:00+00'::timestamptz,
          'D-85: second hang strike: timeout = p_now + 2 min');
update pepsi.workqueue set status = 'running' where workqueue_id = :sh;
select is(pepsi.workqueue_strike(:sh, 'h', 'hang', 'no answer in 30s', '2026-06-01 13:20:00+00'), 'timeout'::pepsi.workqueue_status,
          'D-88: the third hang strike returns timeout');
select is((select status::text from pepsi.workqueue where workqueue_id = :sh), 'timeout',
          'D-88: third hang strike leaves the row in status timeout');
select is((select state from pepsi.workqueue where workqueue_id = :sh),
          '{"strikes": 3, "last_error": "no answer in 30s", "failed_stage": "h", "failure_class": "timed-out"}'::jsonb,
          'D-88: third hang strike sets failure_class timed-out, failed_stage and strikes 3');

-- The kind of the third strike decides; strikes count per stage. ----------------------------------------

select pg_temp.running('m', '{"strikes": 2}') as smix \gset
select is(pepsi.workqueue_strike(:smix, 'm', 'hang', null, '2026-06-01 14:00:00+00'), 'timeout'::pepsi.workqueue_status,
          'D-88: a hang as third strike (after two crashes) times the message out');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :smix), 'hang',
          'D-86: a strike without a reason records the kind as last_error');

select pg_temp.running('s1', '{"strikes": 2, "last_error": "old"}') as sper \gset
select pepsi.workqueue_advance(:sper, 's1', 's2') is null as x \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :sper;
select is(pepsi.workqueue_strike(:sper, 's2', 'crash', 'new stage crash', '2026-06-01 15:00:00+00'), 'paused'::pepsi.workqueue_status,
          'D-86: strikes count per stage: after an advance the next strike is a first strike again');
select is((select (state->>'strikes')::int from pepsi.workqueue where workqueue_id = :sper), 1,
          'D-86: ... and state.strikes restarts at 1');

select pg_temp.running('n') as snow \gset
select pepsi.workqueue_strike(:snow, 'n', 'crash', 'x') is not null as x \gset
select is((select timeout from pepsi.workqueue where workqueue_id = :snow), now() + interval '1 minute',
          'D-84: p_now defaults to now()');

-- workqueue_strike: refusals -------------------------------------------------------------------------------

select pg_temp.running('v') as sv \gset
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'v', 'oops', 'r')$$, :sv), 'PX003', null,
                 'PX003: a strike of an unknown kind');
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'v', null, 'r')$$, :sv), 'PX003', null,
                 'PX003: a strike of NULL kind');
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'v', 'Crash', 'r')$$, :sv), 'PX003', null,
                 'PX003: strike kinds are case-sensitive');
select throws_ok($$select pepsi.workqueue_strike(-1, 'v', 'crash', 'r')$$, 'PX004', null,
                 'PX004: a strike on an unknown id');
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'other', 'crash', 'r')$$, :sv), 'PX005', null,
                 'PX005: a strike on a row running at another stage');
select pepsi.workqueue_inject('v') as sv_pending \gset
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'v', 'crash', 'r')$$, :sv_pending), 'PX005', null,
                 'PX005: a strike on a pending row');
select throws_ok(format($$select pepsi.workqueue_strike(%s, 'w', 'crash', 'r')$$, :sc), 'PX005', null,
                 'PX005: a strike on a failed row');
select row_eq(format('select status::text, state from pepsi.workqueue where workqueue_id = %s', :sv),
              row('running'::text, '{}'::jsonb), 'refused strikes leave the row running and its state untouched');

select * from finish();
rollback;
