-- Verify pepsi:workqueue_body_autovacuum on pg

begin;

-- Fails (division by zero) unless every setting is there.
select 1 / (count(*) = 5)::int
  from pg_catalog.pg_class c, unnest(c.reloptions) o
 where c.oid = 'pepsi.workqueue_body'::regclass
   and o in ('autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=20000',
             'autovacuum_vacuum_insert_scale_factor=0', 'autovacuum_vacuum_insert_threshold=50000',
             'autovacuum_vacuum_cost_delay=0');

rollback;
