-- Verify pepsi:stats on pg

begin;

select stage, owner_slot, stages_executed, runs, run_usec, succeeded, failed,
       tempfailed, strikes, requeued, updated_at
  from pepsi.stage_stats where false;
select owner_slot, claims, claimed, wakeups, notifications, workers_started,
       workers_exited, bodies_collected, updated_at
  from pepsi.dispatch_stats where false;
select pg_catalog.has_function_privilege('pepsi.stats_flush(int, jsonb, jsonb, timestamptz)', 'execute');
select owner_slot, stage, served, in_file, program, refs, published_at from pepsi.stage_served where false;
select 'pepsi.stage_served_publish(int, jsonb)'::regprocedure;
select 'pepsi.stage_served_live()'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.dispatch_stats_pkey'::regclass;
select 'pepsi.stage_stats_pkey'::regclass;
select 'pepsi.stage_served_pkey'::regclass;

rollback;
