-- Stage results: workqueue_advance, workqueue_finish, workqueue_pause,
-- workqueue_fail (D-74..D-76, D-79, D-92, D-110, D-111), and the refusal
-- that keeps a message from being completed twice (PX004, PX005).

begin;
select plan(75);

-- A message running at p_stage, as the dispatcher leaves it after a claim.
create function pg_temp.running(p_stage text, p_state jsonb default '{}')
returns bigint language plpgsql as $$
declare
    v_id bigint;
begin
    v_id := pepsi.workqueue_inject(p_stage, p_state => p_state, p_body => 'body');
    update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = v_id;
    return v_id;
end $$;

select has_function('pepsi', 'workqueue_advance', array['bigint', 'text', 'text', 'jsonb', 'text[]', 'integer'], 'workqueue_advance exists');
select has_function('pepsi', 'workqueue_finish', array['bigint', 'text'], 'workqueue_finish exists');
select has_function('pepsi', 'workqueue_pause', array['bigint', 'text', 'timestamp with time zone', 'text', 'jsonb'], 'workqueue_pause exists');
select has_function('pepsi', 'workqueue_fail', array['bigint', 'text', 'text', 'text', 'jsonb'], 'workqueue_fail exists');

-- workqueue_advance ------------------------------------------------------------------

select pg_temp.running('a', '{"x": 1, "keep": true}') as adv \gset
select lives_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'b', '{"x": 2, "y": 3}')$$, :adv),
                'D-74: advance of a running row succeeds');
select row_eq(format('select stage, status::text from pepsi.workqueue where workqueue_id = %s', :adv),
              row('b'::text, 'pending'::text), 'D-74: advance sets the next stage and pending in one call');
select is((select state - 'hops' from pepsi.workqueue where workqueue_id = :adv), '{"x": 2, "y": 3, "keep": true}'::jsonb,
          'D-74: advance merges p_state keys into state (new keys win, others kept)');
select isnt((select body_id from pepsi.workqueue where workqueue_id = :adv), null, 'advance keeps the body');

select pg_temp.running('a', '{"strikes": 2, "last_error": "crashed twice"}') as adv_s \gset
select pepsi.workqueue_advance(:adv_s, 'a', 'b') is null as x \gset
select is((select state - 'hops' from pepsi.workqueue where workqueue_id = :adv_s), '{"last_error": "crashed twice"}'::jsonb,
          'D-74: advance clears state.strikes (strikes count per stage) and keeps the rest');
select pg_temp.running('a', '{"n": 1}') as adv_n \gset
select pepsi.workqueue_advance(:adv_n, 'a', 'b', '{"strikes": 1}') is null as x \gset
select is((select state - 'hops' from pepsi.workqueue where workqueue_id = :adv_n), '{"n": 1}'::jsonb,
          'advance drops strikes even when p_state carries it');
select pg_temp.running('a', '{"n": 1}') as adv_null \gset
select pepsi.workqueue_advance(:adv_null, 'a', 'b', null) is null as x \gset
select is((select state from pepsi.workqueue where workqueue_id = :adv_null), '{"n": 1, "hops": 1}'::jsonb,
          'advance with p_state NULL leaves state as it was (but for the hop count, issue 12)');

select pg_temp.running('a') as adv_bad \gset
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'bad name!')$$, :adv_bad), 'PX001', null,
                 'PX001: advance to a bad next stage');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', null)$$, :adv_bad), 'PX001', null,
                 'PX001: advance to a NULL next stage');
select row_eq(format('select stage, status::text from pepsi.workqueue where workqueue_id = %s', :adv_bad),
              row('a'::text, 'running'::text), 'a refused advance leaves the row running at its stage');
select throws_ok($$select pepsi.workqueue_advance(-42, 'a', 'b')$$, 'PX004', 'message -42 does not exist',
                 'PX004: advance of an unknown id');
select throws_ok($$select pepsi.workqueue_advance(null, 'a', 'b')$$, 'PX004', null,
                 'PX004: advance of a NULL id');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'b', 'c')$$, :adv), 'PX005',
                 format('message %s is pending at stage "b", not running at stage "b"', :adv),
                 'PX005: advance of a row that is not running (the message says status and stage)');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'other', 'c')$$, :adv_bad), 'PX005', null,
                 'PX005: advance of a row running at another stage');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'c')$$, :adv), 'PX005', null,
                 'PX005: a second advance from the old stage (no double completion)');

-- workqueue_finish -------------------------------------------------------------------

select pg_temp.running('f') as fin \gset
select lives_ok(format($$select pepsi.workqueue_finish(%s, 'f')$$, :fin), 'D-75: finish of a running row succeeds');
select is((select count(*) from pepsi.workqueue where workqueue_id = :fin), 0::bigint, 'D-75: finish deletes the row');
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'f')$$, :fin), 'PX004', null,
                 'PX004: finishing the same message twice (no double completion)');
select throws_ok($$select pepsi.workqueue_finish(-1, 'f')$$, 'PX004', null, 'PX004: finish of an unknown id');

select pg_temp.running('f') as fin_other \gset
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'g')$$, :fin_other), 'PX005', null,
                 'PX005: finish of a row running at another stage');
select is((select status::text from pepsi.workqueue where workqueue_id = :fin_other), 'running',
          'a refused finish leaves the row in place');
select pepsi.workqueue_inject('f') as fin_pending \gset
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'f')$$, :fin_pending), 'PX005', null,
                 'PX005: finish of a pending row');
select pg_temp.running('f') as fin_adv \gset
select pepsi.workqueue_advance(:fin_adv, 'f', 'g') is null as x \gset
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'f')$$, :fin_adv), 'PX005', null,
                 'PX005: finish after the row was advanced (no double completion)');
select pg_temp.running('f') as fin_failed \gset
select pepsi.workqueue_fail(:fin_failed, 'f', 'broken') is null as x \gset
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'f')$$, :fin_failed), 'PX005', null,
                 'PX005: finish of a failed row');
select is((select status::text from pepsi.workqueue where workqueue_id = :fin_failed), 'failed',
          'a failed row stays failed after a refused finish');

-- workqueue_pause ------------------------------------------------------------------------

select pg_temp.running('p', '{"n": 1}') as pau \gset
select lives_ok(format($$select pepsi.workqueue_pause(%s, 'p', '2026-05-01 10:00:00+00', 'greylisted', '{"tries": 1}')$$, :pau),
                'D-92: pause of a running row succeeds');
select row_eq(format('select stage, status::text, timeout from pepsi.workqueue where workqueue_id = %s', :pau),
              row('p'::text, 'paused'::text, '2026-05-01 10:00:00+00'::timestamptz),
              'D-92: pause leaves the row paused at its stage with timeout = p_until');
select is((select state from pepsi.workqueue where workqueue_id = :pau),
          '{"n": 1, "tries": 1, "pause_reason": "greylisted"}'::jsonb,
          'pause keeps p_reason as state.pause_reason and merges p_state');

select pg_temp.running('p', '{"n": 1}') as pau2 \gset
select pepsi.workqueue_pause(:pau2, 'p', '2026-05-01 10:00:00+00') is null as x \gset
select is((select state from pepsi.workqueue where workqueue_id = :pau2), '{"n": 1}'::jsonb,
          'pause without a reason or state leaves state as it was');

select pg_temp.running('p') as pau_bad \gset
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'p', null)$$, :pau_bad), 'PX003', null,
                 'PX003: pause without a time to resume');
select is((select status::text from pepsi.workqueue where workqueue_id = :pau_bad), 'running',
          'a refused pause leaves the row running');
select throws_ok($$select pepsi.workqueue_pause(-1, 'p', now())$$, 'PX004', null, 'PX004: pause of an unknown id');
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'p', now())$$, :pau), 'PX005', null,
                 'PX005: pause of a row that is already paused');
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'q', now())$$, :pau_bad), 'PX005', null,
                 'PX005: pause of a row running at another stage');

-- workqueue_fail ---------------------------------------------------------------------------

select pg_temp.running('x', '{"n": 1}') as fai \gset
select lives_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'mailbox does not exist')$$, :fai),
                'D-110: fail of a running row succeeds');
select is((select status::text from pepsi.workqueue where workqueue_id = :fai), 'failed', 'D-75: fail leaves the row failed');
select is((select state from pepsi.workqueue where workqueue_id = :fai),
          '{"n": 1, "last_error": "mailbox does not exist", "failed_stage": "x", "failure_class": "permanent"}'::jsonb,
          'D-111: fail sets state.last_error, failed_stage and failure_class (default permanent)');
select is((select timeout from pepsi.workqueue where workqueue_id = :fai), null, 'fail clears timeout');
select is((select stage from pepsi.workqueue where workqueue_id = :fai), 'x', 'fail leaves the row at its stage');

select pg_temp.running('x') as fai_re \gset
select pepsi.workqueue_fail(:fai_re, 'x', 'gave up', 'retries-exhausted', '{"temporary_failures": {"x": 7}}') is null as x \gset
select is((select state from pepsi.workqueue where workqueue_id = :fai_re),
          '{"temporary_failures": {"x": 7}, "last_error": "gave up", "failed_stage": "x", "failure_class": "retries-exhausted"}'::jsonb,
          'D-111: fail with class retries-exhausted, p_state merged');

select pg_temp.running('x') as fai_ovr \gset
select pepsi.workqueue_fail(:fai_ovr, 'x', 'real reason', 'permanent',
                            '{"failure_class": "bogus", "failed_stage": "elsewhere", "last_error": "fake", "note": 1}') is null as x \gset
select is((select state from pepsi.workqueue where workqueue_id = :fai_ovr),
          '{"note": 1, "last_error": "real reason", "failed_stage": "x", "failure_class": "permanent"}'::jsonb,
          'D-111: the arguments win over the same keys in p_state');

select pg_temp.running('x') as fai_null \gset
select pepsi.workqueue_fail(:fai_null, 'x', null) is null as x \gset
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :fai_null), 'failed',
          'fail without a reason records last_error "failed"');

select pg_temp.running('x') as fai_cls \gset
select pepsi.workqueue_fail(:fai_cls, 'x', 'boom', 'crashed') is null as x \gset
select is((select state->>'failure_class' from pepsi.workqueue where workqueue_id = :fai_cls), 'crashed',
          'D-87: fail accepts class crashed');
select pg_temp.running('x') as fai_cls2 \gset
select pepsi.workqueue_fail(:fai_cls2, 'x', 'slow', 'timed-out') is null as x \gset
select is((select state->>'failure_class' from pepsi.workqueue where workqueue_id = :fai_cls2), 'timed-out',
          'D-88: fail accepts class timed-out');

select pg_temp.running('x') as fai_bad \gset
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'r', 'bogus')$$, :fai_bad), 'PX007', null,
                 'PX007: fail with an unknown failure class');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'r', null)$$, :fai_bad), 'PX007', null,
                 'PX007: fail with a NULL failure class');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'r', 'Permanent')$$, :fai_bad), 'PX007', null,
                 'PX007: failure classes are case-sensitive');
select is((select status::text from pepsi.workqueue where workqueue_id = :fai_bad), 'running',
          'a refused fail leaves the row running');
select throws_ok($$select pepsi.workqueue_fail(-1, 'x', 'r')$$, 'PX004', null, 'PX004: fail of an unknown id');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'again')$$, :fai), 'PX005', null,
                 'PX005: failing a failed row again (no double completion)');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'y', 'r')$$, :fai_bad), 'PX005', null,
                 'PX005: fail of a row running at another stage');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'p', 'r')$$, :pau), 'PX005', null,
                 'PX005: fail of a paused row');

select pg_temp.running('x') as adv_fail \gset
select pepsi.workqueue_advance(:adv_fail, 'x', 'y') is null as x \gset
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'x', 'late')$$, :adv_fail), 'PX005', null,
                 'PX005: fail after advance (no double completion)');
select row_eq(format('select stage, status::text, state from pepsi.workqueue where workqueue_id = %s', :adv_fail),
              row('y'::text, 'pending'::text, '{"hops": 1}'::jsonb), 'the advanced row is untouched by the refused fail');

-- A worker that outlived its dispatcher: the row was handed out again and
-- is running at the same stage; that is the dispatcher's business, but a
-- result for a row that moved on is always refused.
select pg_temp.running('x') as moved \gset
select pepsi.workqueue_advance(:moved, 'x', 'y') is null as x \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :moved;
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'x')$$, :moved), 'PX005', null,
                 'PX005: finish at the old stage of a row now running at its next stage');
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'x', now())$$, :moved), 'PX005', null,
                 'PX005: pause at the old stage of a row now running at its next stage');
select lives_ok(format($$select pepsi.workqueue_finish(%s, 'y')$$, :moved),
                'finish at the row''s current stage succeeds');

-- failure_class_check ------------------------------------------------------------------------

select is(pepsi.failure_class_check('permanent'), 'permanent', 'failure_class_check accepts permanent (D-110)');
select is(pepsi.failure_class_check('retries-exhausted'), 'retries-exhausted', 'failure_class_check accepts retries-exhausted (D-111)');
select is(pepsi.failure_class_check('crashed'), 'crashed', 'failure_class_check accepts crashed (D-87)');
select is(pepsi.failure_class_check('timed-out'), 'timed-out', 'failure_class_check accepts timed-out (D-88)');
select throws_ok($$select pepsi.failure_class_check('')$$, 'PX007', null, 'PX007: empty failure class');

-- Results on a row another status holds ---------------------------------------------------------

select pepsi.workqueue_inject('t') as tmo \gset
update pepsi.workqueue set status = 'timeout' where workqueue_id = :tmo;
select throws_ok(format($$select pepsi.workqueue_advance(%s, 't', 'u')$$, :tmo), 'PX005', null,
                 'PX005: advance of a timed-out row');
select throws_ok(format($$select pepsi.workqueue_finish(%s, 't')$$, :tmo), 'PX005', null,
                 'PX005: finish of a timed-out row');

-- p_state that is not an object cannot corrupt state: the table CHECK holds.
select pg_temp.running('j') as js \gset
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'j', 'k', '[1]')$$, :js), null, null,
                 'advance with a p_state array is refused');
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'j', now(), null, '"s"')$$, :js), null, null,
                 'pause with a p_state string is refused');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'j', 'r', 'permanent', '5')$$, :js), null, null,
                 'fail with a p_state number is refused');
select row_eq(format('select stage, status::text, state from pepsi.workqueue where workqueue_id = %s', :js),
              row('j'::text, 'running'::text, '{}'::jsonb), 'the row is unchanged by the refused results');

-- p_state must be an object
select pepsi.workqueue_inject('st') as st_id \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :st_id;
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'st', 'next', '[1]')$$, :st_id), 'PX003', null,
                 'PX003: advance with a state patch that is not an object');
select throws_ok(format($$select pepsi.workqueue_pause(%s, 'st', now(), null, '"x"')$$, :st_id), 'PX003', null,
                 'PX003: pause with a state patch that is not an object');
select throws_ok(format($$select pepsi.workqueue_fail(%s, 'st', 'r', 'permanent', '3')$$, :st_id), 'PX003', null,
                 'PX003: fail with a state patch that is not an object');

select * from finish();
rollback;
