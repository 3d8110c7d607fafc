-- Deploy pepsi:stage_name_fast to pg
-- requires: schema
-- requires: workqueue

begin;

-- The stage-name rule without a bounded repetition (issue 19): PostgreSQL's
-- regex engine runs '[...]{0,62}' as 62 optional copies of the class, which
-- cost ~10 us a test against ~0.6 us for '[...]*' plus a length test
-- (measured: one million names, 10.5 s against 1.25 s). The CHECK on
-- pepsi.workqueue.stage runs for every row version a claim or a hop writes,
-- and the domain pepsi.stage_name for every stage argument of a call. The
-- rule is the same: 1 to 63 ASCII letters, digits, _ . -, starting with a
-- letter or digit (ASCII only, so 63 bytes are 63 characters); pgtap/48
-- checks the copies still agree, pgtap/02 the edges.

create or replace function pepsi.stage_name_valid(p_name text)
returns boolean
language sql immutable parallel safe
as $$
-- Whether p_name is a stage name: what follows "stage-" in a
-- [stage-<name>] section, 1 to 63 characters, letters, digits, '_', '.',
-- '-', starting with a letter or digit (ASCII only). NULL for NULL (a
-- CHECK passes it; a validator refuses it first). Webhook provider names
-- follow the same rule. SQL without SET options: inlined where used. A
-- bounded repetition instead of the length test costs 15 times more.
    select octet_length(p_name) <= 63 and p_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'
$$;

-- Swapped in one transaction: NOT VALID then VALIDATE, so the scan of the
-- existing rows takes only a SHARE UPDATE EXCLUSIVE lock.
alter table pepsi.workqueue drop constraint workqueue_stage_check;
alter table pepsi.workqueue add constraint workqueue_stage_check
    check (octet_length(stage) <= 63 and stage ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$') not valid;
alter table pepsi.workqueue validate constraint workqueue_stage_check;

commit;
