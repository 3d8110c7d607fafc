-- Revert pepsi:control_signal from pg

begin;

drop function pepsi.control_signal_versions();
drop function pepsi.control_signal_send(text);
drop table pepsi.control_signal;

commit;
