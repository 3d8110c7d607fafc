-- Revert pepsi:workqueue from pg

begin;

drop function pepsi.workqueue_release_due(timestamptz, int);
drop table pepsi.workqueue;
drop table pepsi.workqueue_body;
drop function pepsi.sender_key_of(text, inet, text, text[]);
drop function pepsi.peer_key_of(inet);
drop function pepsi.domain_of(text);
drop function pepsi.tube_check(text, text);
drop function pepsi.address_check(text, text);
drop function pepsi.stage_check(text, text);
drop function pepsi.reason_clip(text);
drop function pepsi.time_or_null(text);
drop function pepsi.state_flag(jsonb);
drop function pepsi.state_count(jsonb);
drop function pepsi.size_error(text, text, bigint, text);
drop function pepsi.excerpt(text);
drop function pepsi.input_limit(text);
drop function pepsi.input_limits();
drop type pepsi.workqueue_status;

commit;
