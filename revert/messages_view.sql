-- Revert pepsi:messages_view from pg

begin;

drop view pepsi.messages;

commit;
