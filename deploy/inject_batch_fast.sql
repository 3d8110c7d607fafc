-- Deploy pepsi:inject_batch_fast to pg
-- requires: workqueue
-- requires: comments
-- requires: workqueue_enqueue_options
-- requires: shard_topology
--
-- Producer throughput (issue 19 follow-up): workqueue_inject_batch of
-- 1,000 one-line messages spent about 93 us a message in the database
-- (auto_explain), of which ~22 us went to workqueue_item_check, called
-- from PL/pgSQL once per element, and ~20 us to the generated column
-- workqueue.sender_key. Same behaviour, less work:
--   - pepsi.workqueue_batch_valid: one statement decides whether every
--     element of a batch surely passes workqueue_item_check and
--     enqueue_options_check. Only when it cannot say so does the batch
--     run the per-element loop it always ran, which raises the very error
--     (SQLSTATE, message naming the element) for the first bad element.
--     It may refuse a batch the loop accepts (the loop then passes and
--     the batch is written as before), never the reverse.
--   - pepsi.sender_key_of and the two functions it calls, domain_of and
--     peer_key_of, lose their SET search_path: a SQL function with a SET
--     clause is never inlined, so the generated column called three SQL
--     functions, each with its own executor and GUC save and restore, for
--     every row written. Without it the planner inlines them (like
--     pepsi.stage_name_valid, deploy/stage_name_fast.sql) and the keys are
--     computed as one expression. The bodies are the same expressions,
--     their built-in functions qualified with pg_catalog (operators
--     resolve in pg_catalog first, which is searched before any schema
--     unless a search_path names it later). Rows already stored keep
--     their keys; pgtap/69 compares old and new on varied inputs.
--   - pepsi.workqueue_insert (as deploy/shard_topology.sql has it) looks
--     its two sequences up once per call: nextval(pg_get_serial_sequence(
--     ...)) looked the name up again for every row and body (~2.5 us each).
-- workqueue_inject (one message) is not changed.

begin;

create or replace function pepsi.domain_of(p_address text)
returns text
language sql immutable parallel safe
as $$
-- The lower-cased domain of an address ('' when there is none). Domains are
-- case-insensitive (RFC 5321 2.4), so folding here keeps one sender one key.
-- SQL without SET options: inlined where used (issue 19).
    select case when pg_catalog.strpos(p_address, '@') > 0
                then pg_catalog.lower(pg_catalog.split_part(p_address, '@', -1))
                else '' end
$$;

create or replace function pepsi.peer_key_of(p_addr inet)
returns text
language sql immutable parallel safe
as $$
-- The fairness identity of an SMTP peer (D-45): an IPv4 address as is, an
-- IPv6 address as its /64 network, because one host is routinely given a
-- whole /64. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, as a dual-stack
-- socket reports IPv4 peers) is keyed as the IPv4 address it is; folding it
-- to ::/64 would put every IPv4 peer under one key.
-- SQL without SET options: inlined where used (issue 19).
    select case
        when pg_catalog.family(p_addr) = 4 then pg_catalog.host(p_addr)
        when p_addr <<= inet '::ffff:0:0/96'
        then pg_catalog.host(pg_catalog.substr(pg_catalog.host(p_addr), 8)::inet)
        else pg_catalog.text(pg_catalog.network(pg_catalog.set_masklen(p_addr, 64)))
    end
$$;

create or replace function pepsi.sender_key_of(p_origin_user text, p_origin_addr inet,
                                               p_envelope_sender text, p_recipients text[])
returns text
language sql immutable parallel safe
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
-- The expression of the generated column workqueue.sender_key, computed
-- for every row written: SQL without SET options, so that it and the two
-- functions it calls are inlined (issue 19: a third of a batch inject's
-- cost when they were not).
    select case
        when nullif(p_origin_user, '') is not null then 'user:' || p_origin_user
        when p_origin_addr is not null then 'ip:' || pepsi.peer_key_of(p_origin_addr)
        when p_envelope_sender = '' then 'null:' || coalesce(pepsi.domain_of(p_recipients[1]), '')
        else 'from:' || coalesce(pepsi.domain_of(p_envelope_sender), '')
    end
$$;

-- workqueue_insert as deploy/shard_topology.sql has it, the sequences
-- looked up once per call.
create or replace function pepsi.workqueue_insert(p_items pepsi.workqueue_item[], p_body_ids bigint[],
                                                  p_priorities int[], p_run_at timestamptz[], p_dedupe_keys text[])
returns setof bigint
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The one statement that creates message rows (issue 13; issue 16 adds
-- the enqueue options): writes p_items, in one statement, and returns one
-- id per item in input order: the new row's, or NULL for an item whose
-- dedupe key a live row holds (nothing is written for it; the caller,
-- workqueue_enqueue, looks that row up).
-- Per item n: p_priorities[n] (NULL: 0), p_run_at[n] (after now(): the row
-- is paused with timeout = run_at, released by the paused sweep; else
-- pending), p_dedupe_keys[n] (NULL: none; ON CONFLICT DO NOTHING against
-- workqueue_dedupe_key_idx, which also waits for a concurrent insert of
-- the key and skips the item when that commits). NULL arrays: defaults.
-- Body sharing: with p_body_ids NULL, an item with a body or a header
-- block gets a workqueue_body row of its own, written only when its
-- message row was (a skipped item leaves no orphan body); with
-- p_body_ids, item n shares the existing body p_body_ids[n] (NULL: none).
-- Ids and body ids are drawn before the insert, so that each item knows
-- its row and body without matching rows back by position; the two
-- sequences are looked up once per call, not once per row (issue 19:
-- pg_get_serial_sequence cost ~2.5 us a call).
-- Each row gets its tube's partition and that partition's owner slot, the
-- map read under a ROW SHARE lock of partition_map (see the comment of
-- workqueue_create before issue 16: a row is never written with a slot
-- read from a map a concurrent change has just replaced).
-- On a shard (issue 18), a tube whose partition another shard owns is
-- refused (PX072) before anything is written: its row would be served
-- by this shard's runners while the router sends the tube elsewhere.
-- Nothing else is checked here: the caller has checked every item. No NOTIFY.
-- Tables: workqueue_body, workqueue (insert); topology, partition_map,
-- shard_self, shard_map (read).
declare
    v_count int;
    v_foreign record;
    v_body_seq regclass := pg_get_serial_sequence('pepsi.workqueue_body', 'body_id')::regclass;
    v_id_seq regclass := pg_get_serial_sequence('pepsi.workqueue', 'workqueue_id')::regclass;
begin
    lock table pepsi.partition_map in row share mode;
    v_count := (select t.partition_count from pepsi.topology t);
    if exists (select 1 from pepsi.shard_self) then
        select d.tube, m.shard, s.shard as self into v_foreign
          from (select distinct i.tube from unnest(p_items) i) d
               join pepsi.shard_map m on m.partition = pepsi.tube_partition(d.tube, v_count)
               cross join pepsi.shard_self s
         where m.shard <> s.shard
         limit 1;
        if found then
            raise exception 'tube "%" belongs to shard %, not to this shard (%): inject through the router',
                  left(v_foreign.tube, 64), v_foreign.shard, v_foreign.self using errcode = 'PX072';
        end if;
    end if;
    return query
    with src as materialized (
        select i.*,
               case when p_body_ids is not null then p_body_ids[i.ord]
                    when i.body is not null or i.headers is not null
                    then nextval(v_body_seq) end as body_id,
               nextval(v_id_seq) as id,
               coalesce(p_priorities[i.ord], 0)::smallint as priority,
               p_run_at[i.ord] > now() as delayed,
               p_run_at[i.ord] as run_at,
               p_dedupe_keys[i.ord] as dedupe_key
          from unnest(p_items) with ordinality as i(stage, tube, body, headers, envelope_sender, recipients,
                                                    origin_user, origin_addr, state, subject, header_from,
                                                    arrived_at, webhook_event_id, ord)
    ), parts as (
        select p.tube, p.partition, coalesce(m.owner_slot, 0) as owner_slot
          from (select d.tube, case when v_count is null then 0
                                    else pepsi.tube_partition(d.tube, v_count) end as partition
                  from (select distinct s.tube from src s) d) p
               left join pepsi.partition_map m on m.partition = p.partition
    ), ins as (
        insert into pepsi.workqueue (workqueue_id, tube, stage, origin_user, origin_addr, envelope_sender,
                                     recipients, header_from, subject, state, body_id, arrived_at,
                                     webhook_event_id, partition, owner_slot, priority, status, timeout,
                                     dedupe_key)
        overriding system value
        select s.id, s.tube, s.stage, s.origin_user, s.origin_addr, s.envelope_sender, s.recipients,
               s.header_from, s.subject, s.state, s.body_id, s.arrived_at, s.webhook_event_id, p.partition,
               p.owner_slot, s.priority,
               case when s.delayed then 'paused' else 'pending' end::pepsi.workqueue_status,
               case when s.delayed then s.run_at end, s.dedupe_key
          from src s join parts p on p.tube = s.tube
         order by s.ord
        on conflict (dedupe_key) where dedupe_key is not null do nothing
        returning workqueue.workqueue_id
    ), bodies as (
        insert into pepsi.workqueue_body (body_id, headers, body)
        overriding system value
        select s.body_id, s.headers, s.body
          from src s join ins on ins.workqueue_id = s.id
         where s.body_id is not null and p_body_ids is null
    )
    select ins.workqueue_id
      from src s left join ins on ins.workqueue_id = s.id
     order by s.ord;
end
$$;

create function pepsi.workqueue_batch_valid(p_items pepsi.workqueue_item[], p_run_at timestamptz[],
                                            p_priorities int[], p_dedupe_keys text[])
returns boolean
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Whether every item n of a batch surely passes
-- workqueue_item_check(p_items[n]) and enqueue_options_check(p_run_at[n],
-- p_priorities[n], p_dedupe_keys[n]), decided by one statement over all
-- of them (issue 19): the checks' rules written as predicates, the
-- limits folded to constants in the cached plan. NULL option arrays: no
-- options. False when some item may fail; the caller then runs the
-- per-item checks, which raise the exact error for the first bad item
-- (or pass: false is allowed to be cautious, true never is). An
-- address passes when address_check would return it: not NULL, at most
-- input_limit('address') bytes, a local part of at most
-- input_limit('address_local_part'), and local@domain.
-- Tables: none.
begin
    return not exists (
        select 1
          from unnest(p_items) i
         where not coalesce(
                   coalesce(octet_length(i.subject) <= pepsi.input_limit('subject'), true)
               and coalesce(octet_length(i.header_from) <= pepsi.input_limit('header_from'), true)
               and coalesce(octet_length(i.headers) <= pepsi.input_limit('headers'), true)
               and coalesce(octet_length(i.body) <= pepsi.input_limit('body'), true)
               and coalesce(octet_length(i.origin_user) <= pepsi.input_limit('origin_user'), true)
               and coalesce(cardinality(i.recipients) <= pepsi.input_limit('recipients'), true)
               and pepsi.stage_name_valid(i.stage)
               and pepsi.tube_name_valid(i.tube)
               and jsonb_typeof(i.state) = 'object'
               and octet_length(i.state::text) <= pepsi.input_limit('state')
               and i.arrived_at is not null, false)
        union all
        select 1
          from unnest(p_items) i
               cross join lateral unnest(case when i.envelope_sender <> '' then array[i.envelope_sender]
                                              else '{}'::text[] end || i.recipients) a(address)
         where not coalesce(
                   octet_length(a.address) <= pepsi.input_limit('address')
               and (octet_length(a.address) <= pepsi.input_limit('address_local_part')
                    or octet_length(regexp_replace(a.address, '@[^@]*$', ''))
                       <= pepsi.input_limit('address_local_part'))
               and a.address ~ '^("[^"]*"|[^@\s"]+)@[^@\s]+$', false)
        union all
        select 1
          from unnest(p_run_at, p_priorities, p_dedupe_keys) o(run_at, priority, dedupe_key)
         where not coalesce(
                   coalesce(o.priority between -1000 and 1000, true)
               and coalesce(isfinite(o.run_at)
                            and o.run_at <= now() + make_interval(secs => pepsi.input_limit('pause_seconds')),
                            true)
               and coalesce(octet_length(o.dedupe_key) between 1 and 255, true), false));
end
$$;

create or replace function pepsi.workqueue_inject_batch(p_messages jsonb)
returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Queues many messages in one call and one NOTIFY; returns their ids in
-- input order. p_messages is a JSON array of at most
-- input_limit('batch_messages') objects with the keys of
-- workqueue_inject without the p_ prefix: stage (required), body (text,
-- stored as UTF-8) or body_base64 (any bytes), headers, envelope_sender,
-- recipients (array of addresses), origin_user, origin_addr, state
-- (object), tube, subject, header_from, and the enqueue options (issue
-- 16) run_at (a time), priority (a number or a string of an integer),
-- dedupe_key; each a string or null but recipients, state and priority.
-- Arrival is now(). Validation is workqueue_inject's
-- (workqueue_item_check, enqueue_options_check), on every element, and
-- the first bad element rejects the whole batch (nothing is queued);
-- errors name it ("message 3: ..."). Raises PX003 also for a batch that
-- is not such an array, an origin_addr that is not an IP address, a
-- body_base64 that is not base64 and a run_at that is not a time; PX052
-- a priority that is not an integer in -1000..1000. An element whose
-- dedupe_key a live message (or an earlier element) holds gets that
-- message's id.
-- The checks run on all elements in one statement
-- (workqueue_batch_valid, issue 19); only a batch it cannot pass runs
-- them element by element, which names the first bad one.
-- Tables: workqueue_body, workqueue (insert; read for dedupe keys).
declare
    v_bad bigint;
    v_items pepsi.workqueue_item[];
    v_item pepsi.workqueue_item;
    v_pri int[];
    v_run timestamptz[];
    v_key text[];
    v_n int := 0;
begin
    if p_messages is null or jsonb_typeof(p_messages) <> 'array' then
        raise exception 'messages must be a JSON array' using errcode = 'PX003';
    end if;
    if jsonb_array_length(p_messages) > pepsi.input_limit('batch_messages') then
        perform pepsi.size_error(null, 'batch_messages', jsonb_array_length(p_messages), 'the batch');
    end if;

    select e.ord into v_bad
      from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
     where jsonb_typeof(e.m) <> 'object'
        or (e.m ? 'state' and jsonb_typeof(e.m->'state') <> 'object')
        or (e.m ? 'recipients' and jsonb_typeof(e.m->'recipients') <> 'array')
        or exists (select 1 from jsonb_each(case when jsonb_typeof(e.m) = 'object' then e.m else '{}' end) k
                    where k.key not in ('stage', 'body', 'body_base64', 'headers', 'envelope_sender',
                                        'recipients', 'origin_user', 'origin_addr', 'state', 'tube',
                                        'subject', 'header_from', 'run_at', 'priority', 'dedupe_key')
                       or (k.key not in ('recipients', 'state', 'priority')
                           and jsonb_typeof(k.value) not in ('string', 'null'))
                       or (k.key = 'priority' and jsonb_typeof(k.value) not in ('number', 'string', 'null')))
     order by e.ord
     limit 1;
    if found then
        raise exception 'message % of the batch is malformed', v_bad
            using errcode = 'PX003',
                  detail = 'Each element must be an object with known keys whose values are strings or null; state an object; recipients an array; priority a number.';
    end if;

    begin
        v_items := array(
            select row(e.m->>'stage', coalesce(e.m->>'tube', 'default'),
                       case when e.m->>'body_base64' is not null then decode(e.m->>'body_base64', 'base64')
                            else convert_to(e.m->>'body', 'UTF8') end,
                       e.m->>'headers', e.m->>'envelope_sender',
                       array(select jsonb_array_elements_text(coalesce(e.m->'recipients', '[]'))),
                       e.m->>'origin_user', (e.m->>'origin_addr')::inet, coalesce(e.m->'state', '{}'),
                       e.m->>'subject', e.m->>'header_from', now(), null)::pepsi.workqueue_item
              from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
             order by e.ord);
        -- the options only when some element has one: a plain batch pays
        -- one scan of its keys
        if exists (select 1 from jsonb_array_elements(p_messages) e(m)
                    where e.m ?| array['run_at', 'priority', 'dedupe_key']) then
            select array_agg((e.m->>'run_at')::timestamptz order by e.ord),
                   array_agg((e.m->>'priority')::int order by e.ord),
                   array_agg(e.m->>'dedupe_key' order by e.ord)
              into v_run, v_pri, v_key
              from jsonb_array_elements(p_messages) with ordinality as e(m, ord);
        end if;
    exception when data_exception then
        perform pepsi.workqueue_batch_casts(p_messages);
        raise;
    end;
    if not pepsi.workqueue_batch_valid(v_items, v_run, v_pri, v_key) then
        foreach v_item in array v_items loop
            v_n := v_n + 1;
            perform pepsi.workqueue_item_check(v_item, 'message ' || v_n);
            if v_key is not null then
                perform pepsi.enqueue_options_check(v_run[v_n], v_pri[v_n], v_key[v_n], 'message ' || v_n);
            end if;
        end loop;
    end if;

    if v_key is null then
        return query select c from pepsi.workqueue_create(v_items) c;
    else
        return query select c from pepsi.workqueue_enqueue(v_items, v_pri, v_run, v_key) c;
    end if;
    notify workqueue;
end
$$;

comment on function pepsi.workqueue_batch_valid(pepsi.workqueue_item[], timestamptz[], int[], text[]) is
    'Internal (workqueue_inject_batch), issue 19: true when every item surely passes workqueue_item_check and enqueue_options_check, decided in one statement; false when one may not (the caller then checks item by item, naming the first bad one). Writes nothing.';

revoke all on function pepsi.workqueue_batch_valid(pepsi.workqueue_item[], timestamptz[], int[], text[]) from public;

commit;
