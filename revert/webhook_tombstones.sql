-- Revert pepsi:webhook_tombstones from pg

begin;

drop function pepsi.webhook_tombstone_remove(text, text);
drop function pepsi.webhook_tombstone_add(text, text, text, timestamptz);
drop table pepsi.webhook_tombstones;

commit;
