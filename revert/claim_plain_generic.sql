-- Revert pepsi:claim_plain_generic from pg
--
-- The plain claim planned at every call again (PostgreSQL's default
-- plan_cache_mode), hash and merge joins as the session has them.

begin;

alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    reset plan_cache_mode;
alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    reset enable_hashjoin;
alter function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int)
    reset enable_mergejoin;

commit;
