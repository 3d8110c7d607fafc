-- Deploy pepsi:workqueue_rules to pg
-- requires: commit_linear

begin;

-- The value rules of pepsi.workqueue move from CHECK constraints to row
-- triggers that fire only for the columns a statement writes (issue 19).
-- PostgreSQL builds every CHECK of a table (stringToNode, then the planner's
-- expression pass) at the start of each statement that writes it, and tests
-- each of them on every row version, whatever columns changed. A claim sets
-- status, claimed_at and claim_id, yet paid for all nine: measured with
-- callgrind on a one-row claim, 1.02M instructions with the CHECKs, 0.74M
-- without; on a model table of 128 rows, 4.63M against 2.41M with these
-- triggers (bench/claim-idle-cost). Domains would cost as little, but a
-- domain-typed column breaks every PL/pgSQL RETURN QUERY that returns it as
-- text, some twenty functions here.
--
-- Each rule is one AFTER INSERT OR UPDATE OF <its columns> trigger, named
-- as the CHECK it replaces, its WHEN clause the CHECK's condition negated.
-- UPDATE OF: a statement that does not SET the column does not even
-- prepare the condition. WHEN: a valid row queues no trigger event; only a
-- bad one calls workqueue_rule_refuse, which raises the very error the
-- CHECK raised (23514, same message, constraint and table), at the end of
-- the same statement. NULL passes, as in a CHECK (NOT NULL stays NOT NULL).
-- What a trigger does not cover and a CHECK did: a session with
-- session_replication_role = replica, or ALTER TABLE ... DISABLE TRIGGER,
-- writes unchecked; only the owner can do either, and no pepsi role writes
-- the table other than through pepsi's functions.
-- workqueue_paused_timeout_check stays a CHECK: it reads status, which
-- every claim sets, so a trigger would cost it as much.

create function pepsi.workqueue_rule_refuse()
returns trigger
language plpgsql
set search_path = pg_catalog
as $$
-- The row broke the rule the trigger is named after: refuse it as the
-- CHECK constraint of that name did.
begin
    raise exception 'new row for relation "%" violates check constraint "%"', tg_table_name, tg_name
        using errcode = 'check_violation', constraint = tg_name,
              table = tg_table_name, schema = tg_table_schema;
end
$$;

alter table pepsi.workqueue
    drop constraint workqueue_stage_check,
    drop constraint workqueue_tube_check,
    drop constraint workqueue_state_check,
    drop constraint workqueue_partition_check,
    drop constraint workqueue_owner_slot_check,
    drop constraint workqueue_priority_check,
    drop constraint workqueue_dedupe_key_check,
    drop constraint workqueue_bs_priority_check;

create trigger workqueue_stage_check after insert or update of stage on pepsi.workqueue
    for each row when (not (octet_length(new.stage) <= 63 and new.stage ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_tube_check after insert or update of tube on pepsi.workqueue
    for each row when (not (new.tube ~ '^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]*$' and octet_length(new.tube) <= 200))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_state_check after insert or update of state on pepsi.workqueue
    for each row when (not (jsonb_typeof(new.state) = 'object'))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_partition_check after insert or update of partition on pepsi.workqueue
    for each row when (not (new.partition >= 0))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_owner_slot_check after insert or update of owner_slot on pepsi.workqueue
    for each row when (not (new.owner_slot >= 0))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_priority_check after insert or update of priority on pepsi.workqueue
    for each row when (not (new.priority >= -1000 and new.priority <= 1000))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_dedupe_key_check after insert or update of dedupe_key on pepsi.workqueue
    for each row when (not (octet_length(new.dedupe_key) >= 1 and octet_length(new.dedupe_key) <= 255))
    execute function pepsi.workqueue_rule_refuse();
create trigger workqueue_bs_priority_check after insert or update of bs_priority on pepsi.workqueue
    for each row when (not (new.bs_priority >= 0 and new.bs_priority <= 4294967295))
    execute function pepsi.workqueue_rule_refuse();

comment on function pepsi.workqueue_rule_refuse() is
    'Trigger function of the value rules of pepsi.workqueue (workqueue_stage_check, _tube_, _state_, _partition_, _owner_slot_, _priority_, _dedupe_key_, _bs_priority_check): raises 23514 naming the rule, as the CHECK of that name did. Called only for a row that breaks the rule (the WHEN clause). Internal, granted to no role.';
revoke all on function pepsi.workqueue_rule_refuse() from public;

commit;
