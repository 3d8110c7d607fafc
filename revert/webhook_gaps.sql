-- Revert pepsi:webhook_gaps from pg

begin;

drop function pepsi.webhook_gaps_detect(timestamptz);
drop function pepsi.webhook_gaps_recheck(timestamptz);
drop function pepsi.webhook_gaps_find(text, bigint, bigint);
drop function pepsi.generate_external_id_sequence(text, bigint, bigint);
drop function pepsi.webhook_id_sequence_rewind(text, bigint);
drop function pepsi.webhook_id_sequence_set(text, text, text, int, bigint, int, interval, text, text, int, boolean);
drop function pepsi.webhook_external_id_number(text, text, int, text);
drop function pepsi.webhook_external_id_format(text, text, int, bigint);
drop table pepsi.webhook_gaps;
drop table pepsi.webhook_id_sequence;

commit;
