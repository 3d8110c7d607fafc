-- Verify pepsi:workqueue_history on pg

begin;

select workqueue_id, tube, stage, outcome, sender_key, origin_user, arrived_at, ended_at, hops, strikes,
       failure_class, last_error
  from pepsi.workqueue_history where false;
select retention from pepsi.workqueue_history_settings where false;
select 'pepsi.workqueue_history_default'::regclass;
select 'pepsi.workqueue_history_on()'::regprocedure;
select 'pepsi.workqueue_history_maintain(timestamptz)'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.workqueue_history_workqueue_id_idx'::regclass;
select 'pepsi.workqueue_history_settings_pkey'::regclass;

rollback;
