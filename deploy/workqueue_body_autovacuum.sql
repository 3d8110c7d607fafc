-- Deploy pepsi:workqueue_body_autovacuum to pg
-- requires: workqueue

begin;

-- Every message inserts its body and deletes it when its last record
-- finishes: one dead row per message, all of them at the head of the
-- table (issue 19). The default trigger, 20 % of the table plus 50 rows,
-- is either a vacuum every few hundred messages while the queue is short
-- or none until hundreds of thousands of dead rows once a backlog has
-- grown the table; the cost delay then spreads that vacuum over minutes.
-- As pepsi.workqueue has since issue 5 (deploy/workqueue.sql): a row-count
-- trigger and no throttling. autovacuum_naptime (1 min by default) is
-- server-wide and still bounds how soon autovacuum comes; the dispatcher
-- vacuums pepsi.workqueue itself between (VACUUM_DEAD_TUPLES).
alter table pepsi.workqueue_body set (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 20000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_vacuum_cost_delay = 0
);

commit;
