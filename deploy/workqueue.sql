-- Deploy pepsi:workqueue to pg
-- requires: schema
--
-- One row per message in flight; a finished message is deleted. The body
-- and header block live in workqueue_body, shared by split siblings.

begin;

create type pepsi.workqueue_status as enum ('pending', 'running', 'paused', 'failed', 'timeout');

-- Validators shared by every writer. They raise the documented PX codes so
-- that a caller sees which argument is wrong before a constraint fires.

create function pepsi.stage_check(p_stage text)
returns text
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Returns p_stage when it is a valid stage name, else raises PX001.
-- A stage name is what follows "stage-" in a [stage-<name>] section:
-- 1 to 63 characters, letters, digits, '_', '.', '-', starting with a
-- letter or digit.
begin
    if p_stage is null or p_stage !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' then
        raise exception 'invalid stage name "%"', coalesce(p_stage, '<null>')
            using errcode = 'PX001',
                  hint = 'A stage name has 1 to 63 letters, digits, "_", "." or "-" and starts with a letter or digit.';
    end if;
    return p_stage;
end
$$;

create function pepsi.address_check(p_address text, p_what text default 'address')
returns text
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Returns p_address when it looks like local@domain, else raises PX002.
-- Deliberately loose (RFC 5321 local parts are wild); it catches the
-- mistakes that matter here: no '@', an empty side, spaces, two '@'s
-- outside a quoted local part. p_what names the argument in the message.
begin
    if p_address is null
       or p_address !~ '^("[^"]*"|[^@\s"]+)@[^@\s]+$'
       or length(p_address) > 320 then
        raise exception 'invalid % "%"', p_what, coalesce(p_address, '<null>')
            using errcode = 'PX002', hint = 'Expected local-part@domain.';
    end if;
    return p_address;
end
$$;

create function pepsi.tube_check(p_tube text)
returns text
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Returns p_tube when it is a valid tube name, else raises PX006.
-- beanstalkd's rule: 1 to 200 bytes of letters, digits and - + / ; . $ _ ( ),
-- not starting with '-'. Names are exact bytes: no case folding.
begin
    if p_tube is null or octet_length(p_tube) > 200
       or p_tube !~ '^[A-Za-z0-9+/;.$_()][A-Za-z0-9+/;.$_()-]*$' then
        raise exception 'invalid tube name "%"', coalesce(p_tube, '<null>')
            using errcode = 'PX006';
    end if;
    return p_tube;
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
    timeout         timestamptz,
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
comment on column pepsi.workqueue.timeout is
    'When a paused row is due to be retried.';

-- The plain claim's index (D-41) and the fair claim's (D-59). Partial, so
-- they hold only what can be claimed.
create index workqueue_pending_idx on pepsi.workqueue (stage, workqueue_id)
    where status = 'pending';
create index workqueue_pending_sender_idx on pepsi.workqueue (stage, sender_key, workqueue_id)
    where status = 'pending';
-- The paused sweep: due rows and the earliest remaining timeout (D-93).
create index workqueue_paused_idx on pepsi.workqueue (timeout)
    where status = 'paused';
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

grant select on pepsi.workqueue, pepsi.workqueue_body to pepsi_worker;

commit;
