-- pgtap/16-commit-batch.sql — pepsi.workqueue_commit: a batch of stage
-- results in one call (D-69..D-73).
begin;
select plan(22);

create function pg_temp.running(p_stage text, p_state jsonb default '{}') returns bigint
language plpgsql as $$
declare
    v_id bigint := pepsi.workqueue_inject(p_stage, p_state => p_state);
begin
    update pepsi.workqueue set status = 'running' where workqueue_id = v_id;
    return v_id;
end
$$;

select pg_temp.running('s', '{"strikes": 1}') as a \gset
select pg_temp.running('s') as f \gset
select pg_temp.running('s') as p \gset
select pg_temp.running('s') as x \gset
select pg_temp.running('other') as o \gset
select pepsi.workqueue_inject('s') as q \gset

select results_eq(
    format('select workqueue_id, outcome from pepsi.workqueue_commit(%L, %L) order by 1', 's',
           jsonb_build_array(
               jsonb_build_object('id', :a, 'do', 'advance', 'next', 't', 'state', jsonb_build_object('k', 1)),
               jsonb_build_object('id', :f, 'do', 'finish'),
               jsonb_build_object('id', :p, 'do', 'pause', 'until', '2030-01-01T00:00:00Z', 'reason', 'later'),
               jsonb_build_object('id', :x, 'do', 'fail', 'reason', 'bad input'),
               jsonb_build_object('id', :o, 'do', 'finish'),
               jsonb_build_object('id', :q, 'do', 'advance', 'next', 't'))),
    format('values (%s::bigint, %L), (%s, %L), (%s, %L), (%s, %L), (%s, %L), (%s, %L)',
           :a, 'ok', :f, 'ok', :p, 'ok', :x, 'ok', :o, 'refused', :q, 'refused'),
    'D-71: one call commits advances, finishes, pauses and failures; rows not running at the stage are refused');

select is((select stage || '/' || status from pepsi.workqueue where workqueue_id = :a), 't/pending',
          'D-74: an advance moves the row to the next stage, pending');
select is((select state from pepsi.workqueue where workqueue_id = :a), '{"k": 1, "hops": 1}'::jsonb,
          'an advance merges the state patch, clears strikes and counts the hop (issue 12)');
select is((select count(*)::int from pepsi.workqueue where workqueue_id = :f), 0, 'D-75: a finish deletes the row');
select is((select status::text || ' ' || timeout::text from pepsi.workqueue where workqueue_id = :p),
          'paused 2030-01-01 00:00:00+00', 'D-92: a pause sets paused and the timeout');
select is((select state->>'pause_reason' from pepsi.workqueue where workqueue_id = :p), 'later', 'the pause reason is kept');
select is((select status::text from pepsi.workqueue where workqueue_id = :x), 'failed', 'D-79: a fail leaves the row failed');
select is((select state - 'k' from pepsi.workqueue where workqueue_id = :x),
          '{"last_error": "bad input", "failed_stage": "s", "failure_class": "permanent"}'::jsonb,
          'D-111: a failure records last_error, failed_stage and failure_class permanent by default');
select is((select status::text from pepsi.workqueue where workqueue_id = :o), 'running',
          'no double completion: a row running at another stage is untouched');
select is((select status::text from pepsi.workqueue where workqueue_id = :q), 'pending',
          'no double completion: a pending row is untouched');

select results_eq($$select count(*)::int from pepsi.workqueue_commit('s', '[]')$$, $$values (0)$$,
                  'an empty batch commits nothing');

select pg_temp.running('s') as b \gset
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "advance", "next": "bad name"}]')$$, :b),
                 'PX001', null, 'PX001: a bad next stage rejects the batch');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "explode"}]')$$, :b),
                 'PX003', null, 'PX003: an unknown action');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "pause"}]')$$, :b),
                 'PX003', null, 'PX003: a pause without a time');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "finish"}, {"id": %s, "do": "finish"}]')$$, :b, :b),
                 'PX003', null, 'PX003: a message twice in one batch');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "fail", "class": "weird"}]')$$, :b),
                 'PX007', null, 'PX007: an unknown failure class');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "advance", "next": "t", "state": [1]}]')$$, :b),
                 'PX003', null, 'PX003: a state patch that is not an object');
select throws_ok($$select * from pepsi.workqueue_commit('s', '{}')$$, 'PX003', null, 'PX003: results not an array');
select throws_ok($$select * from pepsi.workqueue_commit('s', '[{"do": "finish"}]')$$, 'PX003', null, 'PX003: a result without an id');
select is((select status::text from pepsi.workqueue where workqueue_id = :b), 'running', 'a rejected batch changes nothing');

select ok(has_function_privilege('pepsi_worker', 'pepsi.workqueue_commit(text, jsonb, int)', 'execute'),
          'D-71: workers can commit batches');
select ok(not has_function_privilege('pepsi_reader', 'pepsi.workqueue_commit(text, jsonb, int)', 'execute'),
          'readers cannot');

select * from finish();
rollback;
