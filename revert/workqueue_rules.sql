-- Revert pepsi:workqueue_rules from pg

begin;

drop trigger workqueue_stage_check on pepsi.workqueue;
drop trigger workqueue_tube_check on pepsi.workqueue;
drop trigger workqueue_state_check on pepsi.workqueue;
drop trigger workqueue_partition_check on pepsi.workqueue;
drop trigger workqueue_owner_slot_check on pepsi.workqueue;
drop trigger workqueue_priority_check on pepsi.workqueue;
drop trigger workqueue_dedupe_key_check on pepsi.workqueue;
drop trigger workqueue_bs_priority_check on pepsi.workqueue;
drop function pepsi.workqueue_rule_refuse();

-- NOT VALID then VALIDATE: the scan of the rows takes only a SHARE UPDATE
-- EXCLUSIVE lock.
alter table pepsi.workqueue
    add constraint workqueue_stage_check
        check (octet_length(stage) <= 63 and stage ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$') not valid,
    add constraint workqueue_tube_check
        check (tube ~ '^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]*$' and octet_length(tube) <= 200) not valid,
    add constraint workqueue_state_check check (jsonb_typeof(state) = 'object') not valid,
    add constraint workqueue_partition_check check (partition >= 0) not valid,
    add constraint workqueue_owner_slot_check check (owner_slot >= 0) not valid,
    add constraint workqueue_priority_check check (priority >= -1000 and priority <= 1000) not valid,
    add constraint workqueue_dedupe_key_check
        check (octet_length(dedupe_key) >= 1 and octet_length(dedupe_key) <= 255) not valid,
    add constraint workqueue_bs_priority_check check (bs_priority >= 0 and bs_priority <= 4294967295) not valid;
alter table pepsi.workqueue validate constraint workqueue_stage_check;
alter table pepsi.workqueue validate constraint workqueue_tube_check;
alter table pepsi.workqueue validate constraint workqueue_state_check;
alter table pepsi.workqueue validate constraint workqueue_partition_check;
alter table pepsi.workqueue validate constraint workqueue_owner_slot_check;
alter table pepsi.workqueue validate constraint workqueue_priority_check;
alter table pepsi.workqueue validate constraint workqueue_dedupe_key_check;
alter table pepsi.workqueue validate constraint workqueue_bs_priority_check;

commit;
