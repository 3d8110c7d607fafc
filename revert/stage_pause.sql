-- Revert pepsi:stage_pause from pg

begin;

drop function pepsi.workqueue_resume_stage(text);
drop function pepsi.workqueue_pause_stage(text, text);
drop function pepsi.stage_pause_caps(text[], int[]);
drop table pepsi.stage_pause;

commit;
