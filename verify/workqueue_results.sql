-- Verify pepsi:workqueue_results on pg

begin;

select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int)', 'execute');
-- the hop rule (issue 12): a hop within MAX_HOPS advances, the one past it fails as a loop
select 1 / ((pepsi.workqueue_hop('{"hops": 1}', null, 'a', null, 'b', 'pending', 2)).o_stage = 'b')::int;
select 1 / ((pepsi.workqueue_hop('{"hops": 2}', null, 'a', null, 'b', 'pending', 2)).o_state->>'failure_class' = 'loop')::int;
select 1 / (pepsi.failure_class_check('loop') = 'loop')::int;
select 1 / pepsi.workqueue_hop_check('{a,b}', 1000)::int;
select 1 / pepsi.workqueue_hop_refuse('{a}', 5)::int;
select 1 / (pepsi.workqueue_hop_slow('{}', null, 'a', null, 'b', 0, 1)->>'hops' = '1')::int;
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_finish(bigint, text)', 'execute');
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb)', 'execute');
select pg_catalog.has_function_privilege('pepsi_worker', 'pepsi.workqueue_fail(bigint, text, text, text, jsonb)', 'execute');
-- the one state machine (issue 13)
select 'pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure;
select 'pepsi.transition_of(bigint, text, text, text, text, text[], jsonb, timestamptz, text, text, text, interval, text, bigint)'::regprocedure;
select 1 / (cardinality(array(select pepsi.workqueue_transition('{}'))) = 0)::int;
select 'pepsi.transition_paused_state(jsonb, jsonb, text)'::regprocedure;
select 'pepsi.transition_failed_state(jsonb, jsonb, text, text, text)'::regprocedure;
select 1 / (pepsi.transition_paused_state('{}', null, 'x')->>'pause_reason' = 'x')::int;
select 1 / (pepsi.transition_failed_state('{}', null, null, 'a', null)->>'failure_class' = 'permanent')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.failure_class_check(text)'::regprocedure;
select 'pepsi.state_patch_check(jsonb)'::regprocedure;
select 'pepsi.workqueue_hop(jsonb, jsonb, text, text[], text, pepsi.workqueue_status, int)'::regprocedure;
select 'pepsi.workqueue_hop_check(text[], int)'::regprocedure;
select 'pepsi.workqueue_hop_refuse(text[], int)'::regprocedure;
select 'pepsi.workqueue_hop_slow(jsonb, jsonb, text, text[], text, int, int)'::regprocedure;
select 'pepsi.workqueue_refuse(bigint, text)'::regprocedure;

rollback;
