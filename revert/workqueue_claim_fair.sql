-- Revert pepsi:workqueue_claim_fair from pg

begin;

drop function pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[],
                                         int[], timestamptz, boolean, int, bigint, float8[], float8[], boolean[], int);
drop function pepsi.workqueue_sender_probe(text, text, text, int, int, text[]);
drop table pepsi.fair_stage;
drop table pepsi.fair_lead;

commit;
