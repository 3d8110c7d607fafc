-- Verify pepsi:sender_backlog on pg

begin;

select stage, sender_key, waiting, oldest_age, oldest_workqueue_id from pepsi.sender_backlog where false;
select 1 / pg_catalog.has_table_privilege('pepsi_reader', 'pepsi.sender_backlog', 'select')::int;

rollback;
