-- Verify pepsi:workqueue_rules on pg

begin;

-- the eight rules are triggers, each on its own column, none a CHECK
select 1 / (count(*) = 8)::int from pg_catalog.pg_trigger t
 where t.tgrelid = 'pepsi.workqueue'::regclass and t.tgqual is not null and array_length(t.tgattr, 1) = 1
   and t.tgfoid = 'pepsi.workqueue_rule_refuse()'::regprocedure;
select 1 / (count(*) = 0)::int from pg_catalog.pg_constraint c
 where c.conrelid = 'pepsi.workqueue'::regclass and c.contype = 'c'
   and c.conname <> 'workqueue_paused_timeout_check';

-- and a row that breaks one is refused, on insert and on update
do $$
begin
    begin
        insert into pepsi.workqueue (stage) values ('bad name!');
        raise exception 'verify workqueue_rules: a bad stage name was inserted';
    exception when check_violation then null;
    end;
    begin
        update pepsi.workqueue set priority = 1001 where workqueue_id = (select min(workqueue_id) from pepsi.workqueue);
        if found then
            raise exception 'verify workqueue_rules: a priority of 1001 was stored';
        end if;
    exception when check_violation then null;
    end;
end
$$;

rollback;
