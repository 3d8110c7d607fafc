-- Deploy pepsi:claim_plain_generic to pg
-- requires: claim_commit_async
--
-- The plain claim (workqueue_claim, FAIR_SCHEDULING = no) is planned once
-- per session, as the fair claim is, instead of at every call (issue 19).
-- With PostgreSQL's default plan_cache_mode its statements got custom
-- plans: 1.4M of the 4.26M instructions of a call (bench/claim-fair with
-- and without BENCH_SETUP=revert/claim_plain_generic.sql, 1,000 pending:
-- 4.26M -> 2.85M; 1,000,000: 4.31M -> 2.91M; 10 senders of 100,000:
-- 4.29M -> 2.90M).
-- A generic plan does not know the caps, and on a queue of 1,000 rows it
-- joined the picked ids to workqueue by a sequential scan and a hash join
-- (auto_explain): a plan kept for the session, still chosen while the
-- queue grows until the next ANALYZE. Hash and merge joins are off for
-- the claim, so each picked row is found by its primary key, whatever
-- the statistics; the claim has no join where they would pay.
-- The settings also hold for what the claim calls (tube_pause_current,
-- claim_mark_get and its walks), which are index walks either way.

begin;

alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    set plan_cache_mode = force_generic_plan;
alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    set enable_hashjoin = off;
alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    set enable_mergejoin = off;

commit;
