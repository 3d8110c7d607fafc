-- Verify pepsi:claim_fair_wrap on pg

begin;

-- the wrap-around is called, not a part of the fair claim's plan
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_sender_wrap(text, text, int, int, int, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure
   and prolang = (select oid from pg_catalog.pg_language where lanname = 'plpgsql') and provolatile = 's'
   and prorows = 16;
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure
   and prosrc like '%pepsi.workqueue_sender_wrap(%'
   and prosrc not like '%win2 w cross join lateral%';

rollback;
