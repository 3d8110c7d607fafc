-- Verify pepsi:inject_batch_fast on pg

begin;

select 'pepsi.workqueue_batch_valid(pepsi.workqueue_item[], timestamptz[], int[], text[])'::regprocedure;
-- the batch checks all elements in one statement first
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_inject_batch(jsonb)'::regprocedure and prosrc like '%workqueue_batch_valid(%';
-- workqueue_insert draws from sequences looked up once per call
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_insert(pepsi.workqueue_item[], bigint[], integer[], timestamptz[], text[])'::regprocedure
   and prosrc like '%nextval(v_id_seq)%';
-- the sender key's functions are inlinable: SQL, no SET options
-- (by name: their verify lines are verify/workqueue.sql's, pgtap/46)
select 1 / (count(*) = 3)::int from pg_catalog.pg_proc
 where pronamespace = 'pepsi'::regnamespace and proname in ('sender_key_of', 'domain_of', 'peer_key_of')
   and prolang = (select oid from pg_catalog.pg_language where lanname = 'sql')
   and proconfig is null and not prosecdef;
select 1 / (pepsi.workqueue_batch_valid(array[row('verify', 'default', null, null, null, '{}', null, null, '{}',
                                                  null, null, now(), null)::pepsi.workqueue_item],
                                        null, null, null)
            and not pepsi.workqueue_batch_valid(array[row('-', 'default', null, null, null, '{}', null, null, '{}',
                                                          null, null, now(), null)::pepsi.workqueue_item],
                                                null, null, null))::int;

rollback;
