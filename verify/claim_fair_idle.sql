-- Verify pepsi:claim_fair_idle on pg

begin;

-- the fair claim takes every waiting row without ranking when none compete
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure
   and prosrc like '%v_idle_ids%';

rollback;
