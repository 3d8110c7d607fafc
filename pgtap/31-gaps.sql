-- Gap detection (W-29, W-30, W-32, W-36): id sequences, the anti-join of
-- generate_external_id_sequence against webhook_events without the
-- tombstones (NULL-safe NOT EXISTS), and the bounded window that advances.

begin;
select plan(45);

select has_function('pepsi', 'generate_external_id_sequence', array['text', 'bigint', 'bigint'],
                    'W-29: generate_external_id_sequence(provider, from, to) exists');
select has_function('pepsi', 'webhook_gaps_find', array['text', 'bigint', 'bigint'],
                    'W-29: webhook_gaps_find(provider, from, to) exists');
-- Formats -------------------------------------------------------------------------

select is(pepsi.webhook_external_id_format('integer', '', 0, 42), '42', 'integer: the decimal number');
select is(pepsi.webhook_external_id_format('prefixed', 'evt_', 4, 42), 'evt_0042', 'prefixed: prefix and zero-padded number');
select is(pepsi.webhook_external_id_format('prefixed', 'evt_', 4, 12345), 'evt_12345', 'prefixed: a longer number is written in full');
select is(pepsi.webhook_external_id_format('prefixed', '', 6, 7), '000007', 'prefixed with an empty prefix: zero-padded numbers');
select is(pepsi.webhook_external_id_format('none', '', 0, 7), null, 'none: no id');
select is(pepsi.webhook_external_id_number('prefixed', 'evt_', 4, 'evt_0042'), 42::bigint, 'the number of evt_0042 is 42');
select is(pepsi.webhook_external_id_number('prefixed', 'evt_', 4, 'evt_042'), null::bigint, 'evt_042 is not canonical at width 4: outside the sequence');
select is(pepsi.webhook_external_id_number('prefixed', 'evt_', 4, 'evt_test'), null::bigint, 'a test event id is outside the sequence');
select is(pepsi.webhook_external_id_number('integer', '', 0, '007'), null::bigint, 'integer: leading zeros are not canonical');
select is(pepsi.webhook_external_id_number('integer', '', 0, '1000'), 1000::bigint, 'integer: 1000');

-- Sequence set-up ---------------------------------------------------------------

select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver');
select pepsi.webhook_provider_add('plain', 'github', '{s}');
select pepsi.webhook_provider_add('uuid', 'github', '{s}');

select throws_ok($$select * from pepsi.generate_external_id_sequence('acme', 1, 3)$$, 'PX021', null,
                 'PX021: a provider without a sequence');
select throws_ok($$select * from pepsi.generate_external_id_sequence('nobody', 1, 3)$$, 'PX011', null,
                 'PX011: an unknown provider');
select throws_ok($$select pepsi.webhook_id_sequence_set('acme', 'roman')$$, 'PX021', null, 'PX021: an unknown kind');
select throws_ok($$select pepsi.webhook_id_sequence_set('acme', 'integer', 'x_')$$, 'PX021', null,
                 'PX021: an integer sequence has no prefix');
select throws_ok($$select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 0)$$, 'PX021', null,
                 'PX021: a prefixed sequence needs a width');
select throws_ok($$select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_window_size => 2000000)$$, 'PX021', null,
                 'W-36: PX021: a window larger than 1000000');
select throws_ok($$select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_backfill_stage => 'bad stage')$$, 'PX001', null,
                 'PX001: a back-fill stage that is not a stage name');

select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_window_size => 100);
select pepsi.webhook_id_sequence_set('plain', 'integer');
select pepsi.webhook_id_sequence_set('uuid', 'none');

select is(array(select * from pepsi.generate_external_id_sequence('acme', 8, 11)),
          array['evt_0008', 'evt_0009', 'evt_0010', 'evt_0011'], 'W-29: the ids the sequence implies, in order');
select is(array(select * from pepsi.generate_external_id_sequence('plain', 99, 101)), array['99', '100', '101'],
          'W-29: an integer sequence');
select is((select count(*)::int from pepsi.generate_external_id_sequence('acme', 5, 4)), 0, 'an empty window');
select throws_ok($$select * from pepsi.generate_external_id_sequence('acme', 1, 1000001)$$, 'PX003', null,
                 'W-36: a window of more than 1000000 ids is refused');
select throws_ok($$select * from pepsi.generate_external_id_sequence('uuid', 1, 3)$$, 'PX021', null,
                 'PX021: kind none has no ids');

-- The anti-join (W-30) ------------------------------------------------------------

-- acme sent evt_0001..evt_0020 except 0004, 0007, 0013; 0007 is tombstoned;
-- a test event outside the sequence is stored too.
select count(*) from (
    select pepsi.webhook_event_ingest('acme', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n), 'x'::bytea)
      from generate_series(1, 20) n where n not in (4, 7, 13)) x;
select pepsi.webhook_event_ingest('acme', 'evt_test', 'x'::bytea);
select pepsi.webhook_tombstone_add('acme', 'evt_0007', 'a draft');
select results_eq($$select external_id, number from pepsi.webhook_gaps_find('acme', 1, 20)$$,
                  $$values ('evt_0004', 4::bigint), ('evt_0013', 13::bigint)$$,
                  'W-30: exactly the expected ids with no event and no tombstone');
select is((select count(*)::int from pepsi.webhook_gaps_find('acme', 1, 25)), 7,
          'W-30: ids above the last delivery are missing too (21..25)');
select is((select count(*)::int from pepsi.webhook_gaps_find('plain', 1, 3)), 3,
          'the same id at another provider does not count (keyed per provider)');

-- The scan: a bounded window that advances (W-36) ----------------------------------

select pepsi.webhook_gaps_detect('2026-11-30T07:00:00Z');
select row_eq($$select scan_from, high_water from pepsi.webhook_id_sequence where provider = 'acme'$$,
              row(1::bigint, 20::bigint),
              'W-36: the first pass reads the high water (20) and scans nothing yet');
select is((select count(*)::int from pepsi.webhook_gaps), 0, 'no gap recorded before a window was scanned');
select results_eq($$select provider, external_id, number from pepsi.webhook_gaps_detect('2026-11-30T07:05:00Z') order by 1, 3$$,
                  $$values ('acme'::text, 'evt_0004'::text, 4::bigint), ('acme', 'evt_0013', 13)$$,
                  'W-29: the second pass scans up to the previous high water and records the gaps');
select is((select scan_from from pepsi.webhook_id_sequence where provider = 'acme'), 21::bigint,
          'W-36: the window advanced past what it scanned');
select row_eq($$select state, first_seen_at, attempts from pepsi.webhook_gaps where external_id = 'evt_0004'$$,
              row('open'::text, '2026-11-30T07:05:00Z'::timestamptz, 0),
              'a gap is recorded open, with when it was first seen');

-- More events: up to 450, none missing between 21 and 450 but 300.
select count(*) from (
    select pepsi.webhook_event_ingest('acme', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n), 'x'::bytea)
      from generate_series(21, 450) n where n <> 300) x;
select is((select count(*)::int from pepsi.webhook_gaps_detect('2026-11-30T07:10:00Z')), 0,
          'the pass after new events: nothing new below the old high water');
select is((select count(*)::int from pepsi.webhook_gaps_detect('2026-11-30T07:15:00Z')), 0,
          'W-36: the next window is 100 ids (21..120): no gap there');
select is((select scan_from from pepsi.webhook_id_sequence where provider = 'acme'), 121::bigint,
          'W-36: one window of window_size ids per pass');
select is((select count(*)::int from pepsi.webhook_gaps_detect('2026-11-30T07:16:00Z')), 0, '121..220');
select results_eq($$select external_id from pepsi.webhook_gaps_detect('2026-11-30T07:17:00Z')$$,
                  $$values ('evt_0300'::text)$$, 'W-36: 221..320 finds evt_0300');

-- Tombstoned ids are never flagged again (W-32), a re-scan records nothing twice.
select pepsi.webhook_tombstone_add('acme', 'evt_0300', 'test event deleted at the provider');
select pepsi.webhook_id_sequence_rewind('acme', 1);
select is((select count(*)::int from pepsi.webhook_gaps_detect('2026-11-30T07:20:00Z')), 0,
          'W-32: a re-scan from 1 flags neither the tombstoned ids nor the known gaps');
select is((select count(*)::int from pepsi.webhook_gaps where external_id in ('evt_0007')), 0,
          'W-32: the tombstoned evt_0007 was never recorded as a gap');

-- Re-check: an id that arrives late resolves its gap.
select pepsi.webhook_event_ingest('acme', 'evt_0013', 'late'::bytea);
select is(pepsi.webhook_gaps_recheck('2026-11-30T07:21:00Z'), 2, 'the re-check resolves two gaps');
select results_eq($$select external_id, state from pepsi.webhook_gaps order by external_id$$,
                  $$values ('evt_0004'::text, 'open'::text), ('evt_0013', 'arrived'), ('evt_0300', 'tombstoned')$$,
                  'a late delivery: arrived; a tombstone written meanwhile: tombstoned');

-- A sequence described after events were stored starts from them.
select pepsi.webhook_provider_add('late', 'github', '{s}');
select count(*) from (select pepsi.webhook_event_ingest('late', n::text, 'x'::bytea) from generate_series(1, 50) n where n <> 17) x;
select pepsi.webhook_id_sequence_set('late', 'integer');
select is((select high_water from pepsi.webhook_id_sequence where provider = 'late'), 50::bigint,
          'a new sequence takes its high water from the events already stored');
select results_eq($$select external_id from pepsi.webhook_gaps_detect('2026-11-30T07:30:00Z') where provider = 'late'$$,
                  $$values ('17'::text)$$, 'so its first scan covers them');

-- The cost follows the window, not the table (W-30, W-36): a provider
-- with 19,800 stored events (ids 1..20000 but every hundredth from 4) and
-- 10,000 tombstones (20001..30000). Each id of a window of 10 costs at
-- most one index probe into webhook_events and one into
-- webhook_tombstones (NOT EXISTS as a nested-loop anti-join, in the order
-- the planner picks); an anti-join that reads the provider's rows (NOT IN
-- over a hashed subquery, a hash or merge anti-join) fetches thousands.
-- Counted from this transaction's own scan statistics. Last in the file:
-- the provider's sequence would change the passes above.
select pepsi.webhook_provider_add('big', 'github', '{s}');
select pepsi.webhook_id_sequence_set('big', 'prefixed', 'evt_', 4);
insert into pepsi.webhook_events (provider, external_id, payload)
select 'big', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n), 'x'
  from generate_series(1, 20000) n where n % 100 <> 4;
insert into pepsi.webhook_tombstones (provider, external_id, reason, source)
select 'big', pepsi.webhook_external_id_format('prefixed', 'evt_', 4, n), 'test', 'operator'
  from generate_series(20001, 30000) n;
analyze pepsi.webhook_events;
analyze pepsi.webhook_tombstones;
create temporary table scans_mark as
    select relname, seq_scan, idx_scan, idx_tup_fetch from pg_stat_xact_user_tables where schemaname = 'pepsi';
select is(array(select external_id from pepsi.webhook_gaps_find('big', 1, 10)), array['evt_0004'],
          'W-30: the window 1..10 of a provider with 19,800 events and 10,000 tombstones misses evt_0004');
select results_eq($$select s.relname::text collate "default", s.seq_scan - m.seq_scan,
                           s.idx_scan - m.idx_scan between 1 and 10, s.idx_tup_fetch - m.idx_tup_fetch <= 10
                      from pg_stat_xact_user_tables s join scans_mark m using (relname)
                     where s.schemaname = 'pepsi' and s.relname in ('webhook_events', 'webhook_tombstones')
                     order by 1$$,
                  $$values ('webhook_events'::text, 0::bigint, true, true), ('webhook_tombstones', 0, true, true)$$,
                  'W-30, W-36: no sequential scan of either table, at most one index probe per id and at most 10 rows fetched from each');

select * from finish();
rollback;
