-- Statistics: stats_flush (D-137..D-142) into stage_stats and
-- dispatch_stats, one row per stage and owner slot, and the view
-- stage_totals that sums over owner slots.

begin;
select plan(37);

select has_table('pepsi', 'stage_stats', 'stage_stats exists');
select has_table('pepsi', 'dispatch_stats', 'dispatch_stats exists');
select col_is_pk('pepsi', 'stage_stats', array['stage', 'owner_slot'], 'stage_stats: one row per stage and owner slot');
select col_is_pk('pepsi', 'dispatch_stats', 'owner_slot', 'dispatch_stats: one row per owner slot');
select has_function('pepsi', 'stats_flush', array['integer', 'jsonb', 'jsonb', 'timestamp with time zone'],
                    'D-137: stats_flush(owner_slot, stages, dispatch, now) exists');
select has_view('pepsi', 'stage_totals', 'stage_totals exists');
select columns_are('pepsi', 'stage_totals',
                   array['stage', 'stages_executed', 'runs', 'run_usec', 'avg_usec', 'succeeded', 'failed',
                         'tempfailed', 'strikes', 'requeued', 'updated_at'],
                   'stage_totals has the counters of stage_stats plus avg_usec');

-- First flush inserts ------------------------------------------------------------------------

select pepsi.stats_flush(0,
    '[{"stage": "a", "stages_executed": 3, "runs": 4, "run_usec": 1000, "succeeded": 3, "failed": 1},
      {"stage": "b", "stages_executed": 1}]',
    '{"claims": 2, "claimed": 5}', '2026-07-01 10:00:00+00') is null as x \gset

select row_eq($$select stages_executed, runs, run_usec, succeeded, failed, tempfailed, strikes, requeued, updated_at
                 from pepsi.stage_stats where stage = 'a' and owner_slot = 0$$,
              row(3::bigint, 4::bigint, 1000::bigint, 3::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint,
                  '2026-07-01 10:00:00+00'::timestamptz),
              'D-137: the first flush inserts the stage row; missing keys count 0; updated_at = p_now');
select is((select count(*) from pepsi.stage_stats where owner_slot = 0), 2::bigint,
          'D-137: one flush writes every stage it names');
select row_eq($$select claims, claimed, wakeups, notifications, workers_started, workers_exited, bodies_collected, updated_at
                 from pepsi.dispatch_stats where owner_slot = 0$$,
              row(2::bigint, 5::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, '2026-07-01 10:00:00+00'::timestamptz),
              'D-137: the first flush inserts the dispatch row; missing keys count 0');

-- Second flush adds ---------------------------------------------------------------------------

select pepsi.stats_flush(0,
    '[{"stage": "a", "runs": 1, "run_usec": 500, "strikes": 1, "requeued": 2}]',
    '{"claims": 1, "wakeups": 3, "bodies_collected": 10}', '2026-07-01 10:00:05+00') is null as x \gset
select row_eq($$select stages_executed, runs, run_usec, succeeded, failed, strikes, requeued, updated_at
                 from pepsi.stage_stats where stage = 'a' and owner_slot = 0$$,
              row(3::bigint, 5::bigint, 1500::bigint, 3::bigint, 1::bigint, 1::bigint, 2::bigint, '2026-07-01 10:00:05+00'::timestamptz),
              'D-137: a second flush adds its deltas to the counters (missing keys add 0)');
select row_eq($$select claims, claimed, wakeups, bodies_collected, updated_at from pepsi.dispatch_stats where owner_slot = 0$$,
              row(3::bigint, 5::bigint, 3::bigint, 10::bigint, '2026-07-01 10:00:05+00'::timestamptz),
              'D-137: a second flush adds to the dispatch counters');
select is((select updated_at from pepsi.stage_stats where stage = 'b' and owner_slot = 0), '2026-07-01 10:00:00+00'::timestamptz,
          'D-137: a stage the flush does not name is untouched');

-- Every column ---------------------------------------------------------------------------------

select pepsi.stats_flush(0,
    '[{"stage": "c", "stages_executed": 1, "runs": 2, "run_usec": 3, "succeeded": 4, "failed": 5,
       "tempfailed": 6, "strikes": 8, "requeued": 9}]',
    '{"claims": 1, "claimed": 1, "wakeups": 1, "notifications": 4, "workers_started": 5, "workers_exited": 6, "bodies_collected": 1}',
    '2026-07-01 10:00:06+00') is null as x \gset
select row_eq($$select stages_executed, runs, run_usec, succeeded, failed, tempfailed, strikes, requeued
                 from pepsi.stage_stats where stage = 'c' and owner_slot = 0$$,
              row(1::bigint, 2::bigint, 3::bigint, 4::bigint, 5::bigint, 6::bigint, 8::bigint, 9::bigint),
              'D-135: every stage counter is written from its key');
select row_eq($$select claims, claimed, wakeups, notifications, workers_started, workers_exited, bodies_collected
                 from pepsi.dispatch_stats where owner_slot = 0$$,
              row(4::bigint, 6::bigint, 4::bigint, 4::bigint, 5::bigint, 6::bigint, 11::bigint),
              'every dispatch counter is added from its key');

-- Owner slots ------------------------------------------------------------------------------------

select pepsi.stats_flush(1, '[{"stage": "a", "runs": 10, "run_usec": 2500}]', '{"claims": 7}', '2026-07-01 10:00:10+00') is null as x \gset
select row_eq($$select runs, run_usec from pepsi.stage_stats where stage = 'a' and owner_slot = 1$$,
              row(10::bigint, 2500::bigint), 'each owner slot has its own stage row');
select row_eq($$select runs, run_usec from pepsi.stage_stats where stage = 'a' and owner_slot = 0$$,
              row(5::bigint, 1500::bigint), 'another slot''s flush leaves slot 0''s row alone');
select is((select claims from pepsi.dispatch_stats where owner_slot = 1), 7::bigint, 'each owner slot has its own dispatch row');
select is((select claims from pepsi.dispatch_stats where owner_slot = 0), 4::bigint, 'another slot''s flush leaves slot 0''s dispatch row alone');

-- NULL and empty parts ------------------------------------------------------------------------------

select pepsi.stats_flush(0, '[{"stage": "a", "runs": 1}]', null, '2026-07-01 10:00:20+00') is null as x \gset
select row_eq($$select claims, updated_at from pepsi.dispatch_stats where owner_slot = 0$$,
              row(4::bigint, '2026-07-01 10:00:06+00'::timestamptz), 'a NULL dispatch part leaves dispatch_stats alone');
select is((select runs from pepsi.stage_stats where stage = 'a' and owner_slot = 0), 6::bigint, '... while the stage part is still added');
select pepsi.stats_flush(5, '[{"stage": "a", "runs": 1}]', null) is null as x \gset
select is((select count(*) from pepsi.dispatch_stats where owner_slot = 5), 0::bigint,
          'a NULL dispatch part creates no dispatch row for a new slot');
select is((select updated_at from pepsi.stage_stats where stage = 'a' and owner_slot = 5), now(), 'p_now defaults to now()');
select pepsi.stats_flush(0, null, '{"claims": 1}', '2026-07-01 10:00:30+00') is null as x \gset
select is((select claims from pepsi.dispatch_stats where owner_slot = 0), 5::bigint, 'NULL stages: only the dispatch part is added');
select is((select max(updated_at) from pepsi.stage_stats where owner_slot = 0), '2026-07-01 10:00:20+00'::timestamptz,
          'NULL stages: no stage row is touched');
select count(*) as stats_rows from pepsi.stage_stats \gset
select pepsi.stats_flush(0, '[]', null) is null as x \gset
select is((select count(*) from pepsi.stage_stats), :stats_rows::bigint, 'D-139: an empty flush writes no stage row');
select is((select updated_at from pepsi.dispatch_stats where owner_slot = 0), '2026-07-01 10:00:30+00'::timestamptz,
          'D-139: an empty flush writes no dispatch row');

-- Refusals -----------------------------------------------------------------------------------------------

select throws_ok($$select pepsi.stats_flush(-1, '[]', null)$$, 'PX003', null, 'PX003: a negative owner slot');
select throws_ok($$select pepsi.stats_flush(null, '[]', null)$$, 'PX003', null, 'PX003: a NULL owner slot');
select throws_ok($$select pepsi.stats_flush(0, '{"stage": "a"}', null)$$, 'PX003', null, 'PX003: stages that are not an array');
select throws_ok($$select pepsi.stats_flush(0, '[]', '[{"claims": 1}]')$$, 'PX003', null, 'PX003: dispatch that is not an object');
select throws_ok($$select pepsi.stats_flush(0, '[{"stage": "a", "runs": 1}, {"stage": "bad name!", "runs": 1}]', '{"claims": 100}')$$,
                 'PX001', null, 'PX001: a bad stage name in the stage deltas');
select throws_ok($$select pepsi.stats_flush(0, '[{"runs": 1}]', null)$$, 'PX001', null, 'PX001: a stage delta without a stage');
select row_eq($$select (select runs from pepsi.stage_stats where stage = 'a' and owner_slot = 0),
                      (select claims from pepsi.dispatch_stats where owner_slot = 0)$$,
              row(6::bigint, 5::bigint), 'a refused flush adds nothing at all');

-- stage_totals ---------------------------------------------------------------------------------------------

-- stage a: slot 0 runs 6 / 1500 usec, slot 1 runs 10 / 2500 usec, slot 5 runs 1 / 0 usec.
select row_eq($$select stages_executed, runs, run_usec, avg_usec, succeeded, failed, strikes, requeued, updated_at
                 from pepsi.stage_totals where stage = 'a'$$,
              row(3::numeric, 17::numeric, 4000::numeric, 235.3::numeric, 3::numeric, 1::numeric, 1::numeric, 2::numeric, now()),
              'stage_totals sums the counters over owner slots, avg_usec = run_usec / runs (one decimal), latest updated_at');
select is((select avg_usec from pepsi.stage_totals where stage = 'b'), null, 'stage_totals: avg_usec is NULL for a stage with no runs');
select is((select count(*) from pepsi.stage_totals), (select count(distinct stage) from pepsi.stage_stats),
          'stage_totals has one row per stage');

select * from finish();
rollback;
