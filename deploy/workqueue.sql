-- Deploy pepsi:workqueue to pg
-- requires: schema
--
-- One row per message in flight; a finished message is deleted. The body
-- and header block live in workqueue_body, shared by split siblings.

begin;

create type pepsi.workqueue_status as enum ('pending', 'running', 'paused', 'failed', 'timeout');

-- Input limits (issue 11): the largest value each field of a message may
-- have, in ONE place. Every writer checks against this table, the README
-- repeats it ("Limits"), and a later change reads it with
-- pepsi.input_limit(field). The check constraints of the tables below
-- repeat the stage and tube rules as a backstop.

create function pepsi.input_limits()
returns table (field text, max_value bigint, unit text, sqlstate text, rationale text)
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- One row per limited field: its maximum, the unit (bytes: octets of the
-- UTF-8 text or of the bytes; entries: array elements), the SQLSTATE a
-- value over it gets, and why this number. Values over a limit are
-- refused before anything is written; a reason is the one exception (it
-- is cut, so that a failure can always be recorded).
    select l.field, l.max_value, l.unit, l.sqlstate, l.rationale
      from (values
        ('stage', 63::bigint, 'bytes', 'PX001',
         'a [stage-<name>] section name: 1 to 63 of A-Za-z0-9_.- (stage_check)'),
        ('tube', 200, 'bytes', 'PX006',
         'beanstalkd''s tube-name rule, which the tube spec routes by (T-02, T-30): 1 to 200 bytes of A-Za-z0-9-+/;.$_(), not starting with -'),
        ('subject', 998, 'bytes', 'PX003',
         'RFC 5322 2.1.1: a header line is at most 998 characters; a producer cuts a longer folded Subject (the header block keeps it whole)'),
        ('header_from', 998, 'bytes', 'PX003', 'as subject: one RFC 5322 header line'),
        ('headers', 1048576, 'bytes', 'PX003',
         'the header block: ten times Postfix''s header_size_limit (102400), and the ingress''s largest MAX_HEADER'),
        ('body', 67108864, 'bytes', 'PX003',
         'a safety ceiling, not a policy (an MTA''s message_size_limit or the ingress''s MAX_BODY is the policy): covers the largest mail providers accept (50 MB) after base64, and keeps every worker''s copy and a whole batch far below PostgreSQL''s 1 GB per value'),
        ('state', 1048576, 'bytes', 'PX003',
         'the JSON text of the state object (state::text), also of each state patch a stage writes: metadata, not payload'),
        ('origin_user', 256, 'bytes', 'PX003',
         'a login: an address (254) or webhook:/backfill:<provider> (72) fit; sender_key is indexed and a btree entry must stay under 2704 bytes'),
        ('address', 254, 'bytes', 'PX003',
         'RFC 5321 4.5.3.1.3: a path is at most 256 octets with its angle brackets; envelope sender and each recipient'),
        ('address_local_part', 64, 'bytes', 'PX003', 'RFC 5321 4.5.3.1.1: a local part is at most 64 octets'),
        ('recipients', 1000, 'entries', 'PX003',
         'Postfix''s smtpd_recipient_limit default (RFC 5321 4.5.3.1.8 asks for at least 100); a larger list is several messages'),
        ('batch_messages', 10000, 'entries', 'PX003',
         'messages in one workqueue_inject_batch call: one statement''s work and lock time stay bounded'),
        ('burst_events', 10000, 'entries', 'PX003',
         'events in one webhook_events_ingest call: the ingress''s largest BURST_MAX'),
        ('external_id', 1024, 'bytes', 'PX012',
         'a webhook event''s id (webhook_events.external_id): provider ids are tens of bytes'),
        ('pause_seconds', 31536000, 'seconds', 'PX003',
         'a tube pause (pepsi.tube_pause, beanstalkd pause-tube): a year; beanstalkd allows 2^32-1 s (136 years), a pause that long is a mistake, and tube_pause(tube, 0) ends one at any time'),
        ('reason', 4096, 'bytes', 'cut',
         'a pause or failure reason (state.last_error, pause_reason): longer text is cut to 4096 bytes ending in "...", never refused')
      ) as l(field, max_value, unit, sqlstate, rationale)
$$;

create function pepsi.input_limit(p_field text)
returns bigint
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The maximum of one field of pepsi.input_limits(); an unknown field is a
-- programming error (XX000), never a silent "no limit".
declare
    v_max bigint;
begin
    select l.max_value into v_max from pepsi.input_limits() l where l.field = p_field;
    if v_max is null then
        raise exception 'unknown input limit "%"', coalesce(p_field, '<null>') using errcode = 'XX000';
    end if;
    return v_max;
end
$$;

create function pepsi.excerpt(p_value text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- At most the first 64 characters of p_value, for an error message: an
-- error must never echo a 10 MB argument back into the client and the
-- server log. '<null>' for NULL.
    select case when p_value is null then '<null>'
                when length(p_value) <= 64 then p_value
                else left(p_value, 61) || '...' end
$$;

create function pepsi.size_error(p_where text, p_field text, p_size bigint, p_name text default null)
returns void
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises PX003 when p_size is over the limit of p_field, naming the field
-- (or p_name), its size and the limit: "subject is 204800 bytes; the limit
-- is 998", prefixed with p_where ("message 3: ") when given. NULL sizes
-- pass.
declare
    v_max bigint := pepsi.input_limit(p_field);
    v_entries boolean := p_field in ('recipients', 'batch_messages', 'burst_events');
begin
    if p_size > v_max then
        raise exception '%', format('%s%s %s %s %s; the limit is %s', coalesce(p_where || ': ', ''),
                                    coalesce(p_name, p_field),
                                    case when v_entries then 'has' else 'is' end, p_size,
                                    case when v_entries then 'entries' else 'bytes' end, v_max)
            using errcode = 'PX003';
    end if;
end
$$;

-- Validators shared by every writer. They raise the documented PX codes so
-- that a caller sees which argument is wrong before a constraint fires.

create function pepsi.stage_check(p_stage text, p_where text default null)
returns text
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns p_stage when it is a valid stage name (pepsi.stage_name_valid,
-- the rule of the domain pepsi.stage_name), else raises PX001.
-- A stage name is what follows "stage-" in a [stage-<name>] section:
-- 1 to 63 characters, letters, digits, '_', '.', '-', starting with a
-- letter or digit. p_where prefixes the message ("message 3").
begin
    if p_stage is null or not pepsi.stage_name_valid(p_stage) then
        raise exception '%invalid stage name "%"', coalesce(p_where || ': ', ''), pepsi.excerpt(p_stage)
            using errcode = 'PX001',
                  hint = 'A stage name has 1 to 63 letters, digits, "_", "." or "-" and starts with a letter or digit.';
    end if;
    return p_stage;
end
$$;

create function pepsi.address_check(p_address text, p_what text default 'address')
returns text
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns p_address when it looks like local@domain and fits RFC 5321's
-- lengths (input_limits: address, address_local_part), else raises
-- PX003 (too long; checked first) or PX002 (not an address).
-- Deliberately loose on the shape (RFC 5321 local parts are wild); it
-- catches the mistakes that matter here: no '@', an empty side, spaces,
-- two '@'s outside a quoted local part. p_what names the argument in the
-- message ("envelope sender", "message 3: recipient 2").
begin
    -- The limits fold to constants in the cached plans; size_error (and its
    -- look-up) runs only on the rare value over them.
    if octet_length(p_address) > pepsi.input_limit('address') then
        perform pepsi.size_error(null, 'address', octet_length(p_address), p_what);
    end if;
    if octet_length(p_address) > pepsi.input_limit('address_local_part') and p_address like '%@%'
       and octet_length(regexp_replace(p_address, '@[^@]*$', '')) > pepsi.input_limit('address_local_part') then
        perform pepsi.size_error(null, 'address_local_part',
                                 octet_length(regexp_replace(p_address, '@[^@]*$', '')), p_what || ' local part');
    end if;
    if p_address is null or p_address !~ '^("[^"]*"|[^@\s"]+)@[^@\s]+$' then
        raise exception '% "%" is not an address', p_what, pepsi.excerpt(p_address)
            using errcode = 'PX002', hint = 'Expected local-part@domain.';
    end if;
    return p_address;
end
$$;

create function pepsi.tube_check(p_tube text, p_where text default null)
returns text
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns p_tube when it is a valid tube name (pepsi.tube_name_valid, the
-- rule of the domain pepsi.tube_name), else raises PX006.
-- beanstalkd's rule: 1 to 200 bytes of letters, digits and - + / ; . $ _ ( ),
-- not starting with '-'. Names are exact bytes: no case folding.
-- p_where prefixes the message ("message 3").
begin
    if p_tube is null or not pepsi.tube_name_valid(p_tube) then
        raise exception '%invalid tube name "%"%', coalesce(p_where || ': ', ''), pepsi.excerpt(p_tube),
            case when octet_length(p_tube) > pepsi.input_limit('tube')
                 then format(': %s bytes; the limit is %s', octet_length(p_tube), pepsi.input_limit('tube')) else '' end
            using errcode = 'PX006',
                  hint = 'A tube name has 1 to 200 bytes of letters, digits and - + / ; . $ _ ( ), and does not start with -.';
    end if;
    return p_tube;
end
$$;

-- Readers of the state keys pepsi's own functions act on (strikes,
-- temporary_failures, generated_at: time_or_null, list_copy). A producer chooses the
-- initial state freely, so a value of the wrong type there must read as
-- absent, never as a cast error in a dispatcher or worker call.

create function pepsi.state_count(p_value jsonb)
returns int
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- A count kept in state: a JSON number or string of 1 to 9 digits, else
-- NULL (absent).
    select case when jsonb_typeof(p_value) in ('number', 'string') and (p_value #>> '{}') ~ '^[0-9]{1,9}$'
                then (p_value #>> '{}')::int end
$$;

create function pepsi.state_flag(p_value jsonb)
returns boolean
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- A flag kept in state: true for JSON true or a string PostgreSQL reads as
-- true ("true", "yes", "on", "1", ...), false for anything else.
    select case when jsonb_typeof(p_value) = 'boolean' then p_value = 'true'::jsonb
                when jsonb_typeof(p_value) = 'string'
                then lower(btrim(p_value #>> '{}')) in ('t', 'true', 'y', 'yes', 'on', '1')
                else false end
$$;

create function pepsi.time_or_null(p_text text)
returns timestamptz
language plpgsql stable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- p_text read as timestamptz, or NULL when it is NULL or not a time (a
-- producer's state.generated_at, an event's received_at). Stable, not
-- immutable: a string without an offset is read in the session's TimeZone.
-- The exception block costs a subtransaction without an xid: callers use
-- it on the rare path, or once per call.
begin
    return p_text::timestamptz;
exception when data_exception then
    return null;
end
$$;

create function pepsi.reason_clip(p_reason text)
returns text
language plpgsql immutable parallel safe
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A pause or failure reason cut to input_limit('reason') bytes, ending in
-- "..." when cut: a failure must always be recordable, so a long reason is
-- cut rather than refused. Cut on characters, then (for multi-byte text)
-- on a quarter of them, so the result never splits a character.
declare
    v_max int := pepsi.input_limit('reason');
begin
    if octet_length(p_reason) <= v_max then
        return p_reason;
    elsif octet_length(left(p_reason, v_max - 3)) <= v_max - 3 then
        return left(p_reason, v_max - 3) || '...';
    end if;
    return left(p_reason, (v_max - 3) / 4) || '...';
end
$$;

create function pepsi.domain_of(p_address text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The lower-cased domain of an address ('' when there is none). Domains are
-- case-insensitive (RFC 5321 2.4), so folding here keeps one sender one key.
    select case when strpos(p_address, '@') > 0
                then lower(split_part(p_address, '@', -1))
                else '' end
$$;

create function pepsi.peer_key_of(p_addr inet)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The fairness identity of an SMTP peer (D-45): an IPv4 address as is, an
-- IPv6 address as its /64 network, because one host is routinely given a
-- whole /64. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, as a dual-stack
-- socket reports IPv4 peers) is keyed as the IPv4 address it is; folding it
-- to ::/64 would put every IPv4 peer under one key.
    select case
        when family(p_addr) = 4 then host(p_addr)
        when p_addr <<= inet '::ffff:0:0/96' then host(substr(host(p_addr), 8)::inet)
        else text(network(set_masklen(p_addr, 64)))
    end
$$;

create function pepsi.sender_key_of(p_origin_user text, p_origin_addr inet,
                                    p_envelope_sender text, p_recipients text[])
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The sender a message is charged to by fair scheduling (D-43..D-47).
-- Precedence, first match wins (the spec leaves it open):
--   1. user:<login>     an authenticated origin, whatever envelope it chose (D-44)
--   2. ip:<peer>        an SMTP peer, /64 for IPv6 (D-45). It wins over the
--                       null sender: a remote peer chooses the recipients of
--                       a DSN as freely as its envelope, and D-45 says the
--                       envelope never keys remote mail.
--   3. null:<domain>    a null envelope sender (''), keyed by the domain of
--                       the first recipient (D-47)
--   4. from:<domain>    a message pepsi generated itself: the envelope
--                       sender's domain (D-46); 'from:' when there is none
    select case
        when nullif(p_origin_user, '') is not null then 'user:' || p_origin_user
        when p_origin_addr is not null then 'ip:' || pepsi.peer_key_of(p_origin_addr)
        when p_envelope_sender = '' then 'null:' || coalesce(pepsi.domain_of(p_recipients[1]), '')
        else 'from:' || coalesce(pepsi.domain_of(p_envelope_sender), '')
    end
$$;

create table pepsi.workqueue_body (
    body_id     bigint generated always as identity
                constraint workqueue_body_pkey primary key,
    headers     text,
    body        bytea,
    created_at  timestamptz not null default now()
);

comment on table pepsi.workqueue_body is
    'Header block and body of a message, shared by its split siblings; deleted with the last record that refers to it.';

-- The stage and tube CHECKs below write the rules of pepsi.stage_name_valid
-- and pepsi.tube_name_valid out, on purpose (issue 13): a SQL function in a
-- CHECK is inlined, i.e. its body parsed, each time a statement writes the
-- table, and this table is written by every claim and every hop (measured:
-- +40k instructions per UPDATE, +10 % for a one-row update; callgrind).
-- pgtap/48 checks that both copies accept and refuse the same names.
create table pepsi.workqueue (
    workqueue_id    bigint generated always as identity
                    constraint workqueue_pkey primary key,
    tube            text not null default 'default'
                    constraint workqueue_tube_check
                    check (tube ~ '^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]*$' and octet_length(tube) <= 200),
    stage           text not null
                    constraint workqueue_stage_check
                    check (stage ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    status          pepsi.workqueue_status not null default 'pending',
    origin_user     text,
    origin_addr     inet,
    envelope_sender text,
    recipients      text[] not null default '{}',
    sender_key      text not null generated always as
                    (pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients)) stored,
    header_from     text,
    subject         text,
    state           jsonb not null default '{}'
                    constraint workqueue_state_check check (jsonb_typeof(state) = 'object'),
    body_id         bigint
                    constraint workqueue_body_id_fkey references pepsi.workqueue_body (body_id),
    arrived_at      timestamptz not null default now(),
    claimed_at      timestamptz,
    claim_id        bigint,
    timeout         timestamptz,
    webhook_event_id bigint,
    partition       int not null default 0
                    constraint workqueue_partition_check check (partition >= 0),
    owner_slot      int not null default 0
                    constraint workqueue_owner_slot_check check (owner_slot >= 0),
    constraint workqueue_paused_timeout_check
        check (status <> 'paused' or timeout is not null)
);

comment on table pepsi.workqueue is
    'One row per message in flight; deleted when done. Written only through pepsi functions.';
comment on column pepsi.workqueue.envelope_sender is
    'NULL: none (a message pepsi generated without one); empty string: the null sender <>.';
comment on column pepsi.workqueue.sender_key is
    'Generated: who fair scheduling charges (user:, ip:, null:, from:); see pepsi.sender_key_of.';
comment on column pepsi.workqueue.claimed_at is
    'When the dispatcher last set the row running; pepsi.stuck reads it.';
comment on column pepsi.workqueue.claim_id is
    'The dispatcher''s id of the claim that last set the row running (pepsi.claim_incarnation): a claim whose answer was lost is given back by it (pepsi.workqueue_unclaim).';
comment on column pepsi.workqueue.partition is
    'The partition of the row''s tube (issue 14, T-01): pepsi.tube_partition(tube, partition_count) of the stored topology, 0 without one; set by pepsi.workqueue_create. The owner slot of partition_map serves it; claims and the dispatcher''s running-row operations see only their slot''s partitions.';
comment on column pepsi.workqueue.owner_slot is
    'The owner slot serving the row (issue 14): partition_map[partition] of the stored topology, 0 without one; set by pepsi.workqueue_create and rewritten for the partitions that move by topology_set and partition_map_set (which run only while the affected slots'' runners are stopped, PX042). The claims'' and sweeps'' indexes lead with it, so that a slot''s claim never reads another slot''s rows.';
comment on column pepsi.workqueue.timeout is
    'When a paused row is due to be retried.';
comment on column pepsi.workqueue.webhook_event_id is
    'The webhook event (pepsi.webhook_events) this message delivers: set by the functions that make a message from an event (webhook_events_ingest, hence the back-fill; reconcile''s re-injection), carried by workqueue_split; NULL for every other message. The link the finish trigger, workqueue_delete''s tombstone, reconciliation and the anomaly views follow (issue 13); state.webhook_event is its copy for stage programs. No foreign key: a message whose event is gone is an anomaly to report (message_without_event), and the ingest must not lock event rows for it.';

-- The plain claim's index (D-41) and the fair claim's (D-59). Partial, so
-- they hold only what can be claimed. Both lead with (stage, owner_slot)
-- (issue 14: a runner claims only its slot's rows): the plain claim reads
-- one ordered range per stage, oldest first, and the fair claim's sender
-- window walks only its slot's senders, so a claim costs its caps (and
-- window), never another slot's backlog nor the number of partitions.
create index workqueue_pending_idx on pepsi.workqueue (stage, owner_slot, workqueue_id)
    where status = 'pending';
create index workqueue_pending_sender_idx on pepsi.workqueue (stage, owner_slot, sender_key, workqueue_id)
    where status = 'pending';
-- The paused sweep: a slot's due rows and its earliest remaining timeout
-- (D-93, issue 14).
create index workqueue_paused_idx on pepsi.workqueue (owner_slot, timeout)
    where status = 'paused';
-- The link to a webhook event (issue 13): reconciliation and the anomaly
-- views read the linked rows only, through this index. Partial: most
-- messages carry no event, and a row without one costs the index nothing.
create index workqueue_webhook_event_idx on pepsi.workqueue (webhook_event_id)
    where webhook_event_id is not null;
-- Body deletion looks for the remaining references of a body.
create index workqueue_body_id_idx on pepsi.workqueue (body_id)
    where body_id is not null;

-- Every hop rewrites status and stage, which are indexed: no HOT update,
-- about two dead row versions per hop. Measured here (DESIGN.md), default
-- autovacuum let the heap grow 4-7x in 3 minutes and throughput swing; a
-- row-count threshold with no cost delay held it steady. Dead index entries
-- are what slow the claim, so vacuum early and without throttling.
alter table pepsi.workqueue set (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 20000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_vacuum_cost_delay = 0,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 50000
);

-- The claim scans "oldest pending rows of stage $1" with the stage as a
-- parameter (a LATERAL over the stage array), so the planner estimates
-- rows per stage as reltuples / n_distinct. After ANALYZE of a backlog that
-- sits in one stage, n_distinct is 1: the planner then expects every row
-- to match and walks the primary key with a filter, which for an empty
-- stage reads the whole table (measured here: 503 ms instead of 0.4 ms at
-- 1M rows). Pinning n_distinct high keeps the per-stage estimate small and
-- the scan on workqueue_pending_idx; pgtap/05-claim-plan.sql checks the
-- plan and its buffers at 1M rows.
alter table pepsi.workqueue alter column stage set (n_distinct = 1000);

create function pepsi.workqueue_release_due(p_now timestamptz, p_owner_slot int default 0)
returns int
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Releases due paused rows (D-93): every paused row of owner slot
-- p_owner_slot (a runner's slot, issue 14; 0 by default, every row
-- without a topology) whose timeout is at or before p_now becomes
-- pending, its timeout cleared. Returns how many.
-- The one statement that does it (issue 13), for the paused sweep
-- (workqueue_release_paused) and the claims' p_release_paused; an index
-- range scan on workqueue_paused_idx (owner_slot, timeout) that reads
-- this slot's due rows only and finds nothing when none is due. The
-- caller checks p_now and p_owner_slot. Tables: workqueue (update).
declare
    v_n int;
begin
    update pepsi.workqueue w set status = 'pending', timeout = null
     where w.status = 'paused' and w.owner_slot = p_owner_slot and w.timeout <= p_now;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

-- Helpers run inside pepsi's security-definer functions, as the owner;
-- nobody else calls them (PostgreSQL grants EXECUTE to PUBLIC by default).
revoke all on function pepsi.input_limits(), pepsi.input_limit(text), pepsi.excerpt(text),
                       pepsi.size_error(text, text, bigint, text), pepsi.stage_check(text, text),
                       pepsi.address_check(text, text), pepsi.tube_check(text, text), pepsi.state_count(jsonb),
                       pepsi.state_flag(jsonb), pepsi.time_or_null(text), pepsi.reason_clip(text),
                       pepsi.domain_of(text), pepsi.peer_key_of(inet),
                       pepsi.sender_key_of(text, inet, text, text[]), pepsi.workqueue_release_due(timestamptz, int)
    from public;

grant select on pepsi.workqueue, pepsi.workqueue_body to pepsi_worker;

commit;
