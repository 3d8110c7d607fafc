-- Revert pepsi:webhook_backfill from pg

begin;

drop function pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz);
drop function pepsi.webhook_backfill_check_id(text, text, bytea);
drop function pepsi.webhook_backfill_due(timestamptz, int);
drop function pepsi.webhook_backfill_request(text, text, timestamptz);
drop function pepsi.webhook_backfill_inject(text, text, text, text, timestamptz);

commit;
