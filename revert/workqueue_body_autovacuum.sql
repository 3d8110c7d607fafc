-- Revert pepsi:workqueue_body_autovacuum from pg

begin;

alter table pepsi.workqueue_body reset (
    autovacuum_vacuum_scale_factor,
    autovacuum_vacuum_threshold,
    autovacuum_vacuum_insert_scale_factor,
    autovacuum_vacuum_insert_threshold,
    autovacuum_vacuum_cost_delay
);

commit;
