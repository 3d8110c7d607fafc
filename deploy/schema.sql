-- Deploy pepsi:schema to pg
-- requires: roles
--
-- Error codes raised by pepsi functions (SQLSTATE class PX). Callers branch
-- on the code, never on the message text. The README repeats this table.
--   PX001  invalid stage name
--   PX002  invalid address (envelope sender or recipient)
--   PX003  invalid argument (caps, array lengths, intervals, filters, JSON)
--   PX004  unknown message id
--   PX005  message is not in the state the call requires (e.g. not running,
--          or running at another stage): no double completion
--   PX006  invalid tube name
--   PX007  invalid failure class
--   PX010  invalid webhook provider definition (name, scheme, secrets,
--          tolerance, id source, signature options, stage or tube)
--   PX011  unknown webhook provider
--   PX012  invalid webhook event (external id, payload, headers)
--   PX013  webhook provider routes its events into the pipeline: not pulled
--   PX020  webhook event already stored: nothing to tombstone or back-fill
--   PX021  invalid external id sequence, or the provider has none
--   PX022  not a back-fill message (no state.backfill, provider, external id)
--   PX023  a back-fill answer that is not the event asked for (its id differs,
--          or it cannot be read), or an HTTP status that is not an answer
--   PX024  unknown anomaly check

begin;

create schema pepsi;

comment on schema pepsi is
    'pepsi stage pipeline: the queue, its functions and views. Access goes through functions; see the roles pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader.';

grant usage on schema pepsi to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;

commit;
