-- Verify pepsi:claim_commit_async on pg

begin;

-- both claims turn synchronous_commit off for their own transaction
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)'::regprocedure
   and prosrc like '%set_config(''synchronous_commit'', ''off'', true)%';
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure
   and prosrc like '%set_config(''synchronous_commit'', ''off'', true)%';

rollback;
