-- Revert pepsi:workqueue_claim from pg

begin;

drop function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int);
drop function pepsi.claim_incarnation();
drop sequence pepsi.claim_incarnation_seq;

commit;
