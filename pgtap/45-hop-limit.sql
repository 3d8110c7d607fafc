-- pgtap/45-hop-limit.sql — issue 12: a hop limit per message. Every
-- advance counts its hops in state.hops (pepsi.workqueue_hop, the one
-- place the rule is written): workqueue_advance, workqueue_commit,
-- workqueue_move and settings_apply's advance; a chain of k fused stages
-- is k hops. Past MAX_HOPS (p_max_hops, 1000 by default) the message
-- fails where it is, failure_class 'loop', with the limit and the last
-- stages of its path in last_error; the caller is told 'loop'.
begin;
select plan(64);

-- A message running at p_stage with state p_state.
create function pg_temp.running(p_stage text, p_state jsonb default '{}')
returns bigint language plpgsql as $$
declare
    v_id bigint := pepsi.workqueue_inject(p_stage, p_state => p_state, p_body => 'body');
begin
    update pepsi.workqueue set status = 'running' where workqueue_id = v_id;
    return v_id;
end $$;

-- Claims the message again where it is (as the dispatcher would).
create function pg_temp.reclaim(p_id bigint) returns void language sql as $$
    update pepsi.workqueue set status = 'running' where workqueue_id = p_id and status = 'pending'
$$;

create function pg_temp.row_of(p_id bigint) returns text language sql as $$
    select stage || '/' || status || ' hops=' || coalesce(state->>'hops', '-')
           || coalesce(' class=' || (state->>'failure_class'), '')
      from pepsi.workqueue where workqueue_id = p_id
$$;

-- The limit itself, with a small MAX_HOPS -------------------------------------------

select pg_temp.running('a', '{"hops": 4}') as m4 \gset
select is(pepsi.workqueue_advance(:m4, 'a', 'b', null, null, 5), 'ok',
          'issue 12: an advance at hops = MAX_HOPS - 1 passes (returns ok)');
select is(pg_temp.row_of(:m4), 'b/pending hops=5', 'issue 12: and counts it: state.hops = MAX_HOPS');
select pg_temp.reclaim(:m4);
select is(pepsi.workqueue_advance(:m4, 'b', 'c', '{"x": 1}', null, 5), 'loop',
          'issue 12: the next advance returns loop');
select is(pg_temp.row_of(:m4), 'b/failed hops=6 class=loop',
          'issue 12: the message failed where it was, failure_class loop, hops past the limit');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :m4),
          'loop: 6 hops, more than MAX_HOPS (5); the last stages: a -> b -> c',
          'issue 12: last_error names the count, the limit and the stages of the path');
select is((select state->>'failed_stage' from pepsi.workqueue where workqueue_id = :m4), 'b',
          'issue 12: failed_stage is the stage that tried to advance');
select is((select state->>'x' from pepsi.workqueue where workqueue_id = :m4), '1',
          'the state patch of the refused advance is merged, as a failure merges it');
select is((select failure_class from pepsi.failed where workqueue_id = :m4), 'loop',
          'issue 12: pepsi.failed shows the loop');

-- The default limit is 1000: a legitimate long pipeline below it is never failed.
select pg_temp.running('a', '{"hops": 999}') as d999 \gset
select is(pepsi.workqueue_advance(:d999, 'a', 'b'), 'ok', 'issue 12: hop 1000 passes with the default MAX_HOPS');
select pg_temp.reclaim(:d999);
select is(pepsi.workqueue_advance(:d999, 'b', 'c'), 'loop', 'issue 12: hop 1001 fails as a loop with the default');
select is(pg_temp.row_of(:d999), 'b/failed hops=1001 class=loop', 'the row is failed at b');

-- Walks a message round a cycle of stages, one advance at a time (each
-- reclaimed like the dispatcher would), until the hop rule stops it or
-- p_steps advances passed; returns how many advances passed.
create function pg_temp.walk(p_id bigint, p_cycle text[], p_max int, p_steps int default 10000)
returns int language plpgsql as $$
declare
    v_n int := 0;
    v_at text;
begin
    loop
        select stage into v_at from pepsi.workqueue where workqueue_id = p_id;
        exit when pepsi.workqueue_advance(p_id, v_at,
                                          p_cycle[array_position(p_cycle, v_at) % cardinality(p_cycle) + 1],
                                          null, null, p_max) = 'loop';
        v_n := v_n + 1;
        exit when v_n >= p_steps;
        perform pg_temp.reclaim(p_id);
    end loop;
    return v_n;
end $$;

select pg_temp.running('l') as self \gset
select is(pg_temp.walk(:self, '{l}', 20), 20,
          'issue 12: a self-looping message makes exactly MAX_HOPS advances, then the next fails it');
select is(pg_temp.row_of(:self), 'l/failed hops=21 class=loop', 'issue 12: it is failed as a loop at its stage');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :self),
          'loop: 21 hops, more than MAX_HOPS (20); the last stages: l -> l -> l -> l -> l -> l -> l -> l',
          'issue 12: the reason shows the last 8 stages of the path, not the whole history');

select pg_temp.running('ping') as pp \gset
select is(pg_temp.walk(:pp, '{ping,pong}', 30), 30, 'issue 12: a two-stage cycle is bounded the same way');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :pp),
          'loop: 31 hops, more than MAX_HOPS (30); the last stages: ping -> pong -> ping -> pong -> ping -> pong -> ping -> pong',
          'issue 12: its path alternates the two stages, ending where the refused hop was going');
select is((select count(*)::int from pepsi.workqueue where workqueue_id = :pp and stage = 'ping'), 1,
          'the message stays at the stage whose advance was refused');

-- An ordinary message carries only the count; the path is kept only
-- within 8 hops of the limit.
select pg_temp.running('s1') as far \gset
select is(pg_temp.walk(:far, '{s1,s2,s3}', 1000, 5), 5, 'five hops far from the limit pass');
select is((select state from pepsi.workqueue where workqueue_id = :far), '{"hops": 5}'::jsonb,
          'issue 12: far from the limit the state holds the count and no path');
select pg_temp.running('s1', '{"hops": 990}') as near \gset
select is(pg_temp.walk(:near, '{s1,s2,s3}', 1000, 2), 2, 'two hops up to 8 below the limit pass');
select is((select state ? 'hop_path' from pepsi.workqueue where workqueue_id = :near), false,
          'issue 12: at MAX_HOPS - 8 the path is not kept yet');
select pg_temp.reclaim(:near);
select is(pg_temp.walk(:near, '{s1,s2,s3}', 1000, 3), 3, 'three hops near the limit pass');
select is((select state->'hop_path' from pepsi.workqueue where workqueue_id = :near), '["s3", "s1", "s2", "s3"]'::jsonb,
          'issue 12: within 8 hops of the limit the path is kept (from the stage it left)');
select is((select state->>'hops' from pepsi.workqueue where workqueue_id = :near), '995', 'and the count goes on');

-- A state patch cannot reset the count or fake the path.
select pg_temp.running('a', '{"hops": 4}') as cheat \gset
select is(pepsi.workqueue_advance(:cheat, 'a', 'b', '{"hops": 0, "hop_path": ["x"]}', null, 5), 'ok', 'an advance with a patch naming hops');
select is((select state from pepsi.workqueue where workqueue_id = :cheat), '{"hops": 5, "hop_path": ["a", "b"]}'::jsonb,
          'issue 12: a state patch cannot set hops or hop_path');

-- What a producer put in state.hops is read defensively.
select pg_temp.running('a', '{"hops": "many"}') as s_str \gset
select pg_temp.running('a', '{"hops": -7}') as s_neg \gset
select pg_temp.running('a', '{"hops": 1e30}') as s_big \gset
select pg_temp.running('a', '{"hops": 2.6}') as s_frac \gset
select is(pepsi.workqueue_advance(:s_str, 'a', 'b'), 'ok', 'a hops that is not a number reads as 0');
select is(pg_temp.row_of(:s_str), 'b/pending hops=1', 'and the count starts over');
select is(pepsi.workqueue_advance(:s_neg, 'a', 'b'), 'ok', 'a negative hops reads as 0');
select is(pg_temp.row_of(:s_neg), 'b/pending hops=1', 'and the count starts at 0');
select is(pepsi.workqueue_advance(:s_big, 'a', 'b'), 'loop', 'a huge hops is past any limit, never an error');
select is(pepsi.workqueue_advance(:s_frac, 'a', 'b'), 'ok', 'a fractional hops is rounded');
select is(pg_temp.row_of(:s_frac), 'b/pending hops=4', 'to the nearest integer');

-- Fused chains: a chain of k stages is k hops (p_via names the fused ones).
select pg_temp.running('a') as f3 \gset
select is(pepsi.workqueue_advance(:f3, 'a', 'd', null, '{b,c}', 1000), 'ok', 'a fused chain a -> b -> c -> d advances');
select is(pg_temp.row_of(:f3), 'd/pending hops=3', 'issue 12: a chain of 3 fused stages counts 3 hops');
select pg_temp.running('a', '{"hops": 18}') as f_over \gset
select is(pepsi.workqueue_advance(:f_over, 'a', 'd', null, '{b,c}', 20), 'loop',
          'issue 12: a fused chain that would pass the limit fails the message');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :f_over),
          'loop: 21 hops, more than MAX_HOPS (20); the last stages: a -> b -> c -> d',
          'issue 12: its path names the fused stages');
select is(pg_temp.row_of(:f_over), 'c/failed hops=21 class=loop',
          'issue 12: it fails where hop MAX_HOPS + 1 starts (c -> d), as without fusion (D-130)');
select pg_temp.running('a', '{"hops": 19}') as f_mid \gset
select is(pepsi.workqueue_advance(:f_mid, 'a', 'd', null, '{b,c}', 20), 'loop', 'a chain whose second hop passes the limit');
select is(pg_temp.row_of(:f_mid) || ' ' || (select state->>'last_error' from pepsi.workqueue where workqueue_id = :f_mid),
          'b/failed hops=21 class=loop loop: 21 hops, more than MAX_HOPS (20); the last stages: a -> b -> c',
          'issue 12: fails at b, the stage of the refused hop, with the path up to it');
select pg_temp.running('a', '{"hops": 17}') as f_at \gset
select is(pepsi.workqueue_advance(:f_at, 'a', 'd', null, '{b,c}', 20), 'ok', 'and one that reaches the limit exactly passes');

-- workqueue_commit: the same rule for a batch, "via" per result.
select pg_temp.running('s', '{"hops": 4}') as c_ok \gset
select pg_temp.running('s', '{"hops": 5}') as c_loop \gset
select pg_temp.running('s', '{"hops": 2}') as c_via \gset
select pg_temp.running('s', '{"hops": 5}') as c_fin \gset
select pg_temp.running('s', '{"hops": 5}') as c_fail \gset
select results_eq(
    format('select workqueue_id, outcome from pepsi.workqueue_commit(%L, %L, 5) order by 1', 's',
           jsonb_build_array(
               jsonb_build_object('id', :c_ok, 'do', 'advance', 'next', 't'),
               jsonb_build_object('id', :c_loop, 'do', 'advance', 'next', 't', 'state', jsonb_build_object('k', 1)),
               jsonb_build_object('id', :c_via, 'do', 'advance', 'next', 'v', 'via', jsonb_build_array('t', 'u')),
               jsonb_build_object('id', :c_fin, 'do', 'finish'),
               jsonb_build_object('id', :c_fail, 'do', 'fail', 'reason', 'bad'))),
    format('values (%s::bigint, %L), (%s, %L), (%s, %L), (%s, %L), (%s, %L)',
           :c_ok, 'ok', :c_loop, 'loop', :c_via, 'ok', :c_fin, 'ok', :c_fail, 'ok'),
    'issue 12: a batch commit answers loop for the advance past MAX_HOPS, ok for the rest');
select is(pg_temp.row_of(:c_ok), 't/pending hops=5', 'issue 12: batched: hops = MAX_HOPS - 1 advances');
select is(pg_temp.row_of(:c_loop), 's/failed hops=6 class=loop', 'issue 12: batched: the next fails as a loop at its stage');
select is((select state->>'last_error' from pepsi.workqueue where workqueue_id = :c_loop),
          'loop: 6 hops, more than MAX_HOPS (5); the last stages: s -> t', 'issue 12: batched: with the limit and the path');
select is(pg_temp.row_of(:c_via), 'v/pending hops=5', 'issue 12: batched: "via" counts the fused stages');
select is(pg_temp.row_of(:c_fail), 's/failed hops=5 class=permanent', 'a failure in the batch is no hop');
select results_eq(
    format('select outcome from pepsi.workqueue_commit(%L, %L)', 's',
           jsonb_build_array(jsonb_build_object('id', pg_temp.running('s', '{"hops": 999}'), 'do', 'advance', 'next', 't')))::text,
    $$values ('ok'::text)$$, 'issue 12: the batch commit defaults to MAX_HOPS 1000');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "advance", "next": "t", "via": "t"}]')$$,
                        pg_temp.running('s')),
                 'PX003', 'result 1: via is not an array of stage names', 'PX003: a via that is not an array, named');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "advance", "next": "t", "via": ["bad name"]}]')$$,
                        pg_temp.running('s')),
                 'PX001', null, 'PX001: a via element that is not a stage name');
select throws_ok(format($$select * from pepsi.workqueue_commit('s', '[{"id": %s, "do": "finish"}]', 0)$$, pg_temp.running('s')),
                 'PX003', 'max_hops must be 1 to 100000000, not 0', 'PX003: a batch with MAX_HOPS 0');

-- workqueue_move (a fused stage that pauses or fails) counts its chain too.
select pg_temp.running('a', '{"hops": 3}') as mv \gset
select is(pepsi.workqueue_move(:mv, 'a', 'c', '{b}', 5), 'ok', 'a move a -> b -> c within the limit');
select is(pg_temp.row_of(:mv), 'c/running hops=5', 'issue 12: a move of a 2-stage chain counts 2 hops, the row still running');
select is(pepsi.workqueue_move(:mv, 'c', 'd', null, 5), 'loop', 'issue 12: a move past the limit returns loop');
select is(pg_temp.row_of(:mv), 'c/failed hops=6 class=loop', 'issue 12: and fails the message where it was');

-- settings_apply's advance.
select pepsi.user_address_add('al', 'al@x.org');
select pepsi.workqueue_inject('settings', p_origin_user => 'al', p_envelope_sender => 'al@x.org',
                              p_state => '{"hops": 7}') as sa \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :sa;
select is((select changed || ' ' || outcome
             from pepsi.settings_apply(:sa, 'settings', 'deliver', 'al@x.org',
                                       '[{"stage": "deliver", "option": "HEADERS", "value": "yes"}]', null, 7)),
          '1 loop', 'issue 12: settings_apply answers loop when its advance passes the limit (the change is kept)');
select is(pg_temp.row_of(:sa), 'settings/failed hops=8 class=loop', 'issue 12: the control message failed as a loop');

-- Arguments.
select pg_temp.running('a') as bad \gset
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'b', null, null, 0)$$, :bad), 'PX003',
                 'max_hops must be 1 to 100000000, not 0', 'PX003: MAX_HOPS 0');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'b', null, null, null)$$, :bad), 'PX003', null,
                 'PX003: MAX_HOPS NULL');
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'a', 'b', null, array_fill('x'::text, array[65]))$$, :bad),
                 'PX003', 'a fused chain lists at most 64 stages, not 65', 'PX003: a chain longer than 64 stages');
select throws_ok(format($$select pepsi.workqueue_move(%s, 'a', 'b', '{"no good"}')$$, :bad), 'PX001', null,
                 'PX001: a via that is not a stage name');
select is(pg_temp.row_of(:bad), 'a/running hops=-', 'refused arguments leave the row untouched');

-- An operator's resume gives the message a fresh count.
select is(pepsi.workqueue_resume(p_ids => array[:self]::bigint[]), 1, 'the looping message is resumed');
select is((select state ?| '{hops,hop_path,failure_class}' from pepsi.workqueue where workqueue_id = :self), false,
          'issue 12: resume clears hops and hop_path with the failure class');

select * from finish();
rollback;
