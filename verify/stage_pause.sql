-- Verify pepsi:stage_pause on pg

begin;

select stage, paused_at, paused_by, reason from pepsi.stage_pause where false;
select 'pepsi.stage_pause_caps(text[], int[])'::regprocedure;
select 'pepsi.workqueue_pause_stage(text, text)'::regprocedure;
select 'pepsi.workqueue_resume_stage(text)'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.stage_pause_pkey'::regclass;

rollback;
