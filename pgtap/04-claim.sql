-- workqueue_claim (D-38, D-41, D-93 folded into the heartbeat claim) and
-- workqueue_unclaim. The clock is moved through p_now, never slept.

begin;
select plan(52);

select has_function('pepsi', 'workqueue_claim', array['text[]', 'integer[]', 'timestamp with time zone', 'boolean', 'bigint', 'integer'],
                    'workqueue_claim(stages, caps, now, release_paused, claim_id, owner_slot) exists');
select has_function('pepsi', 'workqueue_unclaim', array['bigint[]', 'integer'],
                    'workqueue_unclaim(claim_ids, owner_slot) exists');

-- Every claim's answer is kept here, tagged by call, so that assertions
-- read what the call returned rather than running it again.
create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text);

-- Stage o: five rows; the fourth arrived (arrived_at) before all others but
-- was queued last-but-one: oldest-first is workqueue_id order (D-41).
select pepsi.workqueue_inject('o', p_origin_user => 'u1') is not null as x \gset
select pepsi.workqueue_inject('o', p_origin_addr => '192.0.2.1') is not null as x \gset
select pepsi.workqueue_inject('o') is not null as x \gset
select pepsi.workqueue_inject('o', p_arrived_at => '2000-01-01 00:00:00+00') is not null as x \gset
select pepsi.workqueue_inject('o') is not null as x \gset
select array_agg(workqueue_id order by workqueue_id) as o_ids from pepsi.workqueue where stage = 'o' \gset

-- Oldest first, at most cap ---------------------------------------------------------

insert into claimed select 1, * from pepsi.workqueue_claim('{o}', '{2}', '2026-03-01 12:00:00+00');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 1),
          (:'o_ids'::bigint[])[1:2], 'D-41: the claim takes the oldest pending rows of the stage first');
select is((select count(*) from claimed where call = 1), 2::bigint, 'D-38: the claim takes at most cap rows of a stage');
select set_eq($$select workqueue_id, stage, sender_key from claimed where call = 1$$,
              $$select workqueue_id, stage, sender_key from pepsi.workqueue where workqueue_id = any('$$ || :'o_ids' || $$'::bigint[]) and status = 'running'$$,
              'D-38: the claim returns (workqueue_id, stage, sender_key) of exactly the rows it set running');
select is((select array_agg(sender_key order by workqueue_id) from claimed where call = 1),
          '{user:u1,ip:192.0.2.1}'::text[], 'the claim returns each row''s sender_key');
select ok((select bool_and(status = 'running' and claimed_at = '2026-03-01 12:00:00+00')
             from pepsi.workqueue where workqueue_id = any((:'o_ids'::bigint[])[1:2])),
          'D-38: claimed rows are running with claimed_at = p_now');
select ok((select bool_and(status = 'pending' and claimed_at is null)
             from pepsi.workqueue where workqueue_id = any((:'o_ids'::bigint[])[3:5])),
          'D-38: rows beyond the cap stay pending and unclaimed');

insert into claimed select 2, * from pepsi.workqueue_claim('{o}', '{2}', '2026-03-01 12:00:01+00');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 2),
          (:'o_ids'::bigint[])[3:4],
          'D-41: the next claim continues in workqueue_id order (an earlier arrived_at does not jump the queue)');
insert into claimed select 3, * from pepsi.workqueue_claim('{o}', '{10}', '2026-03-01 12:00:02+00');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 3),
          (:'o_ids'::bigint[])[5:5], 'D-38: a cap larger than the backlog takes what is there');
select is_empty($$select * from pepsi.workqueue_claim('{o}', '{10}', '2026-03-01 12:00:03+00')$$,
                'a claim of a stage with nothing pending returns no rows');
select is((select count(*) from pepsi.workqueue where stage = 'o' and status = 'running'), 5::bigint,
          'a running row is never claimed twice');

-- Several stages in one call ----------------------------------------------------------

select count(*) >= 0 as x from (select pepsi.workqueue_inject(s) from unnest('{m1,m1,m1,m2,m2,m2,m3,m3,m3,m4}'::text[]) s) i \gset
select array_agg(workqueue_id order by workqueue_id) as m1_ids from pepsi.workqueue where stage = 'm1' \gset
select array_agg(workqueue_id order by workqueue_id) as m2_ids from pepsi.workqueue where stage = 'm2' \gset

insert into claimed select 4, * from pepsi.workqueue_claim('{m1,m2,m3}', '{2,3,0}', '2026-03-01 12:01:00+00');
select is((select count(*) from claimed where call = 4), 5::bigint, 'D-38: one call claims for several stages');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 4 and stage = 'm1'),
          (:'m1_ids'::bigint[])[1:2], 'D-41: stage m1 gives its 2 oldest rows (cap 2)');
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 4 and stage = 'm2'),
          :'m2_ids'::bigint[], 'D-41: stage m2 gives its 3 oldest rows (cap 3)');
select is((select count(*) from pepsi.workqueue where stage = 'm3' and status = 'pending'), 3::bigint,
          'D-38: cap 0 claims nothing of its stage');
select is((select count(*) from pepsi.workqueue where stage = 'm4' and status = 'pending'), 1::bigint,
          'D-38: a stage not in the array is untouched');
select is_empty($$select * from pepsi.workqueue_claim('{}', '{}', '2026-03-01 12:01:01+00')$$,
                'a claim with no stages returns no rows');

-- Only pending rows ---------------------------------------------------------------------

select pepsi.workqueue_inject('s') as s_pending \gset
select pepsi.workqueue_inject('s') as s_paused \gset
select pepsi.workqueue_inject('s') as s_failed \gset
select pepsi.workqueue_inject('s') as s_running \gset
select pepsi.workqueue_inject('s') as s_timeout \gset
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 13:00:00+00' where workqueue_id = :s_paused;
update pepsi.workqueue set status = 'failed' where workqueue_id = :s_failed;
update pepsi.workqueue set status = 'running', claimed_at = '2026-03-01 11:00:00+00' where workqueue_id = :s_running;
update pepsi.workqueue set status = 'timeout' where workqueue_id = :s_timeout;

insert into claimed select 5, * from pepsi.workqueue_claim('{s}', '{10}', '2026-03-01 12:02:00+00');
select is((select array_agg(workqueue_id) from claimed where call = 5), array[:s_pending]::bigint[],
          'D-38: only pending rows are claimed (not paused, failed, running or timeout)');
select results_eq($$select status::text from pepsi.workqueue where workqueue_id in ($$ || :s_paused || ',' || :s_failed || ',' || :s_timeout || $$) order by workqueue_id$$,
                  $$values ('paused'), ('failed'), ('timeout')$$,
                  'paused, failed and timeout rows keep their status');
select is((select claimed_at from pepsi.workqueue where workqueue_id = :s_running), '2026-03-01 11:00:00+00'::timestamptz,
          'a row already running keeps its claimed_at');

-- Bad arguments -----------------------------------------------------------------------------

select count(*) as pending0 from pepsi.workqueue where status = 'pending' \gset
select throws_ok($$select * from pepsi.workqueue_claim('{m3,m4}', '{1}')$$, 'PX003', null,
                 'PX003: stages and caps of different lengths');
select throws_ok($$select * from pepsi.workqueue_claim('{m3}', '{1,1}')$$, 'PX003', null,
                 'PX003: more caps than stages');
select throws_ok($$select * from pepsi.workqueue_claim('{m3,m4}', '{1,-1}')$$, 'PX003', null,
                 'PX003: a negative cap');
select throws_ok($$select * from pepsi.workqueue_claim('{m3,m4}', array[1, null]::int[])$$, 'PX003', null,
                 'PX003: a NULL cap');
select throws_ok($$select * from pepsi.workqueue_claim('{m3}', null)$$, 'PX003', null,
                 'PX003: NULL caps for a stage');
select throws_ok($$select * from pepsi.workqueue_claim(null, '{1}')$$, 'PX003', null,
                 'PX003: NULL stages with a cap');
select is((select count(*) from pepsi.workqueue where status = 'pending'), :pending0::bigint,
          'a refused claim sets nothing running');

-- The heartbeat claim releases due paused rows first (D-93) ------------------------------------

select pepsi.workqueue_inject('r') as r_due \gset
select pepsi.workqueue_inject('r') as r_due_now \gset
select pepsi.workqueue_inject('r') as r_later \gset
select pepsi.workqueue_inject('r-other') as r_other \gset
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 12:59:00+00' where workqueue_id in (:r_due, :r_other);
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 13:00:00+00' where workqueue_id = :r_due_now;
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 13:00:01+00' where workqueue_id = :r_later;

select is_empty($$select * from pepsi.workqueue_claim('{r}', '{10}', '2026-03-01 13:00:00+00', false)$$,
                'D-93: with p_release_paused false, due paused rows are not claimed');
select is((select count(*) from pepsi.workqueue where stage = 'r' and status = 'paused'), 3::bigint,
          'D-93: with p_release_paused false, paused rows stay paused');
select is_empty($$select * from pepsi.workqueue_claim('{r}', '{10}', '2026-03-01 13:00:00+00')$$,
                'D-93: p_release_paused defaults to false');

insert into claimed select 6, * from pepsi.workqueue_claim('{r}', '{10}', '2026-03-01 13:00:00+00', true);
select is((select array_agg(workqueue_id order by workqueue_id) from claimed where call = 6),
          array[:r_due, :r_due_now]::bigint[],
          'D-93: p_release_paused releases rows due at or before p_now and claims them in the same call');
select ok((select bool_and(status = 'running' and timeout is null and claimed_at = '2026-03-01 13:00:00+00')
             from pepsi.workqueue where workqueue_id in (:r_due, :r_due_now)),
          'D-93: a released and claimed row is running with its timeout cleared');
select row_eq($$select status::text, timeout from pepsi.workqueue where workqueue_id = $$ || :r_later,
              row('paused'::text, '2026-03-01 13:00:01+00'::timestamptz),
              'D-93: a paused row due later than p_now is left paused with its timeout');
select row_eq($$select status::text, timeout from pepsi.workqueue where workqueue_id = $$ || :r_other,
              row('pending'::text, null::timestamptz),
              'D-93: the release covers every stage; a due row of a stage not claimed becomes pending');

insert into claimed select 7, * from pepsi.workqueue_claim('{r}', '{0}', '2026-03-01 13:00:01+00', true);
select is((select count(*) from claimed where call = 7), 0::bigint, 'D-93: with cap 0 the release still runs but claims nothing');
select is((select status::text from pepsi.workqueue where workqueue_id = :r_later), 'pending',
          'D-93: ... and the row it released is pending, waiting for capacity');

-- p_now defaults to now() ----------------------------------------------------------------------

select pepsi.workqueue_inject('n') as n_id \gset
insert into claimed select 8, * from pepsi.workqueue_claim('{n}', '{1}');
select is((select claimed_at from pepsi.workqueue where workqueue_id = :n_id), now(),
          'claimed_at is now() when p_now is not given');

-- workqueue_unclaim: claims identified by the id the dispatcher gave them (issue 12)

select count(*) >= 0 as x from (select pepsi.workqueue_inject('u') from generate_series(1, 6)) i \gset
insert into claimed select 9, * from pepsi.workqueue_claim('{u}', '{2}', p_claim_id => 9001);
insert into claimed select 10, * from pepsi.workqueue_claim('{u}', '{3}', p_claim_id => 9002);
select is((select array_agg(distinct claim_id) from pepsi.workqueue where stage = 'u' and status = 'running'),
          '{9001,9002}'::bigint[], 'each claimed row carries its claim''s id');

select is(pepsi.workqueue_unclaim('{9001}'), 2, 'unclaim returns how many rows it gave back');
select set_eq($$select workqueue_id from pepsi.workqueue where stage = 'u' and status = 'pending'$$,
              $$select workqueue_id from claimed where call = 9
                union all
                select max(workqueue_id) from pepsi.workqueue where stage = 'u'$$,
              'unclaim gives back exactly the rows of that claim (they are pending again)');
select ok((select bool_and(status = 'running') from pepsi.workqueue
            where workqueue_id in (select workqueue_id from claimed where call = 10)),
          'unclaim leaves the rows of another claim running');

select min(workqueue_id) as u_moved from claimed where call = 10 \gset
select pepsi.workqueue_advance(:u_moved, 'u', 'u-next') is not null as x \gset
select is(pepsi.workqueue_unclaim('{9002}'), 2,
          'unclaim skips a row of the claim that has moved on (advanced)');
select is((select stage || '/' || status from pepsi.workqueue where workqueue_id = :u_moved), 'u-next/pending',
          'the advanced row stays where its worker left it');
select is(pepsi.workqueue_unclaim('{9002}'), 0, 'unclaim of the same claim again gives back nothing');
select is(pepsi.workqueue_unclaim('{1}'), 0, 'unclaim of an id no claim used gives back nothing');

insert into claimed select 11, * from pepsi.workqueue_claim('{u}', '{1}', p_claim_id => 9003);
insert into claimed select 12, * from pepsi.workqueue_claim('{u}', '{1}', p_claim_id => 9004);
select workqueue_id as u_again from claimed where call = 11 \gset
select is(pepsi.workqueue_unclaim('{9001}'), 0,
          'unclaim of an old claim does not touch a row claimed again since (new claim id)');
select is((select status::text from pepsi.workqueue where workqueue_id = :u_again), 'running',
          'the row claimed again stays running');
select is(pepsi.workqueue_unclaim('{9003,9004}'), 2, 'issue 12: several lost claims go back in one call');
select ok(pepsi.claim_incarnation() < pepsi.claim_incarnation(), 'claim_incarnation never repeats');

-- argument checks added after review
select throws_ok($$select * from pepsi.workqueue_claim('{a,a}', '{1,1}')$$, 'PX003', null,
                 'PX003: a stage listed twice is refused (its caps would not add up)');
select throws_ok($$select * from pepsi.workqueue_claim('{a}', '{1}', null)$$, 'PX003', null,
                 'PX003: a NULL p_now is refused (claimed_at identifies a claim)');

select * from finish();
rollback;
