-- Verify pepsi:messages_view on pg

begin;

select workqueue_id, tube, stage, status, origin_user, origin_addr, envelope_sender, recipients,
       sender_key, header_from, subject, state, arrived_at, claimed_at, claim_id, timeout,
       webhook_event_id, partition, owner_slot, body_bytes
  from pepsi.messages where false;
select 1 / (has_table_privilege('pepsi_reader', 'pepsi.messages', 'SELECT'))::int;

rollback;
