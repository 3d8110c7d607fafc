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
--   PX030  not allowed: the message has no authenticated origin user, or it
--          does not own the address whose settings it would change
--   PX031  not allowed: an operator-only option (runs code, names a URL,
--          carries a credential, routes messages)
--   PX040  topology change refused: the queue holds messages and the
--          partition count, the hash or (outside partition_map_set) the
--          map would change (issue 14, T-09, T-41)
--   PX041  topology missing or damaged (a map without its row, a row
--          without its map, a map of another size, a fingerprint that does
--          not match): nothing is written over it (T-10)
--   PX042  an owner slot whose partitions would change is held by a
--          running runner: stop it first (T-41)
--   PX043  tube not found: no row names it, no pause is in force and it is
--          not default (NOT_FOUND of stats-tube and pause-tube, T-32, T-33)
--   PX044  invalid configuration: an overlay change (config_set,
--          config_unset, config_remove_stage) the runner would refuse: an
--          unknown or typo'd key, a value of the wrong type or range, a
--          stage without PROGRAM, a stage reference to no stage (issue 15)
--   PX050  purge refused: the age is under the 1-hour floor or over 100
--          years (workqueue_purge, issue 16)
--   PX051  invalid history retention: not "0" (off) nor 1 to 366 days
--          (reconcile_configure history_retention, issue 16)

begin;

create schema pepsi;

comment on schema pepsi is
    'pepsi stage pipeline: the queue, its functions and views. Access goes through functions; see the roles pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader.';

grant usage on schema pepsi to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;

-- Advisory locks (issue 13): every lock pepsi takes is named here, once.
create function pepsi.lock_key(p_name text, p_n int default 0, out class_id int, out object_id int)
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The two int4 keys of a pepsi advisory lock, for
-- pg_[try_]advisory_[xact_]lock(class_id, object_id) and for reading
-- pg_locks (classid = class_id, objid = object_id::oid, objsubid = 2).
-- The class is 1885696115 ("peps" as an int4) for every lock; the second
-- key names what is locked:
--   'dispatcher'       p_n = owner slot (0 or more): the session lock of
--                      one dispatcher per slot (D-14); the runner's C side
--                      takes the same lock (DISPATCH_LOCK_CLASS_SQL in
--                      runner/src/lib/conn.h is this class)
--   'reconcile'        -1: one reconciliation pass at a time (W-26)
--   'anomaly_evaluate' -2: one anomaly run at a time (W-41)
--   'anomaly_refresh'  -10 - p_n: the refresh of anomaly view p_n (1..4)
-- Negative keys cannot collide with an owner slot. An unknown name is a
-- programming error (XX000).
begin
    class_id := 1885696115;
    object_id := case p_name when 'dispatcher' then p_n
                             when 'reconcile' then -1
                             when 'anomaly_evaluate' then -2
                             when 'anomaly_refresh' then -10 - p_n end;
    if object_id is null then
        raise exception 'unknown advisory lock "%"', coalesce(p_name, '<null>') using errcode = 'XX000';
    end if;
end
$$;

revoke all on function pepsi.lock_key(text, int) from public;

-- Names (issue 13): the stage-name and tube-name rules, each written once.
-- The predicates hold the rule; the domains carry it for columns; the
-- validators (pepsi.stage_check PX001, pepsi.tube_check PX006, the webhook
-- provider check PX010) and the tables' named CHECK constraints call the
-- predicates, so the error codes and messages users see are unchanged.
-- The runner's one copy is proto_stage_name_valid (runner/src/lib/proto.c).

create function pepsi.stage_name_valid(p_name text)
returns boolean
language sql immutable parallel safe
as $$
-- Whether p_name is a stage name: what follows "stage-" in a
-- [stage-<name>] section, 1 to 63 characters, letters, digits, '_', '.',
-- '-', starting with a letter or digit (ASCII only). NULL for NULL (a
-- CHECK passes it; a validator refuses it first). Webhook provider names
-- follow the same rule. SQL without SET options: inlined where used.
    select p_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'
$$;

create function pepsi.tube_name_valid(p_name text)
returns boolean
language sql immutable parallel safe
as $$
-- Whether p_name is a tube name: beanstalkd's rule, which the tube spec
-- routes by (T-02, T-30): 1 to 200 bytes (pepsi.input_limit('tube')) of
-- letters, digits and - + / ; . $ _ ( ), not starting with '-'; exact
-- bytes, no case folding. NULL for NULL. Inlined where used.
    select octet_length(p_name) <= 200 and p_name ~ '^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]*$'
$$;

create domain pepsi.stage_name as text
    constraint stage_name_check check (pepsi.stage_name_valid(value));
comment on domain pepsi.stage_name is
    'A stage name (pepsi.stage_name_valid): 1 to 63 of A-Za-z0-9_.-, starting with a letter or digit.';

create domain pepsi.tube_name as text
    constraint tube_name_check check (pepsi.tube_name_valid(value));
comment on domain pepsi.tube_name is
    'A tube name (pepsi.tube_name_valid): 1 to 200 bytes of A-Za-z0-9-+/;.$_(), not starting with -.';

revoke all on function pepsi.stage_name_valid(text), pepsi.tube_name_valid(text) from public;

commit;
