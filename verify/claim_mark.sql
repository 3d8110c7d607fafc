-- Verify pepsi:claim_mark on pg

begin;

select stage, owner_slot, mark_priority, mark_id, refreshed_at, dead_at_head from pepsi.claim_mark where false;
select pg_catalog.has_function_privilege('pepsi.claim_mark_get(text[], int)', 'execute');
select pg_catalog.has_function_privilege('pepsi.claim_mark_skip(text[], int)', 'execute');
select 'pepsi.claim_mark_pkey'::regclass;
select 'pepsi.claim_mark_dead_bound()'::regprocedure;
select 'pepsi.claim_mark_slack()'::regprocedure;
select 'pepsi.claim_mark_sender_bound()'::regprocedure;
select 'pepsi.claim_mark_interval_ms()'::regprocedure;
select 'pepsi.claim_mark_key(text, integer)'::regprocedure;
select 'pepsi.claim_mark_set(text, integer, timestamp with time zone, smallint, bigint)'::regprocedure;
select 'pepsi.claim_mark_refresh(text, integer, timestamp with time zone, smallint, bigint)'::regprocedure;
select 'pepsi.workqueue_sender_gap(text, integer, text, text, text, text[], smallint, bigint)'::regprocedure;
select 'pepsi.workqueue_sender_listed(text, text, text, integer, integer, text[], text[], smallint[], bigint[], smallint, bigint)'::regprocedure;
select pg_catalog.has_function_privilege('pepsi.claim_mark_advance(text[], int, smallint[], bigint[], text[], smallint[], bigint[], text[], smallint[], bigint[])', 'execute');
select pg_catalog.has_function_privilege('pepsi.workqueue_sender_probe(text, text, text, int, int, text[], smallint, bigint)', 'execute');
-- both claims read the marks
select 1 / (position('claim_mark_get' in prosrc) > 0)::int from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)'::regprocedure;
select 1 / (position('claim_mark_get' in prosrc) > 0)::int from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[], int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int)'::regprocedure;

rollback;
