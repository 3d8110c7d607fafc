-- Verify pepsi:webhook_tombstones on pg

begin;

select provider, external_id, reason, source, created_at from pepsi.webhook_tombstones where false;
select 'pepsi.webhook_tombstone_add(text, text, text, timestamptz)'::regprocedure;
select 'pepsi.webhook_tombstone_remove(text, text)'::regprocedure;

-- issue 13: every index of the change, by name.
select 'pepsi.webhook_tombstones_pkey'::regclass;

rollback;
