-- Issue 19, sqitch change fair_lead_session: the fair claim keeps the
-- dispatcher's leads in temporary tables of the claiming session
-- (pg_temp.fair_lead, pg_temp.fair_stage), made at its first claim in the
-- shape of pepsi.fair_lead and pepsi.fair_stage, which stay empty. Why: a
-- temporary table is pruned against its own session's snapshot only, so
-- a snapshot held open elsewhere does not pile up a version of a lead per
-- claim (that, measured, is bench/held-snapshot's business: one session
-- cannot hold another's snapshot here). What is tested: where the leads
-- go, that a session without them answers leads_lost (the dispatcher then
-- sends every lead again), and that the definer function never writes
-- into a table of that name its caller made.

begin;
select plan(11);

insert into pepsi.workqueue (stage, origin_user) select 'ls_a', 'u' || (i % 2) from generate_series(1, 8) i;

-- A caller's own pg_temp.fair_lead (a trigger on it would run with the
-- definer's rights) is refused before the claim writes anything.
set local role pepsi_runner;
create temporary table fair_lead (stage text, sender_key text, incarnation bigint, v float8);
select throws_like($$select * from pepsi.workqueue_claim_fair('{ls_a}', '{1}', '{1000}', '{ls_a}', '{user:u0}', '{5000}',
                                                               p_claim_id => (7::bigint << 40) + 1, p_lead_sync => '{t}')$$,
                   'pg_temp.fair_lead exists and was not made by the fair claim%',
                   'issue 19: a pg_temp.fair_lead the caller made is refused, never written to');
drop table pg_temp.fair_lead;
reset role;
select is((select count(*)::int from pepsi.workqueue where stage = 'ls_a' and status = 'running'), 0,
          'issue 19: ... and nothing was claimed');

-- The first claim with a claim id makes the session's tables and keeps
-- the leads there (incarnation 7 = p_claim_id >> 40).
select is((select count(*)::int
             from pepsi.workqueue_claim_fair('{ls_a}', '{2}', '{1000}', '{ls_a}', '{user:u0}', '{5000}',
                                             p_claim_id => (7::bigint << 40) + 1, p_lead_sync => '{t}')),
          2, 'setup: a synced claim of two rows');
select is((select array_agg(c.relname::text || ':' || c.relpersistence::text order by c.relname)
             from pg_catalog.pg_class c
            where c.oid in (pg_catalog.to_regclass('pg_temp.fair_lead'), pg_catalog.to_regclass('pg_temp.fair_stage'))),
          '{fair_lead:t,fair_stage:t}'::text[], 'issue 19: the session''s kept leads are temporary tables');
select is((select array_agg(f.stage || '/' || f.sender_key || '/' || f.incarnation || '/' || f.v) from pg_temp.fair_lead f),
          '{ls_a/user:u0/7/5000}'::text[], 'issue 19: the lead sent is kept in pg_temp.fair_lead, for incarnation 7');
select is((select array_agg(f.stage || '/' || f.incarnation) from pg_temp.fair_stage f), '{ls_a/7}'::text[],
          'issue 19: the synced stage is held in full by incarnation 7 (pg_temp.fair_stage)');
select is((select count(*)::int from pepsi.fair_lead) + (select count(*)::int from pepsi.fair_stage), 0,
          'issue 19: pepsi.fair_lead and pepsi.fair_stage stay empty: they only give the shape');

-- The next claim reads the kept lead: u0 leads by 5 averages, so u1's
-- rows go first (no FIFO share).
select is((select array_agg(distinct c.sender_key)
             from pepsi.workqueue_claim_fair('{ls_a}', '{2}', '{1000}', '{}', '{}', '{}', p_fifo_percent => 0,
                                             p_claim_id => (7::bigint << 40) + 2) c),
          '{user:u1}'::text[], 'D-53: the kept lead ranks its sender: the one without a lead is claimed first');
select is((select array_agg(distinct c.leads_lost)
             from pepsi.workqueue_claim_fair('{ls_a}', '{1}', '{1000}', '{}', '{}', '{}',
                                             p_claim_id => (7::bigint << 40) + 3) c),
          '{f}'::boolean[], 'issue 12: leads_lost is false while the session holds the stage''s leads');

-- A session without them (here: its temporary tables dropped, as a new
-- session or DISCARD TEMP would leave it; DISCARD would drop pgTAP's own)
-- answers leads_lost, and the claim makes the tables again.
drop table pg_temp.fair_lead, pg_temp.fair_stage;
select is((select array_agg(distinct c.leads_lost)
             from pepsi.workqueue_claim_fair('{ls_a}', '{1}', '{1000}', '{}', '{}', '{}',
                                             p_claim_id => (7::bigint << 40) + 4) c),
          '{t}'::boolean[], 'issue 19: a session without the kept leads answers leads_lost (the dispatcher sends them all again)');
select is((select count(*)::int from pg_temp.fair_lead), 0,
          'issue 19: ... with empty tables made again');

select * from finish();
rollback;
