-- Revert pepsi:workqueue_results from pg

begin;

drop function pepsi.workqueue_fail(bigint, text, text, text, jsonb);
drop function pepsi.failure_class_check(text);
drop function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb);
drop function pepsi.workqueue_finish(bigint, text);
drop function pepsi.workqueue_advance(bigint, text, text, jsonb, text[], int);
drop function pepsi.workqueue_transition(pepsi.transition[], int, timestamptz);
drop function pepsi.transition_of(bigint, text, text, text, text, text[], jsonb, timestamptz, text, text,
                                  text, interval, text, bigint);
drop type pepsi.transition;
drop function pepsi.transition_failed_state(jsonb, jsonb, text, text, text);
drop function pepsi.transition_paused_state(jsonb, jsonb, text);
drop function pepsi.workqueue_hop(jsonb, jsonb, text, text[], text, pepsi.workqueue_status, int);
drop function pepsi.workqueue_hop_slow(jsonb, jsonb, text, text[], text, int, int);
drop function pepsi.workqueue_hop_check(text[], int);
drop function pepsi.workqueue_hop_refuse(text[], int);
drop function pepsi.workqueue_refuse(bigint, text);
drop function pepsi.state_patch_check(jsonb);

commit;
