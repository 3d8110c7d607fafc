-- Per-table autovacuum of the queue's two churning tables (issue 19):
-- pepsi.workqueue (two dead row versions per hop) and pepsi.workqueue_body
-- (one per message) vacuum on a row count, not a share of the table, and
-- without a cost delay. The dispatcher's own VACUUM of pepsi.workqueue
-- (VACUUM_DEAD_TUPLES) is runner/tests/e2e/81-vacuum.t.

begin;
select plan(4);

create function pg_temp.opts(p_table regclass) returns text[]
language sql as $$
    select coalesce(array_agg(o order by o), '{}')
      from pg_catalog.pg_class c, unnest(c.reloptions) o
     where c.oid = p_table and o like 'autovacuum_vacuum_%'
$$;

select is(pg_temp.opts('pepsi.workqueue_body'),
          array['autovacuum_vacuum_cost_delay=0', 'autovacuum_vacuum_insert_scale_factor=0',
                'autovacuum_vacuum_insert_threshold=50000', 'autovacuum_vacuum_scale_factor=0',
                'autovacuum_vacuum_threshold=20000'],
          'issue 19: pepsi.workqueue_body vacuums after 20,000 dead rows, whatever its size, unthrottled');
select is(pg_temp.opts('pepsi.workqueue'),
          array['autovacuum_vacuum_cost_delay=0', 'autovacuum_vacuum_insert_scale_factor=0',
                'autovacuum_vacuum_insert_threshold=50000', 'autovacuum_vacuum_scale_factor=0',
                'autovacuum_vacuum_threshold=20000'],
          'issue 19: pepsi.workqueue vacuums after 20,000 dead rows, whatever its size, unthrottled');

-- What the settings mean to autovacuum: the trigger at a table of a
-- million rows is the threshold, not 20 % of the table (200,050 rows).
create function pg_temp.trigger_at(p_table regclass, p_reltuples float8) returns float8
language sql as $$
    select coalesce((select split_part(o, '=', 2)::float8 from pg_class c, unnest(c.reloptions) o
                      where c.oid = p_table and o like 'autovacuum_vacuum_threshold=%'),
                    current_setting('autovacuum_vacuum_threshold')::float8)
         + coalesce((select split_part(o, '=', 2)::float8 from pg_class c, unnest(c.reloptions) o
                      where c.oid = p_table and o like 'autovacuum_vacuum_scale_factor=%'),
                    current_setting('autovacuum_vacuum_scale_factor')::float8) * p_reltuples
$$;
select is(pg_temp.trigger_at('pepsi.workqueue_body', 1e6), 20000::float8,
          'issue 19: at a million bodies autovacuum comes after 20,000 dead rows');
select is(pg_temp.trigger_at('pepsi.workqueue', 1e6), 20000::float8,
          'issue 19: at a million messages autovacuum comes after 20,000 dead rows');

select * from finish();
rollback;
