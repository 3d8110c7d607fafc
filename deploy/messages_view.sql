-- Deploy pepsi:messages_view to pg
-- requires: workqueue
-- requires: roles
--
-- What a reader may see of a message (issue 15): its envelope, state and
-- place in the queue, never its body. pepsi_reader may not select from
-- workqueue (it would see body_id and, with workqueue_body, the payload);
-- this view is how dashboards, operators and `pepsi-runner queue` look at
-- one message. It runs with the view owner's rights, so readers need no
-- grant on the tables; body_bytes reads the body's size from its row
-- without handing out the bytes.

begin;

create view pepsi.messages as
select w.workqueue_id, w.tube, w.stage, w.status, w.origin_user, w.origin_addr,
       w.envelope_sender, w.recipients, w.sender_key, w.header_from, w.subject,
       w.state, w.arrived_at, w.claimed_at, w.claim_id, w.timeout,
       w.webhook_event_id, w.partition, w.owner_slot,
       (select octet_length(b.body) from pepsi.workqueue_body b where b.body_id = w.body_id) as body_bytes
  from pepsi.workqueue w;

comment on view pepsi.messages is
    'Every queued message''s envelope, state and place in the queue, never its body (issue 15): what pepsi_reader and pepsi_operator read of a message.';
comment on column pepsi.messages.workqueue_id is 'The message''s id.';
comment on column pepsi.messages.tube is 'The named queue the message belongs to (default ''default'').';
comment on column pepsi.messages.stage is 'The stage it waits at, runs at, or failed at.';
comment on column pepsi.messages.status is 'pending, running, paused (retry or run_at later), failed or timeout.';
comment on column pepsi.messages.origin_user is 'The authenticated user that sent it, when known.';
comment on column pepsi.messages.origin_addr is 'The client address it came from, when known.';
comment on column pepsi.messages.envelope_sender is 'The envelope sender (return path).';
comment on column pepsi.messages.recipients is 'The envelope recipients.';
comment on column pepsi.messages.sender_key is 'The key fair scheduling groups senders by (origin user, address or envelope sender).';
comment on column pepsi.messages.header_from is 'The From header, clipped.';
comment on column pepsi.messages.subject is 'The Subject header, clipped.';
comment on column pepsi.messages.state is 'The message''s JSON state: hops, strikes, failure class, last error, what stages recorded.';
comment on column pepsi.messages.arrived_at is 'When it was injected.';
comment on column pepsi.messages.claimed_at is 'When a dispatcher last claimed it (running rows).';
comment on column pepsi.messages.claim_id is 'The claim that holds it while running.';
comment on column pepsi.messages.timeout is 'Paused rows: when they become due; running rows: when MAX_RUNTIME runs out.';
comment on column pepsi.messages.webhook_event_id is 'The webhook event it carries, if any (pepsi.webhook_events).';
comment on column pepsi.messages.partition is 'The tube''s partition (pepsi.tube_partition).';
comment on column pepsi.messages.owner_slot is 'The owner slot whose dispatcher claims it.';
comment on column pepsi.messages.body_bytes is 'The body''s size in bytes (NULL: no body); the body itself is not readable here.';

revoke all on pepsi.messages from public;
grant select on pepsi.messages to pepsi_reader;

commit;
