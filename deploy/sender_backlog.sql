-- Deploy pepsi:sender_backlog to pg
-- requires: workqueue

begin;

create view pepsi.sender_backlog as
-- Who is queued (the fair claim's view of a stage, D-48..D-61): per stage
-- and sender_key, the pending rows, the age of the oldest arrival among
-- them and the oldest row (the next the fair claim would take of that
-- sender). It reads every pending row, in workqueue_pending_sender_idx
-- order or by a sequential scan, as the planner sees fit: measured here
-- (2 cores, busy) 0.8 to 1.6 s at 1,000,000 pending rows of 10,000
-- senders, so about a second per million. A view for people: the
-- dispatcher never reads it, and it takes no lock that the claim would
-- wait for. Order by waiting desc to see the biggest senders first.
select w.stage, w.sender_key, count(*) as waiting,
       now() - min(w.arrived_at) as oldest_age,
       min(w.workqueue_id) as oldest_workqueue_id
  from pepsi.workqueue w
 where w.status = 'pending'
 group by w.stage, w.sender_key;

comment on view pepsi.sender_backlog is
    'Per stage and sender_key: pending rows, age of the oldest arrival, oldest workqueue_id. Reads every pending row.';

grant select on pepsi.sender_backlog to pepsi_reader, pepsi_runner;

commit;
