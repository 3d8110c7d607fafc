-- pgtap/49-state-machine.sql — pepsi.workqueue_transition, the one state
-- machine of a running message (issue 13): every transition, each refusal
-- with its code, a mixed batch in one call, and the fused move-then-pause
-- (and move-then-fail) done by one call, in one statement.
begin;
select plan(60);

create function pg_temp.running(p_stage text, p_state jsonb default '{}', p_claim bigint default null)
returns bigint language plpgsql as $$
declare
    v_id bigint := pepsi.workqueue_inject(p_stage, p_state => p_state);
begin
    update pepsi.workqueue set status = 'running', claimed_at = now(), claim_id = p_claim where workqueue_id = v_id;
    return v_id;
end $$;

-- the rows of one call, by id: outcome/status/code
create function pg_temp.t(p_ops pepsi.transition[], p_now timestamptz default now())
returns text language sql as $$
    select string_agg(t.outcome || '/' || coalesce(t.status::text, '-') || '/' || coalesce(t.code, '-'), ' '
                      order by t.ord)
      from pepsi.workqueue_transition(p_ops, 5, p_now) with ordinality as t(id, outcome, status, code, ord)
$$;

create function pg_temp.row_of(p_id bigint) returns text language sql as $$
    select w.stage || '/' || w.status || '/' || coalesce(w.timeout::text, '-') from pepsi.workqueue w
     where w.workqueue_id = p_id
$$;

select has_function('pepsi', 'workqueue_transition',
                    array['pepsi.transition[]', 'integer', 'timestamp with time zone'],
                    'issue 13: the state machine exists');

-- advance -------------------------------------------------------------------------------------
select pg_temp.running('a', '{"strikes": 2, "keep": 1}') as adv \gset
-- a running row carrying a stale timeout (as an operator's hand edit could leave it)
update pepsi.workqueue set timeout = '2030-01-01' where workqueue_id = :adv;
select is(pg_temp.t(array[pepsi.transition_of(:adv, 'a', 'advance', p_next => 'b', p_state => '{"x": 1}')]),
          'ok/pending/-', 'issue 13: advance answers ok, pending');
select is(pg_temp.row_of(:adv), 'b/pending/-', 'issue 13: advance moves the row to next, pending, and clears timeout');
select is((select state - 'hop_path' from pepsi.workqueue where workqueue_id = :adv), '{"keep": 1, "x": 1, "hops": 1}'::jsonb,
          'issue 13: advance merges the patch, clears strikes and counts the hop');
-- the one-message wrapper takes the same path: timeout cleared too (the batched behaviour)
select pg_temp.running('a') as adv1 \gset
update pepsi.workqueue set timeout = '2030-01-01' where workqueue_id = :adv1;
select is(pepsi.workqueue_advance(:adv1, 'a', 'b'), 'ok', 'issue 13: workqueue_advance is a wrapper: ok');
select is(pg_temp.row_of(:adv1), 'b/pending/-',
          'issue 13: workqueue_advance clears timeout like the batched commit (one behaviour)');
select pg_temp.running('a', '{"hops": 5}') as advl \gset
select is(pg_temp.t(array[pepsi.transition_of(:advl, 'a', 'advance', p_next => 'b')]), 'loop/failed/-',
          'issue 13: an advance past MAX_HOPS answers loop, failed');
select is((select stage || ' ' || (state->>'failure_class') from pepsi.workqueue where workqueue_id = :advl), 'a loop',
          'issue 13: the loop fails the message where the refused hop starts');

-- move ----------------------------------------------------------------------------------------
select pg_temp.running('m') as mov \gset
select is(pg_temp.t(array[pepsi.transition_of(:mov, 'm', 'move', p_next => 'n2', p_via => '{n1}')]), 'ok/running/-',
          'issue 13: move answers ok, still running');
select is((select stage || ' ' || (state->>'hops') from pepsi.workqueue where workqueue_id = :mov), 'n2 2',
          'issue 13: move goes to next through via, counting 2 hops');

-- finish --------------------------------------------------------------------------------------
select pg_temp.running('f') as fin \gset
select is(pg_temp.t(array[pepsi.transition_of(:fin, 'f', 'finish')]), 'ok/-/-', 'issue 13: finish answers ok');
select is((select count(*)::int from pepsi.workqueue where workqueue_id = :fin), 0, 'issue 13: finish deletes the row');

-- pause ---------------------------------------------------------------------------------------
select pg_temp.running('p') as pau \gset
select is(pg_temp.t(array[pepsi.transition_of(:pau, 'p', 'pause', p_until => '2030-01-01Z', p_reason => 'later',
                                              p_state => '{"k": 2}')]),
          'ok/paused/-', 'issue 13: pause answers ok, paused');
select is(pg_temp.row_of(:pau), 'p/paused/2030-01-01 00:00:00+00', 'issue 13: pause sets the time to resume');
select is((select state from pepsi.workqueue where workqueue_id = :pau), '{"k": 2, "pause_reason": "later"}'::jsonb,
          'issue 13: pause merges the patch and keeps the reason');

-- fail ----------------------------------------------------------------------------------------
select pg_temp.running('x') as fai \gset
select is(pg_temp.t(array[pepsi.transition_of(:fai, 'x', 'fail', p_reason => 'bad', p_class => 'crashed')]),
          'ok/failed/-', 'issue 13: fail answers ok, failed');
select is((select state from pepsi.workqueue where workqueue_id = :fai),
          '{"last_error": "bad", "failed_stage": "x", "failure_class": "crashed"}'::jsonb,
          'issue 13: fail records reason, stage and class');

-- host error ----------------------------------------------------------------------------------
select pg_temp.running('h', '{"temporary_failures": {"h": 2}}') as he \gset
select is(pg_temp.t(array[pepsi.transition_of(:he, 'h', 'host_error', p_reason => 'down', p_lifetime => '1 day')],
                    '2026-06-01Z'),
          'ok/paused/-', 'issue 13: a host error within the lifetime pauses');
select is(pg_temp.row_of(:he), 'h/paused/2026-06-01 00:04:00+00', 'issue 13: the third retry backs off 4 minutes');
select is((select state from pepsi.workqueue where workqueue_id = :he),
          '{"last_error": "down", "temporary_failures": {"h": 3}}'::jsonb, 'issue 13: host error counts its retries');
select pg_temp.running('h', '{"strikes": 1}') as heb \gset
select is(pg_temp.t(array[pepsi.transition_of(:heb, 'h', 'host_error', p_reason => 'down', p_lifetime => '1 second',
                                              p_bounce => 'bounce')], now() + interval '1 hour'),
          'ok/pending/-', 'issue 13: a host error past the lifetime goes pending to the bounce stage');
select is((select stage || ' ' || (state->>'failure_class') || ' ' || (state->>'failed_stage') || ' '
                  || (state ? 'strikes')::text from pepsi.workqueue where workqueue_id = :heb),
          'bounce retries-exhausted h false', 'issue 13: bounced as retries-exhausted, strikes cleared');
select pg_temp.running('h') as hef \gset
select is(pg_temp.t(array[pepsi.transition_of(:hef, 'h', 'host_error', p_lifetime => '1 second')],
                    now() + interval '1 hour'),
          'ok/failed/-', 'issue 13: a host error past the lifetime without a bounce stage fails');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :hef), 'host error',
          'issue 13: a host error without a reason says host error');

-- strike --------------------------------------------------------------------------------------
select pg_temp.running('s') as stk \gset
select is(pg_temp.t(array[pepsi.transition_of(:stk, 's', 'strike', p_kind => 'crash', p_reason => 'died')],
                    '2026-06-01Z'),
          'ok/paused/-', 'issue 13: a first strike pauses');
select is(pg_temp.row_of(:stk), 's/paused/2026-06-01 00:01:00+00', 'issue 13: a first strike pauses 1 minute');
select pg_temp.running('s', '{"strikes": 2}') as stk3 \gset
select is(pg_temp.t(array[pepsi.transition_of(:stk3, 's', 'strike', p_kind => 'hang', p_reason => 'hung')]),
          'ok/timeout/-', 'issue 13: a third hang strike leaves the row timeout');
select is((select state from pepsi.workqueue where workqueue_id = :stk3),
          '{"strikes": 3, "last_error": "hung", "failed_stage": "s", "failure_class": "timed-out"}'::jsonb,
          'issue 13: the third strike records timed-out');

-- requeue and defer ---------------------------------------------------------------------------
select pg_temp.running('r', '{"n": 1}', 77) as rq \gset
select is(pg_temp.t(array[pepsi.transition_of(:rq, 'r', 'requeue', p_claim_id => 77)]), 'ok/pending/-',
          'issue 13: requeue (of a claim id) answers ok, pending');
select is((select stage || ' ' || status || ' ' || state::text from pepsi.workqueue where workqueue_id = :rq),
          'r pending {"n": 1}', 'issue 13: requeue leaves stage and state untouched');
select pg_temp.running('d') as dfr \gset
select is(pg_temp.t(array[pepsi.transition_of(:dfr, 'd', 'defer', p_until => '2030-01-01Z', p_reason => 'no db')]),
          'ok/paused/-', 'issue 13: defer answers ok, paused');
select is((select state->>'last_error' || ' ' || timeout::text from pepsi.workqueue where workqueue_id = :dfr),
          'no db 2030-01-01 00:00:00+00', 'issue 13: defer keeps the reason and the time');

-- the fused move-then-pause / move-then-fail, one call ------------------------------------------
select pg_temp.running('c1', '{"strikes": 1}') as fp \gset
select is(pg_temp.t(array[pepsi.transition_of(:fp, 'c1', 'pause', p_at => 'c3', p_via => '{c2}',
                                              p_until => '2030-01-01Z', p_reason => 'wait')]),
          'ok/paused/-', 'issue 13: move-then-pause in one call answers ok, paused');
select is((select stage || ' ' || status || ' ' || (state->>'hops') || ' ' || (state->>'pause_reason') || ' '
                  || (state ? 'strikes')::text from pepsi.workqueue where workqueue_id = :fp),
          'c3 paused 2 wait false',
          'issue 13: the single call both moved the row to the fused stage (2 hops, strikes cleared) and paused it there');
select pg_temp.running('c1') as ff \gset
select is(pg_temp.t(array[pepsi.transition_of(:ff, 'c1', 'fail', p_at => 'c2', p_reason => 'no')]), 'ok/failed/-',
          'issue 13: move-then-fail in one call answers ok, failed');
select is((select stage || ' ' || (state->>'failed_stage') || ' ' || (state->>'hops')
             from pepsi.workqueue where workqueue_id = :ff),
          'c2 c2 1', 'issue 13: move-then-fail fails the row at the fused stage, the hop counted');
select pg_temp.running('c1') as fh \gset
select is(pg_temp.t(array[pepsi.transition_of(:fh, 'c1', 'host_error', p_at => 'c2', p_reason => 'down',
                                              p_lifetime => '1 day')]),
          'ok/paused/-', 'issue 13: move-then-host-error in one call');
select is((select stage || ' ' || (state->'temporary_failures')::text from pepsi.workqueue where workqueue_id = :fh),
          'c2 {"c2": 1}', 'issue 13: the host error is charged at the fused stage');
select pg_temp.running('c1', '{"hops": 4}') as fl \gset
select is(pg_temp.t(array[pepsi.transition_of(:fl, 'c1', 'pause', p_at => 'c3', p_via => '{c2}',
                                              p_until => '2030-01-01Z')]),
          'loop/failed/-', 'issue 13: a fused move past MAX_HOPS answers loop and does not pause');
select is((select stage || ' ' || status || ' ' || (state->>'failure_class') from pepsi.workqueue
            where workqueue_id = :fl), 'c2 failed loop', 'issue 13: the loop fails the row where its refused hop starts');
-- all or nothing: a refused pause part leaves the row where it was, not moved
select pg_temp.running('c1') as fa \gset
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'c1', 'fail', p_at => 'c2', p_class => 'nope')])$$, :fa),
                 'PX007', null, 'issue 13: a bad failure class refuses the whole call');
select is(pg_temp.row_of(:fa), 'c1/running/-', 'issue 13: nothing was moved: the move and the result are one statement');

-- refusals ------------------------------------------------------------------------------------
select pg_temp.running('z') as rz \gset
select pepsi.workqueue_inject('z') as pz \gset
select pg_temp.running('z', '{}', 5) as cz \gset
select is(pg_temp.t(array[pepsi.transition_of(-7, 'z', 'finish')]), 'refused/-/PX004',
          'issue 13: an unknown id is refused with PX004');
select is(pg_temp.t(array[pepsi.transition_of(null, 'z', 'finish')]), 'refused/-/PX004',
          'issue 13: a NULL id is refused with PX004');
select is(pg_temp.t(array[pepsi.transition_of(:rz, 'other', 'advance', p_next => 'b')]), 'refused/-/PX005',
          'issue 13: a row running at another stage is refused with PX005');
select is(pg_temp.t(array[pepsi.transition_of(:pz, 'z', 'pause', p_until => now())]), 'refused/-/PX005',
          'issue 13: a row that is not running is refused with PX005');
select is(pg_temp.t(array[pepsi.transition_of(:cz, 'z', 'requeue', p_claim_id => 6)]), 'refused/-/PX005',
          'issue 13: a row running under another claim id is refused with PX005');
select is(pg_temp.row_of(:rz) || ' ' || pg_temp.row_of(:pz) || ' ' || pg_temp.row_of(:cz),
          'z/running/- z/pending/- z/running/-', 'issue 13: refused rows are untouched');
select throws_ok(format($$select pepsi.workqueue_finish(%s, 'other')$$, :rz), 'PX005', null,
                 'issue 13: the wrappers raise a refusal as before (PX005)');

-- a mixed batch in one call -------------------------------------------------------------------
select pg_temp.running('b') as b1 \gset
select pg_temp.running('b') as b2 \gset
select pg_temp.running('b') as b3 \gset
select pg_temp.running('b') as b4 \gset
select pg_temp.running('b') as b5 \gset
select pg_temp.running('b') as b6 \gset
select is(pg_temp.t(array[
              pepsi.transition_of(:b1, 'b', 'advance', p_next => 'bb'),
              pepsi.transition_of(:b2, 'b', 'finish'),
              pepsi.transition_of(:b3, 'b', 'pause', p_at => 'bz', p_until => '2030-01-01Z'),
              pepsi.transition_of(:b4, 'b', 'strike', p_kind => 'crash'),
              pepsi.transition_of(:b5, 'b', 'requeue'),
              pepsi.transition_of(:b6, 'wrong', 'fail'),
              pepsi.transition_of(-1, 'b', 'defer', p_until => now())]),
          'ok/pending/- ok/-/- ok/paused/- ok/paused/- ok/pending/- refused/-/PX005 refused/-/PX004',
          'issue 13: a mixed batch in one call: each op its own outcome, in order');
select is((select string_agg(stage || ':' || status, ' ' order by workqueue_id) from pepsi.workqueue
            where workqueue_id in (:b1, :b2, :b3, :b4, :b5, :b6)),
          'bb:pending bz:paused b:paused b:pending b:running', 'issue 13: the mixed batch wrote each row');

-- malformed calls, refused before any row is touched -------------------------------------------
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'explode')])$$, :b6), 'PX003', null,
                 'issue 13: an unknown "do" is PX003');
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'finish'), pepsi.transition_of(%s, 'b', 'finish')])$$, :b6, :b6),
                 'PX003', 'a message appears twice in one batch', 'issue 13: an id twice is PX003');
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'pause')])$$, :b6), 'PX003', null,
                 'issue 13: a pause without until is PX003');
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'advance', p_next => 'bad name')])$$, :b6),
                 'PX001', null, 'issue 13: a bad next stage is PX001');
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'advance', p_next => 'x', p_at => 'y')])$$, :b6),
                 'PX003', null, 'issue 13: "at" with an advance is PX003');
select throws_ok(format($$select pg_temp.t(array[pepsi.transition_of(%s, 'b', 'strike', p_kind => 'boom')])$$, :b6),
                 'PX003', null, 'issue 13: a strike of an unknown kind is PX003');
select is(pg_temp.row_of(:b6), 'b/running/-', 'issue 13: a refused call touched nothing');

-- workqueue_commit's fused result ("at"), the worker's one call --------------------------------
select pg_temp.running('w1') as wc \gset
select pg_temp.running('w1') as wh \gset
update pepsi.workqueue set arrived_at = now() - interval '1 hour' where workqueue_id = :wh;
select results_eq(
    format('select workqueue_id, outcome from pepsi.workqueue_commit(%L, %L) order by 1', 'w1',
           jsonb_build_array(
               jsonb_build_object('id', :wc, 'do', 'pause', 'at', 'w3', 'via', jsonb_build_array('w2'),
                                  'until', '2030-01-01T00:00:00Z'),
               jsonb_build_object('id', :wh, 'do', 'host_error', 'at', 'w2', 'lifetime', '1 second',
                                  'reason', 'gone'))),
    format('values (%s::bigint, %L), (%s, %L)', :wc, 'ok', :wh, 'failed'),
    'issue 13: workqueue_commit commits a fused pause and a fused host error in one call; an exhausted host error answers failed');
select is(pg_temp.row_of(:wc) || ' ' || (select stage || '/' || status from pepsi.workqueue where workqueue_id = :wh),
          'w3/paused/2030-01-01 00:00:00+00 w2/failed',
          'issue 13: the fused results were written at the fused stages');

select * from finish();
rollback;
