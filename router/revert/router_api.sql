-- Revert pepsi_router:router_api from pg

begin;

drop function pepsi.settings_delete(text, text, text);
drop function pepsi.settings_set(text, text, text, text);
drop function pepsi.config_clear(text);
drop function pepsi.config_remove_stage(text);
drop function pepsi.config_unset(text, text);
drop function pepsi.config_set(text, text, text);
drop function pepsi.workqueue_resume_stage(text);
drop function pepsi.workqueue_pause_stage(text, text);
drop function pepsi.workqueue_purge(interval, timestamptz);
drop function pepsi_router.settings_delete_all(text, text, text);
drop function pepsi_router.settings_set_all(text, text, text, text);
drop function pepsi_router.config_clear_all(text);
drop function pepsi_router.config_remove_stage_all(text);
drop function pepsi_router.config_unset_all(text, text);
drop function pepsi_router.config_set_all(text, text, text);
drop function pepsi_router.workqueue_resume_stage_all(text);
drop function pepsi_router.workqueue_pause_stage_all(text, text);
drop function pepsi_router.workqueue_purge_all(interval, timestamptz);
drop function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb);
drop function pepsi_router.workqueue_pause_on(int, bigint, text, timestamptz, text, jsonb);
drop function pepsi.workqueue_move(bigint, text, text, text[], int);
drop function pepsi_router.workqueue_move_on(int, bigint, text, text, text[], int);
drop function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]);
drop function pepsi.workqueue_reroute(bigint[], text, timestamptz);
drop function pepsi.workqueue_retry(bigint[], timestamptz);
drop function pepsi.workqueue_delete(bigint[], text, timestamptz);
drop function pepsi_router.by_shard(bigint[]);
drop function pepsi_router.workqueue_resume_all(text, text, text[]);
drop function pepsi_router.workqueue_resume_on(int, bigint[], text, text, text, text[]);
drop function pepsi_router.workqueue_reroute_on(int, bigint[], text, timestamptz);
drop function pepsi_router.workqueue_retry_on(int, bigint[], timestamptz);
drop function pepsi_router.workqueue_delete_on(int, bigint[], text, timestamptz);
drop function pepsi.workqueue_inject_batch(jsonb);
drop function pepsi_router.workqueue_inject_batch_on(int, jsonb);
drop function pepsi.tube_pause(text, int, timestamptz);
drop function pepsi_router.tube_pause_on(int, text, int, timestamptz);
drop function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text);
drop function pepsi_router.workqueue_inject_on(int, text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text);
drop function pepsi_router.unreachable(int, text);
drop type pepsi.workqueue_status;

commit;
