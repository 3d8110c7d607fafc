-- Issue 19, sqitch change commit_linear: the batched commit is linear in
-- the batch. workqueue_transition reaches the rows by primary key and
-- matches them to their ops without a nested loop (enable_nestloop off:
-- a nested loop compared every row with every op, 4,032 comparisons for
-- 64 rows), without JIT; stage_check (PL/pgSQL with SET) runs only for a
-- name the inlined rule refuses; state_count is inlined into the history
-- insert of a finish. The cost per row against the batch size is
-- measured by bench/commit-batch (make bench), not here.
-- What is tested: the settings (test 1); the calls the function manager
-- no longer makes, counted by track_functions (tests 1-3 fail on
-- revert/commit_linear.sql: 64 stage_check calls, 2 state_count calls a
-- finished message); and what the history rows and a batch of 1,000 mixed
-- results get, the same as before the change (tests 4-12 guard the
-- equivalence: they pass on the old function too).

begin;
select plan(12);

set local track_functions = 'all';

create function pg_temp.calls(p_function regprocedure) returns bigint
language sql as $$
    select coalesce((select f.calls from pg_stat_xact_user_functions f where f.funcid = p_function), 0)
$$;

select ok((select proconfig @> array['enable_nestloop=off', 'jit=off'] from pg_catalog.pg_proc
            where oid = 'pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure),
          'issue 19: the state machine runs without nested loops and without JIT (its settings)');

-- 64 advances and 64 finishes of running rows at cl_a.
insert into pepsi.workqueue (stage, status, state)
select 'cl_a', 'running', jsonb_build_object('hops', 3, 'strikes', 1) from generate_series(1, 128);
create temp table ids as
select workqueue_id as id, row_number() over (order by workqueue_id) as n
  from pepsi.workqueue where stage = 'cl_a';

create temp table before as
select pg_temp.calls('pepsi.stage_check(text, text)') as stage_check,
       pg_temp.calls('pepsi.state_count(jsonb)') as state_count;
create temp table res1 as
select * from pepsi.workqueue_commit('cl_a',
    (select jsonb_agg(jsonb_build_object('id', id, 'do', 'advance', 'next', 'cl_b') order by n)
       from ids where n <= 64));
select is(pg_temp.calls('pepsi.stage_check(text, text)') - (select stage_check from before), 0::bigint,
          'issue 19: a batch of 64 advances to a valid stage calls no stage_check');
create temp table mid as
select pg_temp.calls('pepsi.state_count(jsonb)') as state_count;
create temp table res2 as
select * from pepsi.workqueue_commit('cl_a',
    (select jsonb_agg(jsonb_build_object('id', id, 'do', 'finish') order by n) from ids where n > 64));
select is(pg_temp.calls('pepsi.state_count(jsonb)') - (select state_count from mid), 0::bigint,
          'issue 19: a batch of 64 finishes writes its history rows with state_count inlined (no call)');
select is((select count(*)::int from pepsi.workqueue_history h join ids on ids.id = h.workqueue_id
            where h.hops = 3 and h.strikes = 1 and h.outcome = 'finished'),
          64, 'issue 19: ... and the history rows read the hop and strike counts from state');

-- 1,000 results in one call: 400 advances, 400 finishes, 199 pauses, one
-- refused (a row not running at cl_c), in a shuffled order.
insert into pepsi.workqueue (stage, status) select 'cl_c', 'running' from generate_series(1, 999);
insert into pepsi.workqueue (stage, status) values ('cl_c', 'pending');
create temp table big as
select workqueue_id as id, row_number() over (order by workqueue_id) as n from pepsi.workqueue where stage = 'cl_c';
create temp table big_res as
select r.*, b.n from pepsi.workqueue_commit('cl_c',
    (select jsonb_agg(case when n <= 400 then jsonb_build_object('id', id, 'do', 'advance', 'next', 'cl_d',
                                                                 'state', jsonb_build_object('k', n))
                           when n <= 800 then jsonb_build_object('id', id, 'do', 'finish')
                           else jsonb_build_object('id', id, 'do', 'pause', 'until', '2099-01-01T00:00:00Z')
                      end order by md5(n::text))
       from big)) r join big b on b.id = r.workqueue_id;
select is((select count(*)::int from big_res), 1000, 'issue 19: a batch of 1,000 answers every id');
select is((select array_agg(distinct outcome order by outcome) from big_res where n < 1000), '{ok}',
          'issue 19: ... ok for every running row');
select is((select outcome from big_res where n = 1000), 'refused', 'issue 19: ... refused for the pending one');
select is((select count(*)::int from pepsi.workqueue w join big on big.id = w.workqueue_id
            where w.stage = 'cl_d' and w.status = 'pending' and (w.state->>'k')::int = big.n
              and (w.state->>'hops')::int = 1 and big.n <= 400),
          400, 'issue 19: ... each advance moved its own row with its own state patch (no op applied to another row)');
select is((select count(*)::int from pepsi.workqueue w join big on big.id = w.workqueue_id where big.n between 401 and 800),
          0, 'issue 19: ... the finished rows are gone');
select is((select count(*)::int from pepsi.workqueue w join big on big.id = w.workqueue_id
            where big.n between 801 and 999 and w.status = 'paused' and w.timeout = '2099-01-01T00:00:00Z'),
          199, 'issue 19: ... the paused rows wait until their time');
select is((select array_agg(workqueue_id order by md5(n::text)) from big_res),
          (select array_agg(id order by md5(n::text)) from big),
          'issue 19: ... in the order of the results (D-72)');

-- A refused stage name still raises PX001, and nothing is written.
select throws_ok($$select * from pepsi.workqueue_commit('cl_d',
                     (select jsonb_agg(jsonb_build_object('id', workqueue_id, 'do', 'advance', 'next', 'no good'))
                        from pepsi.workqueue where stage = 'cl_d'))$$,
                 'PX001', null, 'issue 19: an invalid next stage in a batch still raises PX001 (stage_check where the rule refuses)');

select * from finish();
rollback;
