-- Verify pepsi:fair_lead_session on pg

begin;

select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.fair_lead_open()'::regprocedure;
-- the fair claim keeps its leads in the session's temporary tables
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure
   and prosrc like '%insert into pg_temp.fair_lead as f%'
   and prosrc not like '%pepsi.fair_lead f%';

rollback;
