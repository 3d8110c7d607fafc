-- Verify pepsi:tubes on pg

begin;

select tube, paused_at, paused_until from pepsi.tube_pause where false;
select tube, partition, owner_slot, pending, running, paused, failed, timeout, paused_until
  from pepsi.tubes where false;
select 'pepsi.tube_pause_current(timestamptz, boolean)'::regprocedure;
select 'pepsi.tube_locate(text)'::regprocedure;
select 'pepsi.tube_stats(text, timestamptz)'::regprocedure;
select 'pepsi.tube_pause(text, int, timestamptz)'::regprocedure;
-- default always exists (T-37): its statistics are a row, not PX043.
select 1 / count(*)::int from pepsi.tube_stats('default');

-- issue 13: every index of the change, by name.
select 'pepsi.tube_pause_pkey'::regclass;
select 'pepsi.workqueue_tube_idx'::regclass;

rollback;
