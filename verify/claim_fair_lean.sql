-- Verify pepsi:claim_fair_lean on pg

begin;

-- the list walk is called, not inlined into the fair claim's plan
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_sender_listed(text, text, text, int, int, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure
   and prolang = (select oid from pg_catalog.pg_language where lanname = 'plpgsql') and provolatile = 's'
   and prorows = 16;
-- both claims check for marks with an expression
select 1 / (count(*) = 2)::int from pg_catalog.pg_proc
 where oid in ('pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)'::regprocedure,
               'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure)
   and prosrc like '%if cardinality(array_remove(v_mark_id, null)) > 0 then%';

rollback;
