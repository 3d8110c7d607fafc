-- Verify pepsi:webhook_gaps on pg

begin;

select provider, kind, prefix, width, window_size, retry_after, backfill_stage, backfill_tube, max_attempts,
       scan_from, high_water, scanned_event_id, enabled, updated_at
  from pepsi.webhook_id_sequence where false;
select provider, external_id, number, state, first_seen_at, checked_at, attempts, workqueue_id, requested_at,
       resolved_at, detail
  from pepsi.webhook_gaps where false;
select 'pepsi.generate_external_id_sequence(text, bigint, bigint)'::regprocedure;
select 'pepsi.webhook_gaps_find(text, bigint, bigint)'::regprocedure;
select 'pepsi.webhook_gaps_detect(timestamptz)'::regprocedure;
select 'pepsi.webhook_gaps_recheck(timestamptz)'::regprocedure;
select 'pepsi.webhook_id_sequence_set(text, text, text, int, bigint, int, interval, text, text, int, boolean)'::regprocedure;
select 'pepsi.webhook_id_sequence_rewind(text, bigint)'::regprocedure;
select 1 / (pepsi.webhook_external_id_format('prefixed', 'evt_', 4, 42) = 'evt_0042')::int;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.webhook_external_id_format(text, text, int, bigint)'::regprocedure;
select 'pepsi.webhook_external_id_number(text, text, int, text)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.webhook_gaps_pkey'::regclass;
select 'pepsi.webhook_gaps_unresolved_idx'::regclass;
select 'pepsi.webhook_id_sequence_pkey'::regclass;

rollback;
