-- Issue 19, sqitch change claim_fair_idle: when no stage has more eligible
-- pending rows than its cap, the fair claim takes them all, oldest first,
-- without its window and ranking (nothing competes for a slot), and
-- returns what the full claim returns for them: window_next NULL,
-- window_lap true, the FIFO credit by the same arithmetic, the oldest f
-- rows marked fifo, lead_floor the least lead of the senders claimed (as
-- passed, or kept), leads_lost. How a test tells the idle claim from the
-- full one: the full claim probes the senders in
-- workqueue_pending_sender_idx, the idle claim never reads that index
-- (pg_stat_get_xact_numscans, this transaction's scans). With one row
-- more than the cap, the full claim ranks as before (the leading sender
-- waits). The check runs only after a claim that filled no stage (the
-- session setting pepsi.claim_fair_full is '0'): after one that did, a
-- claim with no FIFO share reads no entry of workqueue_pending_idx. The
-- tests of the scans fail on the claim of claim_commit_async (checked):
-- the others hold for both claims, which must return the same. The cost:
-- bench/claim-fair, docs/fair-scheduling.md.

begin;
select plan(23);

-- No refresh of the claim marks due for 5 s (the summary the claims
-- read, as bench/claim-fair sets it): the reads counted are the claims'.
do $$ begin
    perform set_config(pepsi.claim_mark_key('', 0),
                       (floor(extract(epoch from clock_timestamp()) * 1000)::bigint + 5000) || '|', false);
end $$;
create function pg_temp.sender_scans() returns bigint language sql as $$
    select pg_catalog.pg_stat_get_xact_numscans('pepsi.workqueue_pending_sender_idx'::regclass) $$;
create function pg_temp.pending_reads() returns bigint language sql as $$
    select pg_catalog.pg_stat_get_xact_tuples_returned('pepsi.workqueue_pending_idx'::regclass) $$;

-- idle_a and idle_r: u0, u1, u0 (k = 1, 2, 3); idle_b: v; idle_c:
-- nothing. idle_r is claimed first where the entries its check reads are
-- counted: a row claimed and made pending again leaves a dead entry in
-- workqueue_pending_idx, which a read returns too; its name is this
-- run's (a run rolled back earlier in the same database leaves its
-- entries until a vacuum), and the updates that make the other stages'
-- rows pending again leave its rows alone: such an update finds no room
-- on a full heap page now and then, is not HOT, and leaves a second
-- entry of each row (CI failed so once: 6 read, not 3).
select 'idle_r' || txid_current() as r \gset
insert into pepsi.workqueue (stage, origin_user)
values ('idle_a', 'u0'), ('idle_a', 'u1'), ('idle_a', 'u0'), ('idle_b', 'v'),
       (:'r', 'u0'), (:'r', 'u1'), (:'r', 'u0');
create temp table k as
select w.workqueue_id, w.stage, row_number() over (partition by w.stage order by w.workqueue_id)::int as k
  from pepsi.workqueue w where w.stage like 'idle\_%';

-- Caps 4, 4, 4: no stage has more than its cap. Leads passed (no claim
-- id): u0 5,000, u1 3,000. FIFO 10 %, credits 95 and 0: idle_a's share is
-- (95 + 3 x 10) / 100 = 1 slot, credit 25; idle_b's 0, credit 10.
-- A session's first claim is a full one (no previous claim): this
-- session's previous claim filled no stage.
select is(pg_catalog.current_setting('pepsi.claim_fair_full', true), null,
          'issue 19: a new session has no pepsi.claim_fair_full: its first claim is a full one');
set pepsi.claim_fair_full = '0';
create temp table s0 as select pg_temp.sender_scans() as n;
create temp table got as
select row_number() over () as n, c.*
  from pepsi.workqueue_claim_fair('{idle_a,idle_b,idle_c}', '{4,4,4}', '{1000,1000,1000}',
                                  '{idle_a,idle_a}', '{user:u0,user:u1}', '{5000,3000}',
                                  p_fifo_percent => 10, p_fifo_credit => '{95,0,null}') c;
select is(pg_temp.sender_scans() - (select n from s0), 0::bigint,
          'issue 19: with no stage over its cap the fair claim does not probe the senders (workqueue_pending_sender_idx unread)');
select is((select string_agg(g.stage || ':' || k.k, ',' order by g.n) from got g join k using (workqueue_id)),
          'idle_a:1,idle_a:2,idle_a:3,idle_b:1',
          'issue 19: ... and takes every waiting row, grouped by stage in p_stages order, oldest first');
select set_eq($$select workqueue_id from got$$,
              $$select workqueue_id from pepsi.workqueue where stage like 'idle\_%' and status = 'running'$$,
              'issue 19: ... the rows returned are the rows it made running');
select is((select count(*)::int from got g where g.window_next is null and g.window_lap), 4,
          'issue 19: ... window_next NULL and window_lap true on every row: the window held every waiting sender');
select is((select array_agg(g.fifo_credit order by g.n) from got g), '{25,25,25,10}'::int[],
          'issue 19: ... the FIFO credit as the full claim counts it: (95 + 3 x 10) % 100, (0 + 1 x 10) % 100');
select is((select array_agg(g.fifo order by g.n) from got g), '{t,f,f,f}'::boolean[],
          'issue 19: ... the oldest row of idle_a is its FIFO share of one slot');
select is((select array_agg(distinct g.lead_floor) from got g where g.stage = 'idle_a')
          || (select array_agg(distinct g.lead_floor) from got g where g.stage = 'idle_b'),
          '{3000,0}'::float8[],
          'issue 19: ... lead_floor: the least lead of the senders claimed (u1''s 3,000), 0 for a sender without one');
select is(pg_catalog.current_setting('pepsi.claim_fair_full'), '0',
          'issue 19: ... and the next claim checks again (pepsi.claim_fair_full ''0'')');

-- A caller who sets pepsi.claim_fair_full (any pepsi_runner login can)
-- only chooses the path: '1' on the same queue and the same call runs
-- the full claim, which claims the same rows with the same columns.
update pepsi.workqueue set status = 'pending', claimed_at = null where stage like 'idle\_%' and stage <> :'r';
set pepsi.claim_fair_full = '1';
select set_eq($$select c.workqueue_id, c.stage, c.sender_key, c.fifo, c.window_next, c.window_lap, c.fifo_credit,
                       c.lead_floor, c.leads_lost
                  from pepsi.workqueue_claim_fair('{idle_a,idle_b,idle_c}', '{4,4,4}', '{1000,1000,1000}',
                                                  '{idle_a,idle_a}', '{user:u0,user:u1}', '{5000,3000}',
                                                  p_fifo_percent => 10, p_fifo_credit => '{95,0,null}') c$$,
              $$select g.workqueue_id, g.stage, g.sender_key, g.fifo, g.window_next, g.window_lap, g.fifo_credit,
                       g.lead_floor, g.leads_lost from got g$$,
              'issue 19: pepsi.claim_fair_full set to ''1'' by the caller: the full claim takes the same rows with the same columns as the idle claim did');
set pepsi.claim_fair_full = '0'; -- as the tests below found it before this one

-- Exactly the cap: still idle. idle_a's three rows pending again, cap 3.
update pepsi.workqueue set status = 'pending', claimed_at = null where stage like 'idle\_%' and stage <> :'r';
truncate s0;
insert into s0 select pg_temp.sender_scans();
select is((select count(*)::int from pepsi.workqueue_claim_fair('{idle_a}', '{3}', '{1000}', null, null, null)), 3,
          'issue 19: a stage with exactly its cap of rows: all claimed');
select is(pg_temp.sender_scans() - (select n from s0), 0::bigint,
          'issue 19: ... by the idle claim (no sender probe)');

-- One row more than the cap: the full claim ranks. idle_r: u0, u1, u0;
-- cap 2, no FIFO share, u0 leads by 5,000: u1's row and u0's oldest.
truncate s0;
insert into s0 select pg_temp.sender_scans();
create temp table r0 as select pg_temp.pending_reads() as n;
select is((select array_agg(k.k order by k.k)
             from pepsi.workqueue_claim_fair(array[:'r'], '{2}', '{1000}', array[:'r'], '{user:u0}', '{5000}',
                                             p_fifo_percent => 0) c
                  join k using (workqueue_id)),
          '{1,2}'::int[],
          'issue 19: three rows, cap 2: the full claim ranks (u1''s row and u0''s oldest)');
select cmp_ok(pg_temp.sender_scans() - (select n from s0), '>', 0::bigint,
              'issue 19: ... and probed the senders');
select is(pg_temp.pending_reads() - (select n from r0), 3::bigint,
          'issue 19: ... after the check read cap + 1 = 3 entries of workqueue_pending_idx (no FIFO share: the full claim reads none)');
select is(pg_catalog.current_setting('pepsi.claim_fair_full'), '1',
          'issue 19: ... the claim filled idle_r: pepsi.claim_fair_full ''1''');
update pepsi.workqueue set status = 'pending', claimed_at = null where stage like 'idle\_%';
truncate r0;
insert into r0 select pg_temp.pending_reads();
select is((select array_agg(k.k order by k.k)
             from pepsi.workqueue_claim_fair(array[:'r'], '{2}', '{1000}', array[:'r'], '{user:u1}', '{5000}',
                                             p_fifo_percent => 0) c
                  join k using (workqueue_id)),
          '{1,3}'::int[],
          'issue 19: ... u1 leading instead: u0''s two rows, not the two oldest (the ranking decides, not the age)');
select is(pg_temp.pending_reads() - (select n from r0), 0::bigint,
          'issue 19: ... after a claim that filled a stage, no check: no entry of workqueue_pending_idx read');

-- A paused tube's rows do not count: idle_a's rows in tube idle.t76,
-- paused, and one row of idle_b's tube-less row pending; cap 1.
update pepsi.workqueue set status = 'pending', claimed_at = null where stage like 'idle\_%';
update pepsi.workqueue set tube = 'idle.t76' where stage = 'idle_a';
select lives_ok($$select pepsi.tube_pause('idle.t76', 60)$$, 'setup: tube idle.t76 paused for a minute');
set pepsi.claim_fair_full = '0';
truncate s0;
insert into s0 select pg_temp.sender_scans();
select is((select array_agg(c.stage) from pepsi.workqueue_claim_fair('{idle_a,idle_b}', '{1,1}', '{1000,1000}',
                                                                     null, null, null) c),
          '{idle_b}'::text[],
          'issue 19: rows of a paused tube are not counted nor claimed: idle_a''s three paused rows leave it idle');
select is(pg_temp.sender_scans() - (select n from s0), 0::bigint,
          'issue 19: ... the idle claim ran');
delete from pepsi.tube_pause where tube = 'idle.t76';
update pepsi.workqueue set tube = 'default' where stage = 'idle_a';

-- Kept leads (a claim id, incarnation 9): the idle claim reads them as the
-- full claim does, and answers leads_lost for a stage this incarnation has
-- not synced.
update pepsi.workqueue set status = 'pending', claimed_at = null where stage like 'idle\_%';
truncate got;
insert into got
select row_number() over (), c.*
  from pepsi.workqueue_claim_fair('{idle_a,idle_b}', '{4,4}', '{1000,1000}', '{idle_a,idle_a}', '{user:u0,user:u1}',
                                  '{7000,2000}', p_claim_id => (9::bigint << 40) + 1, p_lead_sync => '{t,f}') c;
select is((select array_agg(distinct g.lead_floor) from got g where g.stage = 'idle_a'), '{2000}'::float8[],
          'issue 19: with kept leads, lead_floor is the least kept lead of the senders claimed');
select is((select array_agg(distinct g.stage || ':' || g.leads_lost order by g.stage || ':' || g.leads_lost) from got g),
          '{idle_a:false,idle_b:true}'::text[],
          'issue 19: ... and leads_lost is true for the stage not synced by this incarnation, false for the synced one');

select * from finish();
rollback;
