-- Verify pepsi:beanstalk on pg

begin;

-- the column, its rule and the indexes (a missing one raises); the rule is
-- a CHECK until workqueue_rules makes it a trigger of the same name
select bs_priority from pepsi.workqueue where false;
select bs_priority from pepsi.messages where false;
select 1 / ((select count(*) from pg_catalog.pg_constraint where conname = 'workqueue_bs_priority_check')
          + (select count(*) from pg_catalog.pg_trigger
              where tgrelid = 'pepsi.workqueue'::regclass and tgname = 'workqueue_bs_priority_check'))::int;
select 'pepsi.workqueue_bs_ready_idx'::regclass;
select 'pepsi.workqueue_bs_delayed_idx'::regclass;
select 'pepsi.workqueue_bs_buried_idx'::regclass;
select 'pepsi.workqueue_bs_ttr_idx'::regclass;
select 'pepsi.workqueue_bs_reserved_idx'::regclass;
select 'pepsi.beanstalk_frontend_pkey'::regclass;
select 'pepsi.beanstalk_session_pkey'::regclass;
select 'pepsi.beanstalk_session_frontend_idx'::regclass;
select 'pepsi.beanstalk_ref_pkey'::regclass;
select 'pepsi.beanstalk_ref_use_key'::regclass;
select 'pepsi.beanstalk_ref_tube_idx'::regclass;
select frontend_id, name, started_at, backend_pid from pepsi.beanstalk_frontend where false;
select session_id, frontend_id, opened_at from pepsi.beanstalk_session where false;
select session_id, kind, tube from pepsi.beanstalk_ref where false;

-- every function, by its exact signature
select 'pepsi.beanstalk_stage()'::regprocedure;
select 'pepsi.beanstalk_lock_class()'::regprocedure;
select 'pepsi.beanstalk_frontend_alive(bigint)'::regprocedure;
select 'pepsi.beanstalk_count(jsonb, text, jsonb)'::regprocedure;
select 'pepsi.beanstalk_reap()'::regprocedure;
select 'pepsi.beanstalk_frontend_start(text)'::regprocedure;
select 'pepsi.beanstalk_session_open(bigint)'::regprocedure;
select 'pepsi.beanstalk_session_lock(bigint, bigint)'::regprocedure;
select 'pepsi.beanstalk_requeue(bigint[], text, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_session_close(bigint, bigint)'::regprocedure;
select 'pepsi.beanstalk_use(bigint, bigint, text)'::regprocedure;
select 'pepsi.beanstalk_watch(bigint, bigint, text)'::regprocedure;
select 'pepsi.beanstalk_ignore(bigint, bigint, text)'::regprocedure;
select 'pepsi.beanstalk_put(text, bigint, bigint, bigint, bytea)'::regprocedure;
select 'pepsi.beanstalk_take(bigint, bigint, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_reserve(bigint, text[], timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_reserve_job(bigint, bigint, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_delete(bigint, bigint)'::regprocedure;
select 'pepsi.beanstalk_release(bigint, bigint, bigint, bigint)'::regprocedure;
select 'pepsi.beanstalk_bury(bigint, bigint, bigint)'::regprocedure;
select 'pepsi.beanstalk_touch(bigint, bigint, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_peek(bigint)'::regprocedure;
select 'pepsi.beanstalk_peek_state(text, text)'::regprocedure;
select 'pepsi.beanstalk_kick(text, bigint)'::regprocedure;
select 'pepsi.beanstalk_kick_job(bigint)'::regprocedure;
select 'pepsi.beanstalk_stats_job(bigint, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_stats_tube(text, timestamp with time zone)'::regprocedure;
select 'pepsi.beanstalk_list_tubes()'::regprocedure;
select 'pepsi.beanstalk_stats(timestamp with time zone)'::regprocedure;

-- granted to the runner
select 1 / (pg_catalog.has_function_privilege('pepsi_runner', 'pepsi.beanstalk_reserve(bigint, text[], timestamp with time zone)', 'execute'))::int;
-- the replaced functions: their definitions know the references and the
-- beanstalk stage (a catalogue query on prosrc, not on a comment)
select 1 / count(*)::int from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'pepsi' and p.proname = 'tube_stats' and p.prosrc like '%pepsi.beanstalk_ref r%';
select 1 / count(*)::int from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'pepsi' and p.proname = 'tube_pause' and p.prosrc like '%pepsi.beanstalk_ref r%';
select 1 / count(*)::int from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'pepsi' and p.proname = 'workqueue_reset_running' and p.prosrc like '%w.stage <> ''beanstalk''%';
select 1 / count(*)::int from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'pepsi' and p.proname = 'reconcile_stuck' and p.prosrc like '%w.stage <> ''beanstalk''%';
select 1 / count(*)::int from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'pepsi' and p.proname = 'workqueue_release_due' and p.prosrc like '%pepsi_beanstalk%';
select 1 / count(*)::int from pg_catalog.pg_views v
 where v.schemaname = 'pepsi' and v.viewname = 'tubes' and v.definition like '%beanstalk_ref%';
select 1 / (count(*) = 4)::int from pepsi.anomaly_check
 where metric like '%q.stage <> ''beanstalk''%';

rollback;
