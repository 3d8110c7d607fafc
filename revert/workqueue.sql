-- Revert pepsi:workqueue from pg

begin;

drop table pepsi.workqueue;
drop table pepsi.workqueue_body;
drop function pepsi.sender_key_of(text, inet, text, text[]);
drop function pepsi.peer_key_of(inet);
drop function pepsi.domain_of(text);
drop function pepsi.tube_check(text);
drop function pepsi.address_check(text, text);
drop function pepsi.stage_check(text);
drop type pepsi.workqueue_status;

commit;
