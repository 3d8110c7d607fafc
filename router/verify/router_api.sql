-- Verify pepsi_router:router_api on pg

begin;

select 'pepsi_router.unreachable(int, text)'::regprocedure;
select 'pepsi_router.workqueue_inject_on(int, text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)'::regprocedure;
select 'pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz, timestamptz, int, text)'::regprocedure;
select 'pepsi_router.tube_pause_on(int, text, int, timestamptz)'::regprocedure;
select 'pepsi.tube_pause(text, int, timestamptz)'::regprocedure;
select 'pepsi_router.workqueue_inject_batch_on(int, jsonb)'::regprocedure;
select 'pepsi.workqueue_inject_batch(jsonb)'::regprocedure;
select 'pepsi_router.workqueue_delete_on(int, bigint[], text, timestamptz)'::regprocedure;
select 'pepsi_router.workqueue_retry_on(int, bigint[], timestamptz)'::regprocedure;
select 'pepsi_router.workqueue_reroute_on(int, bigint[], text, timestamptz)'::regprocedure;
select 'pepsi_router.workqueue_resume_on(int, bigint[], text, text, text, text[])'::regprocedure;
select 'pepsi_router.workqueue_resume_all(text, text, text[])'::regprocedure;
select 'pepsi_router.by_shard(bigint[])'::regprocedure;
select 'pepsi.workqueue_delete(bigint[], text, timestamptz)'::regprocedure;
select 'pepsi.workqueue_retry(bigint[], timestamptz)'::regprocedure;
select 'pepsi.workqueue_reroute(bigint[], text, timestamptz)'::regprocedure;
select 'pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[])'::regprocedure;
select 'pepsi_router.workqueue_move_on(int, bigint, text, text, text[], int)'::regprocedure;
select 'pepsi.workqueue_move(bigint, text, text, text[], int)'::regprocedure;
select 'pepsi_router.workqueue_pause_on(int, bigint, text, timestamptz, text, jsonb)'::regprocedure;
select 'pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb)'::regprocedure;
select 'pepsi_router.workqueue_purge_all(interval, timestamptz)'::regprocedure;
select 'pepsi_router.workqueue_pause_stage_all(text, text)'::regprocedure;
select 'pepsi_router.workqueue_resume_stage_all(text)'::regprocedure;
select 'pepsi_router.config_set_all(text, text, text)'::regprocedure;
select 'pepsi_router.config_unset_all(text, text)'::regprocedure;
select 'pepsi_router.config_remove_stage_all(text)'::regprocedure;
select 'pepsi_router.config_clear_all(text)'::regprocedure;
select 'pepsi_router.settings_set_all(text, text, text, text)'::regprocedure;
select 'pepsi_router.settings_delete_all(text, text, text)'::regprocedure;
select 'pepsi.workqueue_purge(interval, timestamptz)'::regprocedure;
select 'pepsi.workqueue_pause_stage(text, text)'::regprocedure;
select 'pepsi.workqueue_resume_stage(text)'::regprocedure;
select 'pepsi.config_set(text, text, text)'::regprocedure;
select 'pepsi.config_unset(text, text)'::regprocedure;
select 'pepsi.config_remove_stage(text)'::regprocedure;
select 'pepsi.config_clear(text)'::regprocedure;
select 'pepsi.settings_set(text, text, text, text)'::regprocedure;
select 'pepsi.settings_delete(text, text, text)'::regprocedure;
select 'pepsi.workqueue_status'::regtype;

rollback;
