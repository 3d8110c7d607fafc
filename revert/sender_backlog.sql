-- Revert pepsi:sender_backlog from pg

begin;

drop view pepsi.sender_backlog;

commit;
