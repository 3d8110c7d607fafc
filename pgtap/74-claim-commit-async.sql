-- Issue 19, sqitch change claim_commit_async: a claim that is the first
-- write of its transaction (the dispatcher's: one statement, autocommit)
-- commits with synchronous_commit off; its durability buys nothing (a
-- claim lost in a crash leaves its rows pending, as D-18 leaves running
-- rows after a restart), and waiting for the WAL flush was 0.4 ms of each
-- claim. A caller who wrote earlier in the same transaction keeps its
-- setting. The setting is transaction-local: the session is unchanged.
--
-- This file runs without a surrounding transaction: the claims must be
-- the first write of transactions of their own (pgTAP's plan() writes).
-- Its rows are committed in stages of their own and deleted at the end.

set synchronous_commit = on;
select plan(9);

insert into pepsi.workqueue (stage, origin_user) select s, 'u' || (i % 2)
  from unnest('{ca_plain,ca_fair,ca_wrote}'::text[]) s, generate_series(1, 4) i;

-- The plain claim, alone in its transaction.
begin;
select count(*) as claimed from pepsi.workqueue_claim('{ca_plain}', '{2}') \gset
select is(:claimed::int, 2, 'setup: the plain claim took two rows');
select is(current_setting('synchronous_commit'), 'off',
          'issue 19: a plain claim that is its transaction''s first write commits without waiting for the WAL flush');
commit;
select is(current_setting('synchronous_commit'), 'on', 'issue 19: ... for that transaction only: the session keeps its setting');
select is((select count(*)::int from pepsi.workqueue where stage = 'ca_plain' and status = 'running'), 2,
          'issue 19: ... and the claim committed');

-- The fair claim as the dispatcher calls it (a claim id, kept leads).
begin;
select count(*) as claimed
  from pepsi.workqueue_claim_fair('{ca_fair}', '{2}', '{1000}', '{ca_fair}', '{user:u0}', '{5000}',
                                  p_claim_id => (9::bigint << 40) + 1, p_lead_sync => '{t}') \gset
select is(:claimed::int, 2, 'setup: the fair claim took two rows');
select is(current_setting('synchronous_commit'), 'off',
          'issue 19: the fair claim, its transaction''s first write, commits without waiting for the WAL flush');
commit;
select is(current_setting('synchronous_commit'), 'on', 'issue 19: ... for that transaction only');

-- A caller who wrote first keeps the durability it asked for.
begin;
update pepsi.workqueue set subject = subject where stage = 'ca_wrote';
select count(*) as claimed from pepsi.workqueue_claim('{ca_wrote}', '{1}') \gset
select is(:claimed::int, 1, 'setup: a claim after a write in the same transaction');
select is(current_setting('synchronous_commit'), 'on',
          'issue 19: a claim after the transaction''s own write leaves synchronous_commit as it was');
commit;

delete from pepsi.workqueue where stage in ('ca_plain', 'ca_fair', 'ca_wrote');
select * from finish();
