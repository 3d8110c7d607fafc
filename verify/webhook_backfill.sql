-- Verify pepsi:webhook_backfill on pg

begin;

select 'pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz)'::regprocedure;
select 'pepsi.webhook_backfill_request(text, text, timestamptz)'::regprocedure;
select 'pepsi.webhook_backfill_due(timestamptz, int)'::regprocedure;
select 'pepsi.webhook_backfill_check_id(text, text, bytea)'::regprocedure;
select 1 / pg_catalog.has_function_privilege('pepsi_worker',
           'pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz)', 'execute')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.webhook_backfill_inject(text, text, text, text, timestamptz)'::regprocedure;

rollback;
