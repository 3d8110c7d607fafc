-- Verify pepsi:workqueue on pg

begin;

select workqueue_id, tube, stage, status, origin_user, origin_addr, envelope_sender,
       recipients, sender_key, header_from, subject, state, body_id, arrived_at,
       claimed_at, timeout, webhook_event_id
  from pepsi.workqueue where false;
select body_id, headers, body, created_at from pepsi.workqueue_body where false;
-- issue 13: the webhook link is a column with a partial index.
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_webhook_event_idx'
   and indexdef like '%(webhook_event_id) WHERE (webhook_event_id IS NOT NULL)';
select 1 / (pepsi.sender_key_of(null, '2001:db8::1', null, '{}') = 'ip:2001:db8::/64')::int;
-- issue 11: the input limits are deployed and address_check applies RFC 5321's.
select 1 / (pepsi.input_limit('subject') = 998 and pepsi.input_limit('recipients') = 1000)::int;
select 1 / count(*) from pepsi.input_limits() where field = 'body' and max_value = 67108864;
select 'pepsi.workqueue_release_due(timestamptz, int)'::regprocedure;
-- issue 14: every row has its tube's partition and owner slot, and the claims' and the
-- sweep's indexes lead with the slot.
select partition, owner_slot from pepsi.workqueue where false;
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_idx'
   -- workqueue_enqueue_options (issue 16) adds priority before workqueue_id
   and indexdef ~ '\(stage, owner_slot, (priority, )?workqueue_id\) WHERE \(status = ';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_pending_sender_idx'
   and indexdef ~ '\(stage, owner_slot, sender_key, (priority, )?workqueue_id\) WHERE \(status = ';
select 1 / count(*) from pg_catalog.pg_indexes
 where schemaname = 'pepsi' and indexname = 'workqueue_paused_idx'
   and indexdef like '%(owner_slot, timeout) WHERE (status = %';
do $$
begin
    perform pepsi.address_check(repeat('a', 65) || '@example.org');
    raise exception 'address_check accepted a 65-byte local part';
exception when sqlstate 'PX003' then
    null;
end
$$;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.address_check(text, text)'::regprocedure;
select 'pepsi.domain_of(text)'::regprocedure;
select 'pepsi.excerpt(text)'::regprocedure;
select 'pepsi.input_limit(text)'::regprocedure;
select 'pepsi.input_limits()'::regprocedure;
select 'pepsi.peer_key_of(inet)'::regprocedure;
select 'pepsi.reason_clip(text)'::regprocedure;
select 'pepsi.sender_key_of(text, inet, text, text[])'::regprocedure;
select 'pepsi.size_error(text, text, bigint, text)'::regprocedure;
select 'pepsi.stage_check(text, text)'::regprocedure;
select 'pepsi.state_count(jsonb)'::regprocedure;
select 'pepsi.state_flag(jsonb)'::regprocedure;
select 'pepsi.time_or_null(text)'::regprocedure;
select 'pepsi.tube_check(text, text)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.workqueue_body_id_idx'::regclass;
select 'pepsi.workqueue_body_pkey'::regclass;
select 'pepsi.workqueue_paused_idx'::regclass;
select 'pepsi.workqueue_pending_idx'::regclass;
select 'pepsi.workqueue_pending_sender_idx'::regclass;
select 'pepsi.workqueue_pkey'::regclass;
select 'pepsi.workqueue_webhook_event_idx'::regclass;

rollback;
