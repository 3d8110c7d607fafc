-- Verify pepsi:workqueue on pg

begin;

select workqueue_id, tube, stage, status, origin_user, origin_addr, envelope_sender,
       recipients, sender_key, header_from, subject, state, body_id, arrived_at,
       claimed_at, timeout
  from pepsi.workqueue where false;
select body_id, headers, body, created_at from pepsi.workqueue_body where false;
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_idx';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_sender_idx';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_paused_idx';
select 1 / (pepsi.sender_key_of(null, '2001:db8::1', null, '{}') = 'ip:2001:db8::/64')::int;

rollback;
