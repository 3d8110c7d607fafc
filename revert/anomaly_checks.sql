-- Revert pepsi:anomaly_checks from pg

begin;

drop function pepsi.anomaly_check_set(text, jsonb);
drop function pepsi.anomaly_run(timestamptz, boolean);
drop function pepsi.anomaly_evaluate(text, timestamptz);
drop function pepsi.anomaly_refresh(text);
drop table pepsi.anomaly_signal;
drop table pepsi.anomaly_state;
drop table pepsi.anomaly_check;
drop function pepsi.anomaly_delta(text, text, interval, timestamptz);
drop function pepsi.anomaly_sample_take(timestamptz);
drop function pepsi.dispatcher_slots();
drop table pepsi.anomaly_sample;
drop materialized view pepsi.anomaly_gap_mv;
drop materialized view pepsi.anomaly_orphan_mv;
drop materialized view pepsi.anomaly_queue_mv;
drop materialized view pepsi.anomaly_event_mv;
drop function pepsi.ingress_stats_flush(text, jsonb, timestamptz);
drop table pepsi.ingress_stats;
drop index pepsi.webhook_events_received_at_brin;

commit;
