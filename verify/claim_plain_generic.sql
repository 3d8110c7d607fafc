-- Verify pepsi:claim_plain_generic on pg

begin;

-- the plain claim: one generic plan per session, no hash or merge join
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)'::regprocedure
   and proconfig @> array['plan_cache_mode=force_generic_plan', 'enable_hashjoin=off', 'enable_mergejoin=off'];

rollback;
