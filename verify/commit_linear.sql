-- Verify pepsi:commit_linear on pg

begin;

-- the state machine matches ops to rows without a nested loop, and no JIT
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure
   and proconfig @> array['enable_nestloop=off', 'jit=off'];

-- state_count is inlinable: no SET options (found by name: verify/workqueue.sql
-- holds its verify line, which pgtap/46 deletes to see it missed)
select 1 / count(*) from pg_catalog.pg_proc
 where pronamespace = 'pepsi'::regnamespace and proname = 'state_count' and proconfig is null;

-- stage_check only for a refused name
select 1 / count(*) from pg_catalog.pg_proc
 where oid = 'pepsi.workqueue_transition(pepsi.transition[], int, timestamptz)'::regprocedure
   and prosrc like '%not coalesce(pepsi.stage_name_valid(o.next), false)%';

rollback;
