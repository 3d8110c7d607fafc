-- Revert pepsi:stage_name_fast from pg

begin;

create or replace function pepsi.stage_name_valid(p_name text)
returns boolean
language sql immutable parallel safe
as $$
-- Whether p_name is a stage name: what follows "stage-" in a
-- [stage-<name>] section, 1 to 63 characters, letters, digits, '_', '.',
-- '-', starting with a letter or digit (ASCII only). NULL for NULL (a
-- CHECK passes it; a validator refuses it first). Webhook provider names
-- follow the same rule. SQL without SET options: inlined where used.
    select p_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'
$$;

alter table pepsi.workqueue drop constraint workqueue_stage_check;
alter table pepsi.workqueue add constraint workqueue_stage_check
    check (stage ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$') not valid;
alter table pepsi.workqueue validate constraint workqueue_stage_check;

commit;
