-- Deploy pepsi:workqueue_enqueue_options to pg
-- requires: workqueue_inject
-- requires: workqueue_claim
-- requires: workqueue_claim_fair
-- requires: messages_view
-- requires: schema_api
--
-- Enqueue options (issue 16), what users of Graphile Worker (run_at,
-- priority, job_key), pg-boss (startAfter, priority, singletonKey) and
-- beanstalkd (put's delay and pri) expect of a put:
--   run_at      a delay: the message is not claimed before that time. A
--               delayed message is stored paused with timeout = run_at,
--               the very rows workqueue_defer and a worker's pause make
--               (D-92, D-93): the paused sweep releases it, the
--               dispatcher's paused timer wakes for it, and nothing new
--               is scanned by a claim.
--   priority    within a stage (and owner slot), a lower value is claimed
--               first, then by id (FIFO): workqueue.priority, the second
--               key of both claim indexes after (stage, owner_slot).
--   dedupe_key  insert once while live: while a row with that key is in
--               the workqueue (pending, running, paused, failed or timed
--               out), an inject returns that row's id and writes nothing;
--               once it has finished (its row is deleted) the key is free
--               again. A unique partial index and ON CONFLICT DO NOTHING.
-- New error codes:
--   PX052  priority outside -1000..1000
--   PX053  run_at not a finite time, or more than a year ahead
--          (input_limit('pause_seconds'))
--   PX054  dedupe_key empty or longer than 255 bytes
-- The schema API level becomes 2 (oldest stays 1): programs built for 1
-- keep running; a program built for 2 may pass the new parameters.

begin;

alter table pepsi.workqueue
    add column priority smallint not null default 0
        constraint workqueue_priority_check check (priority between -1000 and 1000),
    add column dedupe_key text
        constraint workqueue_dedupe_key_check check (octet_length(dedupe_key) between 1 and 255);

comment on column pepsi.workqueue.priority is
    'Within a stage and owner slot, a lower value is claimed first, then by workqueue_id (issue 16): -1000..1000, default 0. Every claim honours it: workqueue_claim, the fair claim''s per-sender order and FIFO share (workqueue_sender_probe).';
comment on column pepsi.workqueue.dedupe_key is
    'Insert-once key (issue 16): while a row with this key is in the workqueue, an inject with the same key returns that row''s id and writes nothing; the key is free again once the row is gone. NULL: none.';

-- The claim indexes gain priority after (stage, owner_slot): the plain
-- claim reads one ordered range (priority, workqueue_id) per stage and the
-- fair claim each sender's rows in (priority, workqueue_id) order, both
-- stopping after cap entries: no sort of a stage's backlog.
drop index pepsi.workqueue_pending_idx;
drop index pepsi.workqueue_pending_sender_idx;
create index workqueue_pending_idx on pepsi.workqueue (stage, owner_slot, priority, workqueue_id)
    where status = 'pending';
create index workqueue_pending_sender_idx on pepsi.workqueue (stage, owner_slot, sender_key, priority, workqueue_id)
    where status = 'pending';
-- One live row per key: the inject's ON CONFLICT arbiter.
create unique index workqueue_dedupe_key_idx on pepsi.workqueue (dedupe_key)
    where dedupe_key is not null;

create function pepsi.enqueue_options_check(p_run_at timestamptz, p_priority int, p_dedupe_key text,
                                            p_where text default null)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises the first problem of a message's enqueue options (issue 16);
-- p_where names the message in a batch ("message 3: ..."). NULLs pass:
-- run_at NULL is now, priority NULL is 0, dedupe_key NULL is none.
--   PX052  priority outside -1000..1000
--   PX053  run_at infinite, or more than input_limit('pause_seconds') (a
--          year) after now()
--   PX054  dedupe_key of 0 or more than 255 bytes
declare
    v_pre text := coalesce(p_where || ': ', '');
begin
    if p_priority not between -1000 and 1000 then
        raise exception '%priority % is outside -1000..1000', v_pre, p_priority
            using errcode = 'PX052', hint = 'A lower priority is claimed first; the default is 0.';
    end if;
    if not isfinite(p_run_at)
       or p_run_at > now() + make_interval(secs => pepsi.input_limit('pause_seconds')) then
        raise exception '%run_at % is more than a year ahead or not a time', v_pre, p_run_at
            using errcode = 'PX053';
    end if;
    if octet_length(p_dedupe_key) not between 1 and 255 then
        raise exception '%dedupe_key is % bytes; it must have 1 to 255', v_pre, octet_length(p_dedupe_key)
            using errcode = 'PX054';
    end if;
end
$$;

create function pepsi.workqueue_insert(p_items pepsi.workqueue_item[], p_body_ids bigint[],
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
-- its row and body without matching rows back by position.
-- Each row gets its tube's partition and that partition's owner slot, the
-- map read under a ROW SHARE lock of partition_map (see the comment of
-- workqueue_create before issue 16: a row is never written with a slot
-- read from a map a concurrent change has just replaced).
-- Nothing is checked here: the caller has checked every item. No NOTIFY.
-- Tables: workqueue_body, workqueue (insert); topology, partition_map (read).
declare
    v_count int;
begin
    lock table pepsi.partition_map in row share mode;
    v_count := (select t.partition_count from pepsi.topology t);
    return query
    with src as materialized (
        select i.*,
               case when p_body_ids is not null then p_body_ids[i.ord]
                    when i.body is not null or i.headers is not null
                    then nextval(pg_get_serial_sequence('pepsi.workqueue_body', 'body_id')) end as body_id,
               nextval(pg_get_serial_sequence('pepsi.workqueue', 'workqueue_id')) as id,
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

create or replace function pepsi.workqueue_create(p_items pepsi.workqueue_item[], p_body_ids bigint[] default null)
returns setof bigint
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Writes the messages p_items, pending at their stage, and returns their
-- new ids in input order (issue 13: inject's, split's, the webhook
-- ingest's and reconciliation's re-inject), with the item's
-- webhook_event_id; with p_body_ids, item n shares the body p_body_ids[n].
-- Since issue 16 a thin wrapper over pepsi.workqueue_insert (the one
-- statement that creates rows) without enqueue options: priority 0, no
-- delay, no dedupe key. No check, no NOTIFY: the caller's.
-- Tables: workqueue_body, workqueue (insert); topology, partition_map (read).
begin
    return query select c from pepsi.workqueue_insert(p_items, p_body_ids, null, null, null) c;
end
$$;

create function pepsi.workqueue_enqueue(p_items pepsi.workqueue_item[], p_priorities int[],
                                        p_run_at timestamptz[], p_dedupe_keys text[])
returns setof bigint
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Writes p_items with their enqueue options (workqueue_insert) and
-- returns one id per item in input order: the new row's, or for an item
-- whose dedupe key a live row holds, that row's (issue 16). Two items of
-- one call with the same key get the first one's row.
-- Concurrency: ON CONFLICT waits for a concurrent insert of the same key
-- and skips the item once it commits; the look-up that follows runs in a
-- new statement, so in READ COMMITTED it sees that row. If the row has
-- finished meanwhile (deleted), the item is inserted again; after 10
-- rounds (or at once in REPEATABLE READ / SERIALIZABLE, whose snapshot
-- cannot see the winner) it raises 40001 serialization_failure: retry
-- the transaction. Nothing is checked here: the caller has checked.
-- Tables: workqueue_body, workqueue (insert, read).
declare
    v_ids bigint[];
    v_id bigint;
    v_n int;
begin
    v_ids := array(select c from pepsi.workqueue_insert(p_items, null, p_priorities, p_run_at, p_dedupe_keys) c);
    for v_n in 1 .. coalesce(cardinality(v_ids), 0) loop
        continue when v_ids[v_n] is not null;
        v_id := null;
        for v_round in 1 .. 10 loop
            select w.workqueue_id into v_id from pepsi.workqueue w where w.dedupe_key = p_dedupe_keys[v_n];
            exit when v_id is not null;
            exit when current_setting('transaction_isolation') <> 'read committed';
            select c into v_id
              from pepsi.workqueue_insert(p_items[v_n:v_n], null, p_priorities[v_n:v_n],
                                          p_run_at[v_n:v_n], p_dedupe_keys[v_n:v_n]) c;
            exit when v_id is not null;
        end loop;
        if v_id is null then
            raise exception 'dedupe_key "%": its row came and went while this inject waited',
                pepsi.excerpt(p_dedupe_keys[v_n])
                using errcode = '40001', hint = 'Retry the transaction.';
        end if;
        v_ids[v_n] := v_id;
    end loop;
    return query select u from unnest(v_ids) u;
end
$$;

-- workqueue_inject gains three optional parameters at the end: a new
-- signature, so the old one goes (two overloads would make every call
-- that names fewer parameters ambiguous).
drop function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz);

create function pepsi.workqueue_inject(
    p_stage           text,
    p_body            bytea default null,
    p_headers         text default null,
    p_envelope_sender text default null,
    p_recipients      text[] default '{}',
    p_origin_user     text default null,
    p_origin_addr     inet default null,
    p_state           jsonb default '{}',
    p_tube            text default 'default',
    p_subject         text default null,
    p_header_from     text default null,
    p_arrived_at      timestamptz default now(),
    p_run_at          timestamptz default null,
    p_priority        int default 0,
    p_dedupe_key      text default null)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Queues one message at p_stage and wakes the dispatcher (D-30, D-33).
-- Parameters: the message's stage, body and header block (stored once in
-- workqueue_body when either is given), envelope sender (NULL: none, '':
-- the null sender), recipients (each an address; NULL: none), origin user
-- and peer address, initial state (a JSON object), tube, Subject
-- and From, arrival time (not NULL); and the enqueue options (issue 16):
--   p_run_at      not claimed before this time (NULL or a past time: now;
--                 at most a year ahead). A delayed message waits paused
--                 with timeout = p_run_at and the paused sweep releases
--                 it; a connected dispatcher claims it within about a
--                 second (its tick) of p_run_at.
--   p_priority    -1000..1000, default 0: within a stage, lower first,
--                 then by id. int, not smallint, so that p_priority => -1
--                 resolves without a cast; stored as smallint.
--   p_dedupe_key  1..255 bytes: while a message with this key is in the
--                 workqueue (not finished, not deleted), returns that
--                 message's id and writes nothing.
-- Every field is checked before anything is written
-- (workqueue_item_check, enqueue_options_check): PX001 stage, PX002
-- address, PX003 a limit or a bad argument, PX006 tube, PX052 priority,
-- PX053 run_at, PX054 dedupe key.
-- Returns the message's workqueue_id. NOTIFY workqueue with an empty
-- payload: the notification is only a wake-up, and PostgreSQL folds
-- identical notifications of one transaction into one.
-- Tables: workqueue_body, workqueue (insert; read for a dedupe key).
declare
    v_item pepsi.workqueue_item := row(p_stage, p_tube, p_body, p_headers, p_envelope_sender,
                                       coalesce(p_recipients, '{}'), p_origin_user, p_origin_addr, p_state,
                                       p_subject, p_header_from, p_arrived_at, null)::pepsi.workqueue_item;
    v_id bigint;
begin
    perform pepsi.workqueue_item_check(v_item);
    perform pepsi.enqueue_options_check(p_run_at, p_priority, p_dedupe_key);
    if p_run_at is null and coalesce(p_priority, 0) = 0 and p_dedupe_key is null then
        select c into v_id from pepsi.workqueue_create(array[v_item]) c;
    else
        select c into v_id
          from pepsi.workqueue_enqueue(array[v_item], array[p_priority], array[p_run_at], array[p_dedupe_key]) c;
    end if;
    notify workqueue;
    return v_id;
end
$$;

create or replace function pepsi.workqueue_batch_casts(p_messages jsonb)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The slow path of workqueue_inject_batch, run only after a cast failed:
-- finds the first element whose origin_addr is not an IP address, whose
-- body_base64 is not base64, whose run_at is not a time or whose priority
-- is not an integer (issue 16), and raises PX003 naming it. Returns when
-- it finds none (the caller then re-raises the original error).
declare
    v record;
begin
    for v in select e.ord, e.m from jsonb_array_elements(p_messages) with ordinality as e(m, ord) order by e.ord loop
        if v.m->>'origin_addr' is not null then
            begin
                perform (v.m->>'origin_addr')::inet;
            exception when data_exception then
                raise exception 'message %: origin_addr "%" is not an IP address', v.ord,
                    pepsi.excerpt(v.m->>'origin_addr')
                    using errcode = 'PX003';
            end;
        end if;
        if v.m->>'body_base64' is not null then
            begin
                perform decode(v.m->>'body_base64', 'base64');
            exception when data_exception then
                raise exception 'message %: body_base64 is not base64: %', v.ord, sqlerrm using errcode = 'PX003';
            end;
        end if;
        if v.m->>'run_at' is not null then
            begin
                perform (v.m->>'run_at')::timestamptz;
            exception when data_exception then
                raise exception 'message %: run_at "%" is not a time', v.ord, pepsi.excerpt(v.m->>'run_at')
                    using errcode = 'PX003';
            end;
        end if;
        if v.m->>'priority' is not null then
            begin
                perform (v.m->>'priority')::int;
            exception when data_exception then
                raise exception 'message %: priority "%" is not an integer', v.ord, pepsi.excerpt(v.m->>'priority')
                    using errcode = 'PX052';
            end;
        end if;
    end loop;
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
    foreach v_item in array v_items loop
        v_n := v_n + 1;
        perform pepsi.workqueue_item_check(v_item, 'message ' || v_n);
        if v_key is not null then
            perform pepsi.enqueue_options_check(v_run[v_n], v_pri[v_n], v_key[v_n], 'message ' || v_n);
        end if;
    end loop;

    if v_key is null then
        return query select c from pepsi.workqueue_create(v_items) c;
    else
        return query select c from pepsi.workqueue_enqueue(v_items, v_pri, v_run, v_key) c;
    end if;
    notify workqueue;
end
$$;

revoke all on function pepsi.enqueue_options_check(timestamptz, int, text, text) from public;
revoke all on function pepsi.workqueue_insert(pepsi.workqueue_item[], bigint[], int[], timestamptz[], text[]) from public;
revoke all on function pepsi.workqueue_enqueue(pepsi.workqueue_item[], int[], timestamptz[], text[]) from public;
revoke all on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text,
                                              timestamptz, timestamptz, int, text) from public;
grant execute on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text,
                                                 timestamptz, timestamptz, int, text)
    to pepsi_ingress, pepsi_worker;

-- The claims honour priority (issue 16).

create or replace function pepsi.workqueue_claim(p_stages text[], p_caps int[], p_now timestamptz default now(),
                                      p_release_paused boolean default false, p_claim_id bigint default null,
                                      p_owner_slot int default 0)
returns table (workqueue_id bigint, stage text, sender_key text)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The plain oldest-first claim (D-38, D-41): for every stage in p_stages,
-- up to the matching p_caps entry of its pending rows, lowest priority
-- first and oldest first within a priority (issue 16), become
-- running, all in one UPDATE ... RETURNING. Returns the claimed rows.
-- p_owner_slot (issue 14): only rows of that owner slot, the caller's
-- (workqueue.owner_slot; 0 by default: every row without a topology, and
-- slot 0's with one). One dispatcher per slot calls this, serially (D-39,
-- D-40), and the slots' rows are disjoint, so no two claims compete for a
-- row: it needs no FOR UPDATE SKIP LOCKED. Each stage's scan is a LATERAL
-- subquery whose ORDER BY priority, workqueue_id LIMIT cap stops in the
-- partial index workqueue_pending_idx (stage, owner_slot, priority,
-- workqueue_id) after cap
-- rows, however deep the backlog, this slot's or another's, and however
-- many partitions the slot owns: a claim costs its caps plus one index
-- probe per stage.
-- With p_release_paused, due paused rows of the slot first become pending
-- (D-93), so that the dispatcher's POLL_INTERVAL heartbeat is one round
-- trip that is also the paused sweep; the probe is an index range scan on
-- workqueue_paused_idx (owner_slot, timeout) that finds nothing when
-- nothing is due.
-- p_claim_id is stored with each row: pepsi.workqueue_unclaim gives back
-- the rows of a claim whose answer was lost. p_now is claimed_at and the
-- paused rows' clock: the dispatcher leaves it to the database, so that
-- one clock decides (issue 12); tests move it.
-- NULL stage and cap arrays claim nothing. Raises PX003 when the arrays differ in
-- length, a cap is NULL or < 0, a stage is NULL or listed twice, or p_now
-- or p_owner_slot is NULL.
-- A paused tube's rows (pepsi.tube_pause, issue 14) are skipped until
-- p_now reaches the pause's end; with p_release_paused expired pauses are
-- swept (pepsi.tube_pause_current). The check is a sub-select on the
-- row's id behind "v_paused is null", so that with no tube paused the
-- scan stays index-only and pays nothing; while one is, each row scanned
-- costs a primary-key probe (the scan steps over the paused tube's rows).
-- A paused stage (pepsi.workqueue_pause_stage, issue 16) is claimed
-- as if its cap were 0.
-- Tables: workqueue (update); tube_pause (read; delete with
-- p_release_paused); stage_pause (read).
#variable_conflict use_column
declare
    v_paused text[]; -- tubes paused at p_now (issue 14), NULL when none
begin
    if cardinality(p_stages) is distinct from cardinality(p_caps) then
        raise exception 'stages and caps differ in length (% and %)',
            coalesce(cardinality(p_stages)::text, '<null>'), coalesce(cardinality(p_caps)::text, '<null>')
            using errcode = 'PX003';
    end if;
    if exists (select 1 from unnest(p_caps) c where c is null or c < 0) then
        raise exception 'caps must be zero or more' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    if array_position(p_stages, null) is not null then
        raise exception 'a stage is NULL' using errcode = 'PX003';
    end if;
    if cardinality(p_stages) > 1
       and (select count(distinct s) from unnest(p_stages) s) <> cardinality(p_stages) then
        raise exception 'a stage is listed twice' using errcode = 'PX003';
    end if;

    -- A paused stage (pepsi.stage_pause, issue 16) is not claimed: its cap
    -- becomes 0. With no stage paused this is one probe of an empty table.
    if exists (select 1 from pepsi.stage_pause) then
        p_caps := pepsi.stage_pause_caps(p_stages, p_caps);
    end if;
    if p_release_paused then
        perform pepsi.workqueue_release_due(p_now, p_owner_slot);
    end if;
    v_paused := pepsi.tube_pause_current(p_now, p_release_paused);

    return query
    update pepsi.workqueue w
       set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
      from (select q.workqueue_id as id
              from unnest(p_stages, p_caps) as s(stage, cap)
                   cross join lateral (
                       select q.workqueue_id from pepsi.workqueue q
                        where q.stage = s.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                        and (v_paused is null or not exists (
                             select 1 from pepsi.workqueue t
                              where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                        order by q.priority, q.workqueue_id
                        limit s.cap) q) picked
     where w.workqueue_id = picked.id and w.status = 'pending'
    returning w.workqueue_id, w.stage, w.sender_key;
end
$$;


-- The probe returns last_priority too (issue 16): a new result type.
drop function pepsi.workqueue_sender_probe(text, text, text, int, int, text[]);

create function pepsi.workqueue_sender_probe(p_stage text, p_after text, p_upto text, p_limit int,
                                             p_owner_slot int default 0, p_paused text[] default null)
returns table (sender_key text, ids bigint[], i bigint, last boolean, batch int, last_priority smallint)
language sql stable parallel safe
as $$
-- Reads the first p_limit pending entries of p_stage after sender
-- p_after (exclusive; '' for the first sender), in (sender_key,
-- priority, workqueue_id) order (issue 16: a sender's rows by priority,
-- then oldest first): the only index with that order, so the probe stays
-- on it; and yields every sender that starts among them, the first p_upto
-- (inclusive; NULL: no bound) at most, numbered from 1 (i), with its
-- first ids (array_agg keeps the scan's order) and the priority of the
-- last of them (last_priority: where a read of more rows of that sender
-- resumes, with its last id). last: the last sender of
-- the batch, which may have more rows (the others have none). batch: how
-- many entries the next probe should read: 4 after a batch of one sender
-- (a deep backlog: the window needs one row of it), 32 after a batch of
-- several (short backlogs: several senders per probe); a probe costs much
-- more than an entry (btree reads a leaf page at a time).
-- p_owner_slot (issue 14): only entries of that owner slot, an equality
-- of the index (stage, owner_slot, sender_key, priority, workqueue_id): the probe
-- never reads another slot's entries.
-- p_paused (issue 14): tubes whose rows are skipped (NULL: none; the
-- check then costs nothing and the scan stays index-only).
-- p_upto filters after the limit, not in the scan: the entries kept are
-- those the scan bounded by p_upto would have read (a prefix of the same
-- order), and the index condition stays a single lower bound.
    select g.sender_key, g.ids,
           row_number() over (order by g.sender_key) as i,
           lead(g.sender_key) over (order by g.sender_key) is null as last,
           case when count(*) over () = 1 then 4 else 32 end as batch,
           g.prios[cardinality(g.prios)] as last_priority
      from (select b.sender_key, array_agg(b.workqueue_id) as ids, array_agg(b.priority) as prios
              from (select q.sender_key, q.workqueue_id, q.priority
                      from pepsi.workqueue q
                     where q.stage = p_stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                       and q.sender_key > p_after
                       and (p_paused is null or not exists (
                            select 1 from pepsi.workqueue t
                             where t.workqueue_id = q.workqueue_id and t.tube = any (p_paused)))
                     order by q.sender_key, q.priority, q.workqueue_id
                     limit p_limit) b
             where p_upto is null or b.sender_key <= p_upto
             group by b.sender_key) g
$$;


create or replace function pepsi.workqueue_claim_fair(
    p_stages         text[],
    p_caps           int[],
    p_avg_usec       float8[],
    p_lead_stages    text[],
    p_lead_senders   text[],
    p_lead_usec      float8[],
    p_fifo_percent   int default 10,
    p_window_after   text[] default null,
    p_fifo_credit    int[] default null,
    p_now            timestamptz default now(),
    p_release_paused boolean default false,
    p_window_size    int default 64,
    p_claim_id       bigint default null,
    p_lead_base      float8[] default null,
    p_lead_scale     float8[] default null,
    p_lead_sync      boolean[] default null,
    p_owner_slot     int default 0)
returns table (workqueue_id bigint, stage text, sender_key text, fifo boolean,
               window_next text, window_lap boolean, fifo_credit int, lead_floor float8,
               leads_lost boolean)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
set plan_cache_mode = force_generic_plan
as $$
-- The fair claim (D-53, D-57..D-61): like workqueue_claim, for every stage
-- in p_stages up to the matching p_caps entry of its pending rows become
-- running, all in one UPDATE ... RETURNING (D-58); but which rows is
-- decided the way CFS picks a process, from the dispatcher's leads.
--
-- Parameters, one entry per stage unless said otherwise:
--   p_stages, p_caps   the stages and their free capacity (cap 0: skipped).
--   p_avg_usec         the stage's average worker time per message, > 0.
--   p_lead_stages, p_lead_senders, p_lead_usec
--                      flat arrays of (stage, sender_key, v): leads, each
--                      read as (v - base) / scale of its stage (below), in
--                      µs. A repeated (stage, sender) counts with its
--                      largest v. NULL arrays are empty arrays. What they
--                      hold depends on p_claim_id:
--                      - without a claim id, every lead there is: a sender
--                        with no entry has lead 0, level with the least
--                        served (D-54), and nothing is kept;
--                      - with a claim id (the dispatcher), the leads that
--                        changed since its previous claim: each is kept in
--                        pepsi.fair_lead for the dispatcher's incarnation
--                        (p_claim_id >> 40) before the claim reads it, or
--                        deleted when it is worth less than half the
--                        stage's average (forgotten, D-56); the claim reads
--                        the kept lead of each sender of its window, and a
--                        kept lead under half the average counts as 0. Then
--                        every lead stage must be one of p_stages.
--   p_lead_base, p_lead_scale
--                      per stage: the dispatcher's frame (runner/src/dispatch/fair.c:
--                      leads decay by halving without rewriting v). NULL
--                      (the array or an entry): base 0, scale 1, i.e. v is
--                      the lead. scale must be finite and > 0.
--   p_lead_sync        per stage, with a claim id: true when the lead
--                      arrays hold every lead of the stage; the stage's
--                      other kept leads are deleted and the stage is marked
--                      held in full by this incarnation (pepsi.fair_stage).
--                      The dispatcher sends it at its first lead, after a
--                      lost or failed claim, after leads_lost, and when it
--                      moves its frame. NULL: false.
--   p_fifo_percent     FAIR_FIFO_PERCENT, 0..100 (D-57).
--   p_window_after     where each stage's sender window starts (exclusive):
--                      the window_next returned for that stage last time;
--                      NULL (the array or an entry): the first sender.
--   p_fifo_credit      each stage's FIFO credit in hundredths of a slot,
--                      0..99: the fifo_credit returned last time; NULL (the
--                      array or an entry) counts as 99: the share rounds up.
--   p_now, p_release_paused, p_claim_id   as in workqueue_claim (claimed_at,
--                      the paused rows' clock; D-93; the claim's id, which
--                      also names the kept leads, above). Like
--                      workqueue_claim, rows of a tube paused at p_now
--                      are skipped in every scan (window, reads, FIFO
--                      share), and p_release_paused sweeps expired
--                      pauses (issue 14).
--   p_window_size      at most this many senders per stage per claim, 1..64
--                      (D-60: 64). Senders cost index probes, the main cost
--                      of a claim when many wait: a dispatcher claiming a
--                      few slots at a time may pass fewer (e.g. 4 x cap);
--                      fairness then works over more window rotations.
--
-- Per stage:
--   1. The window (D-59, D-60): the waiting senders in sender_key order,
--      from after p_window_after, wrapping around to the first, at most
--      p_window_size, found by a loose index scan of
--      workqueue_pending_sender_idx (a recursive skip-scan): each probe
--      reads the next few entries after the previous sender and yields
--      every sender that starts among them, with its oldest rows.
--   2. Ranking (D-53): the k-th oldest row of a sender with lead L ranks
--      L + k * avg, k counting from 0, smallest first, ties by workqueue_id.
--      k from 0 is "the lead before this row runs": a sender without a
--      lead and with one row ranks 0, level with the oldest row of every
--      other least-served sender (counting from 1 would add avg to every
--      rank of the stage and change no order).
--   3. Reading (D-61): a sender's rows are read oldest first, never more
--      than cap, and only as deep as a row could still win a slot: with
--      c = least(cap, senders) and L(c) the c-th smallest lead, the cap
--      best ranks are at most R = L(c) + (ceil(cap / c) - 1) * avg, so a
--      sender with lead L is read to depth floor((R - L) / avg) + 1 (at
--      least its oldest row). If fewer than cap rows rank at most R (short
--      backlogs), the senders that may have more are read on to cap. So
--      the result is exact, and the cost O(stages * senders in window *
--      cap) at worst, about one probe per sender when senders are level,
--      and never grows with any backlog's depth.
--   4. The FIFO share (D-57): of the n = least(cap, candidates) slots, f go
--      to the stage's oldest pending rows regardless of sender, where
--      t = credit + n * p_fifo_percent, f = t / 100 (integer division), and
--      t % 100 is returned as fifo_credit. Passed back claim after claim
--      this gives exactly p_fifo_percent of the stage's slots, also when
--      every claim has cap 1 (one claim in ten at 10 %). Without a credit
--      (NULL) f = ceil(n * p_fifo_percent / 100): at least one slot.
--   5. The other slots go to the best-ranked candidates not taken in 4.
--
-- Returns the claimed rows, grouped by stage in p_stages order and within
-- a stage in claim order (FIFO rows first, then by rank), with per row:
--   fifo          true when the FIFO share took the row;
-- and per stage (the same on every row of the stage):
--   window_next   pass as this stage's p_window_after next time: the last
--                 sender of a full window, NULL when the window held every
--                 waiting sender;
--   window_lap    true when the window reached the end of the sender order
--                 (always when window_next is NULL): the windows since the
--                 previous lap, this one included, have seen every waiting
--                 sender;
--   fifo_credit   pass as this stage's p_fifo_credit next time;
--   lead_floor    the smallest lead among the window's senders (no entry:
--                 0). When window_next is NULL it is the least-served
--                 waiting sender's lead, which the dispatcher subtracts
--                 from all its leads of the stage, so that they stay
--                 relative to that sender (D-48, D-54). When the window is
--                 a part of the senders, the dispatcher keeps the smallest
--                 lead_floor from one lap to the next and subtracts that at
--                 the lap (fair_level in runner/src/dispatch/fair.c).
--   leads_lost    with a claim id, true when this call did not sync the
--                 stage and pepsi.fair_stage does not say the stage's leads
--                 are held in full by this incarnation: the kept leads
--                 were lost (PostgreSQL crashed: the tables are UNLOGGED)
--                 or never sent; this claim ranked with what it found and
--                 the dispatcher should sync the stage next time.
-- A stage that returns no row had nothing pending: its state stays as it
-- was.
-- Priority (issue 16): "a sender's k-th oldest row" above is its k-th row
-- in (priority, workqueue_id) order, the order of
-- workqueue_pending_sender_idx; and the FIFO share takes the stage's rows
-- in (priority, workqueue_id) order (workqueue_pending_idx). So within a
-- sender, and in the FIFO share, a lower priority goes first; between
-- senders the ranking by lead decides, as before: a priority never lets
-- one sender take another's share.
-- The statement is planned once per session (plan_cache_mode): stages,
-- senders and limits reach every scan as LATERAL parameters, so a custom
-- plan would know nothing more, and planning costs more than a claim.
-- Besides the claim, one statement for all stages (D-58), the call writes
-- the kept leads it was sent (two statements that touch nothing when no
-- lead changed: an idle dispatcher's heartbeat writes nothing, D-139).
-- Raises PX003 when the per-stage arrays or the lead arrays differ in
-- length, a stage is listed twice, a cap is NULL or < 0, an average is not
-- a finite number > 0, a lead is NULL or not finite, a lead stage or sender
-- is NULL, a kept lead's stage is not in p_stages, a base is not finite, a
-- scale is not a finite number > 0, p_fifo_percent is outside 0..100, a
-- credit outside 0..99, p_window_size outside 1..64, or p_now or
-- p_owner_slot is NULL.
-- p_owner_slot (issue 14): only rows of that owner slot, the caller's (0
-- by default: every row without a topology); every read of workqueue
-- below is an index range of that slot (the indexes lead with stage and
-- owner_slot), so a slot never claims, nor reads, another slot's rows,
-- and its cost does not grow with the partitions it owns.
-- A paused stage (pepsi.workqueue_pause_stage, issue 16) is claimed as if
-- its cap were 0: not scanned, its window and credit returned unchanged.
-- Tables: workqueue (update), fair_lead and fair_stage (read, written
-- with a claim id), stage_pause (read).
#variable_conflict use_column
declare
    v_n int := cardinality(p_stages);
    v_inc bigint := p_claim_id >> 40;   -- the kept leads' incarnation; NULL: none kept
    v_paused text[]; -- tubes paused at p_now (issue 14), NULL when none
begin
    if v_n is distinct from cardinality(p_caps) or v_n is distinct from cardinality(p_avg_usec)
       or (p_window_after is not null and cardinality(p_window_after) <> v_n)
       or (p_fifo_credit is not null and cardinality(p_fifo_credit) <> v_n)
       or (p_lead_base is not null and cardinality(p_lead_base) <> v_n)
       or (p_lead_scale is not null and cardinality(p_lead_scale) <> v_n)
       or (p_lead_sync is not null and cardinality(p_lead_sync) <> v_n) then
        raise exception 'stages, caps, averages, window, credit, base, scale and sync arrays differ in length'
            using errcode = 'PX003';
    end if;
    if array_position(p_caps, null) is not null or 0 > any (p_caps) then
        raise exception 'caps must be zero or more' using errcode = 'PX003';
    end if;
    if not coalesce(0 < all (p_avg_usec) and 'Infinity'::float8 > all (p_avg_usec), false) then
        raise exception 'averages must be finite and greater than zero' using errcode = 'PX003';
    end if;
    if coalesce(cardinality(p_lead_stages), 0) <> coalesce(cardinality(p_lead_senders), 0)
       or coalesce(cardinality(p_lead_stages), 0) <> coalesce(cardinality(p_lead_usec), 0)
       or array_position(p_lead_stages, null) is not null
       or array_position(p_lead_senders, null) is not null
       or array_position(p_lead_usec, null) is not null
       or not coalesce('-Infinity'::float8 < all (p_lead_usec)
                       and 'Infinity'::float8 > all (p_lead_usec), true) then
        raise exception 'lead stages, senders and leads must be arrays of one length, without NULLs or infinities'
            using errcode = 'PX003';
    end if;
    if not coalesce('-Infinity'::float8 < all (p_lead_base) and 'Infinity'::float8 > all (p_lead_base), true) then
        raise exception 'lead bases must be finite' using errcode = 'PX003';
    end if;
    if not coalesce(0 < all (p_lead_scale) and 'Infinity'::float8 > all (p_lead_scale), true) then
        raise exception 'lead scales must be finite and greater than zero' using errcode = 'PX003';
    end if;
    if v_inc is not null and p_lead_stages is not null and not (p_lead_stages <@ p_stages) then
        raise exception 'a kept lead must belong to one of the stages' using errcode = 'PX003';
    end if;
    if p_fifo_percent is null or p_fifo_percent not between 0 and 100 then
        raise exception 'fifo percent must be between 0 and 100' using errcode = 'PX003';
    end if;
    if 0 > any (p_fifo_credit) or 99 < any (p_fifo_credit) then
        raise exception 'fifo credits must be between 0 and 99' using errcode = 'PX003';
    end if;
    if p_window_size is null or p_window_size not between 1 and 64 then
        raise exception 'window size must be between 1 and 64' using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be null' using errcode = 'PX003';
    end if;
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be null' using errcode = 'PX003';
    end if;
    if v_n > 1 and (select count(distinct s) from unnest(p_stages) s) <> v_n then
        raise exception 'a stage is listed twice' using errcode = 'PX003';
    end if;

    -- A paused stage (pepsi.stage_pause, issue 16) is not claimed: its cap
    -- becomes 0. With no stage paused this is one probe of an empty table.
    if exists (select 1 from pepsi.stage_pause) then
        p_caps := pepsi.stage_pause_caps(p_stages, p_caps);
    end if;
    if p_release_paused then
        perform pepsi.workqueue_release_due(p_now, p_owner_slot);
    end if;
    v_paused := pepsi.tube_pause_current(p_now, p_release_paused);

    -- The kept leads (with a claim id): a synced stage keeps only what this
    -- call sends; each lead sent is kept, or deleted when worth less than
    -- half an average message (D-56). Nothing runs when nothing changed.
    if v_inc is not null and true = any (p_lead_sync) then
        delete from pepsi.fair_lead f
         using unnest(p_stages, p_lead_sync) as s(stage, sync)
         where s.sync and f.stage = s.stage
           and not exists (select 1 from unnest(p_lead_stages, p_lead_senders) as l(stage, sender)
                            where l.stage = f.stage and l.sender = f.sender_key);
        insert into pepsi.fair_stage as m (stage, incarnation)
        select s.stage, v_inc from unnest(p_stages, p_lead_sync) as s(stage, sync) where s.sync
            on conflict (stage) do update set incarnation = excluded.incarnation;
    end if;
    if v_inc is not null and cardinality(p_lead_stages) > 0 then
        with l as (
            select l.stage, l.sender, max(l.v) as v
              from unnest(p_lead_stages, p_lead_senders, p_lead_usec) as l(stage, sender, v)
             group by l.stage, l.sender
        ),
        k as (
            select l.stage, l.sender, l.v,
                   (l.v - coalesce(s.base, 0)) / coalesce(s.scale, 1) >= s.avg_usec / 2 as keep
              from l join unnest(p_stages, p_avg_usec, p_lead_base, p_lead_scale)
                          as s(stage, avg_usec, base, scale) on s.stage = l.stage
        ),
        gone as (
            delete from pepsi.fair_lead f using k
             where not k.keep and f.stage = k.stage and f.sender_key = k.sender
        )
        insert into pepsi.fair_lead as f (stage, sender_key, incarnation, v)
        select k.stage, k.sender, v_inc, k.v from k where k.keep
            on conflict (stage, sender_key) do update set incarnation = excluded.incarnation, v = excluded.v;
    end if;

    return query
    with recursive
    -- The stages with free capacity.
    -- The stages with free capacity, their frames, and whether their kept
    -- leads are lost (leads_lost).
    st as (
        select s.ord::int as ord, s.stage, s.cap, s.avg_usec, s.after, coalesce(s.credit, 99) as credit,
               coalesce(s.base, 0) as base, coalesce(s.scale, 1) as scale,
               v_inc is not null and not coalesce(s.sync, false)
                 and not exists (select 1 from pepsi.fair_stage m
                                  where m.stage = s.stage and m.incarnation = v_inc) as lost
          from unnest(p_stages, p_caps, p_avg_usec, p_window_after, p_fifo_credit, p_lead_base, p_lead_scale,
                      p_lead_sync)
               with ordinality as s(stage, cap, avg_usec, after, credit, base, scale, sync, ord)
         where s.cap > 0
    ),
    -- 1. The window, by a batched skip-scan of workqueue_pending_sender_idx:
    -- each step is one probe, pepsi.workqueue_sender_probe (inlined, so
    -- each is an index scan of this plan), that reads the next 16, 4 or 32
    -- entries after the previous step's last sender and yields every
    -- sender that starts among them with its oldest rows. win1 goes from
    -- p_window_after to the last sender; win2 wraps around to the first
    -- sender ('' is below every sender key) and goes on up to
    -- p_window_after.
    win1(ord, stage, n, sender, ids, last, batch, lastp) as (
        select st.ord, st.stage, f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority
          from st cross join lateral pepsi.workqueue_sender_probe(st.stage, coalesce(st.after, ''), null, 16, p_owner_slot, v_paused) f
        union all
        select w.ord, w.stage, w.n + f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority
          from win1 w cross join lateral pepsi.workqueue_sender_probe(w.stage, w.sender, null, w.batch, p_owner_slot, v_paused) f
         where w.last and w.n < p_window_size
    ),
    win2(ord, stage, after, n, sender, ids, last, batch, lastp) as (
        select st.ord, st.stage, st.after, coalesce(c.n, 0) + f.i, f.sender_key, f.ids, f.last, f.batch,
               f.last_priority
          from st
               left join (select win1.ord, max(win1.n) as n from win1 group by win1.ord) c on c.ord = st.ord
               cross join lateral pepsi.workqueue_sender_probe(st.stage, '', st.after, 16, p_owner_slot, v_paused) f
         where st.after is not null and coalesce(c.n, 0) < p_window_size
        union all
        select w.ord, w.stage, w.after, w.n + f.i, f.sender_key, f.ids, f.last, f.batch, f.last_priority
          from win2 w cross join lateral pepsi.workqueue_sender_probe(w.stage, w.sender, w.after, w.batch, p_owner_slot, v_paused) f
         where w.last and w.n < p_window_size
    ),
    -- The leads passed in, without a claim id (with one they are kept).
    leads as (
        select l.stage, l.sender, max(l.v) as v
          from unnest(p_lead_stages, p_lead_senders, p_lead_usec) as l(stage, sender, v)
         where v_inc is null
         group by l.stage, l.sender
    ),
    -- The window's senders (n = 1 .. p_window_size within the stage), their
    -- oldest rows read so far, whether that is all of them, their leads:
    -- passed in, or kept (one probe of fair_lead_pkey per sender; a kept
    -- lead under half an average is forgotten, D-56).
    ws as (
        select w.ord, w.n, w.sender, w.ids, w.lastp, not w.last as complete, w.wrapped,
               case when v_inc is null then coalesce((l.v - st.base) / st.scale, 0)
                    when (k.v - st.base) / st.scale >= st.avg_usec / 2 then (k.v - st.base) / st.scale
                    else 0 end as lead_usec
          from (select win1.ord, win1.stage, win1.n, win1.sender, win1.ids, win1.lastp, win1.last, false as wrapped
                  from win1 where win1.n <= p_window_size
                union all
                select win2.ord, win2.stage, win2.n, win2.sender, win2.ids, win2.lastp, win2.last, true
                  from win2 where win2.n <= p_window_size) w
               join st on st.ord = w.ord
               left join leads l on l.stage = w.stage and l.sender = w.sender
               left join lateral (
                   select f.v from pepsi.fair_lead f
                    where v_inc is not null and f.stage = w.stage and f.sender_key = w.sender
                      and f.incarnation = v_inc) k on true
    ),
    -- Per stage: the lead floor, the window's state, and what the bound R
    -- of step 3 needs: c and the c-th smallest lead.
    sb as (
        select ws.ord, min(ws.lead_usec) as lead_floor,
               max(ws.sender) filter (where ws.n = p_window_size) as window_next,
               count(*) < p_window_size or bool_or(ws.wrapped) as window_lap,
               least(min(st.cap), count(*))::int as c,
               (array_agg(ws.lead_usec order by ws.lead_usec))[least(min(st.cap), count(*))::int]
                 as lead_c
          from ws join st on st.ord = ws.ord
         group by ws.ord
    ),
    -- 3. Each sender's depth: the rows that rank at most
    -- R = lead_c + (ceil(cap / c) - 1) * avg, at most cap.
    wd as (
        select ws.ord, ws.n, ws.sender, ws.ids, ws.lastp, ws.complete, ws.lead_usec, st.stage, st.cap, st.avg_usec,
               least(st.cap, greatest(1, floor((sb.lead_c + ((st.cap + sb.c - 1) / sb.c - 1) * st.avg_usec
                                                - ws.lead_usec) / st.avg_usec + 1e-9)::int + 1)) as depth
          from ws join sb on sb.ord = ws.ord join st on st.ord = ws.ord
    ),
    -- Read each sender to its depth where the window has not (a read that
    -- runs into the next sender stops there: those rows are dropped).
    rd as (
        select r.*, sum(least(cardinality(r.ids), r.depth)) over (partition by r.ord) as stage_le_r
          from (select wd.*
                  from wd where wd.complete or cardinality(wd.ids) >= wd.depth
                union all
                select wd.ord, wd.n, wd.sender, wd.ids || coalesce(m.ids, '{}'),
                       coalesce(m.prios[cardinality(m.prios)], wd.lastp),
                       cardinality(m.ids) is distinct from wd.depth - cardinality(wd.ids),
                       wd.lead_usec, wd.stage, wd.cap, wd.avg_usec, wd.depth
                  from wd cross join lateral (
                           select array_agg(r.workqueue_id) as ids, array_agg(r.priority) as prios
                             from (select q.workqueue_id, q.sender_key, q.priority
                                     from pepsi.workqueue q
                                    where q.stage = wd.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                                      and (q.sender_key, q.priority, q.workqueue_id)
                                          > (wd.sender, wd.lastp, wd.ids[cardinality(wd.ids)])
                                      and (v_paused is null or not exists (
                                           select 1 from pepsi.workqueue t
                                            where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                                    order by q.sender_key, q.priority, q.workqueue_id
                                    limit wd.depth - cardinality(wd.ids)) r
                            where r.sender_key = wd.sender) m
                 where not wd.complete and cardinality(wd.ids) < wd.depth) r
    ),
    -- 2. The candidates ranked L + k * avg, k from 0: each sender's rows to
    -- its depth. Every row that ranks at most R has been read; if fewer
    -- than cap do, every row read counts, and the senders that may have
    -- more are read on to cap.
    cand as (
        select rd.ord, c.id, rd.lead_usec + (c.k - 1) * rd.avg_usec as rank
          from rd cross join lateral
               unnest(rd.ids[1:case when rd.stage_le_r < rd.cap then rd.cap else rd.depth end])
                   with ordinality as c(id, k)
        union all
        select rd.ord, c.id, rd.lead_usec + (cardinality(rd.ids) + c.k - 1) * rd.avg_usec
          from rd cross join lateral (
                   select array_agg(r.workqueue_id) as ids
                     from (select q.workqueue_id, q.sender_key
                             from pepsi.workqueue q
                            where q.stage = rd.stage and q.owner_slot = p_owner_slot and q.status = 'pending'
                              and (q.sender_key, q.priority, q.workqueue_id)
                                  > (rd.sender, rd.lastp, rd.ids[cardinality(rd.ids)])
                              and (v_paused is null or not exists (
                                   select 1 from pepsi.workqueue t
                                    where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                            order by q.sender_key, q.priority, q.workqueue_id
                            limit rd.cap - cardinality(rd.ids)) r
                    where r.sender_key = rd.sender) m
               cross join lateral unnest(m.ids) with ordinality as c(id, k)
         where rd.stage_le_r < rd.cap and not rd.complete and cardinality(rd.ids) < rd.cap
    ),
    -- 4. The FIFO share of the n slots, and the credit carried over.
    share as (
        select st.ord, st.stage, st.cap, sb.window_next, sb.window_lap, sb.lead_floor, st.lost,
               (st.credit + least(x.n, st.cap) * p_fifo_percent) / 100 as f,
               (st.credit + least(x.n, st.cap) * p_fifo_percent) % 100 as credit_next
          from (select cand.ord, count(*)::int as n from cand group by cand.ord) x
               join st on st.ord = x.ord
               join sb on sb.ord = x.ord
    ),
    -- The stage's oldest rows of this slot: the first f entries of its
    -- (stage, owner_slot) range of workqueue_pending_idx.
    oldest as (
        select share.ord, r.workqueue_id as id
          from share cross join lateral (
                   select q.workqueue_id
                     from pepsi.workqueue q
                    where q.stage = share.stage and q.owner_slot = p_owner_slot
                      and q.status = 'pending' and share.f > 0
                      and (v_paused is null or not exists (
                           select 1 from pepsi.workqueue t
                            where t.workqueue_id = q.workqueue_id and t.tube = any (v_paused)))
                    order by q.priority, q.workqueue_id
                    limit share.f) r
    ),
    -- 5. FIFO rows first, then the best ranks; each row once; cap per stage.
    pick as (
        select x.ord, x.id, x.fifo, x.pos
          from (select u.ord, u.id, u.fifo,
                       row_number() over (partition by u.ord order by u.fifo desc, u.rank, u.id) as pos
                  from (select oldest.ord, oldest.id, true as fifo, 0::float8 as rank from oldest
                        union all
                        select cand.ord, cand.id, false, cand.rank from cand
                         where not exists (select 1 from oldest where oldest.id = cand.id)) u) x
               join share on share.ord = x.ord
         where x.pos <= share.cap
    ),
    claimed as (
        update pepsi.workqueue w
           set status = 'running'::pepsi.workqueue_status, claimed_at = p_now, claim_id = p_claim_id
         where w.workqueue_id = any (array(select pick.id from pick))
           and w.status = 'pending'
        returning w.workqueue_id, w.stage, w.sender_key
    )
    select c.workqueue_id, c.stage, c.sender_key, pick.fifo,
           share.window_next, share.window_lap, share.credit_next, share.lead_floor, share.lost
      from claimed c
           join pick on pick.id = c.workqueue_id
           join share on share.ord = pick.ord
     order by pick.ord, pick.pos;
end
$$;


-- pepsi.messages shows the options (issue 16): new columns at the end.
create or replace view pepsi.messages as
select w.workqueue_id, w.tube, w.stage, w.status, w.origin_user, w.origin_addr,
       w.envelope_sender, w.recipients, w.sender_key, w.header_from, w.subject,
       w.state, w.arrived_at, w.claimed_at, w.claim_id, w.timeout,
       w.webhook_event_id, w.partition, w.owner_slot,
       (select octet_length(b.body) from pepsi.workqueue_body b where b.body_id = w.body_id) as body_bytes,
       w.priority, w.dedupe_key
  from pepsi.workqueue w;

comment on column pepsi.messages.priority is
    'Within a stage, a lower value is claimed first, then by id (issue 16; -1000..1000, default 0).';
comment on column pepsi.messages.dedupe_key is
    'The insert-once key it was injected with (issue 16): while it is here, an inject with that key returns its id.';

-- A compatible addition (new optional parameters, new columns): the level
-- rises, the oldest level served stays (schema_api.sql says the rules).
-- scripts/schema-manifest reads the level from the last change of
-- sqitch.plan that defines pepsi.schema_api(), this one.
create or replace function pepsi.schema_api(out level int, out oldest int)
language sql immutable parallel safe
as $$
    select 2 as level, 1 as oldest
$$;

comment on function pepsi.schema_api() is
    'The API level this schema serves (level) and the oldest level a program may be built against and still run (oldest): pepsi-runner and its workers run when oldest <= their build''s level <= level, and exit 78 otherwise (D-12, issue 15). Level 2: the enqueue options of workqueue_inject (issue 16). README "Upgrading".';

comment on function pepsi.enqueue_options_check(timestamptz, int, text, text) is
    'Raises the first problem of a message''s enqueue options (issue 16): PX052 priority outside -1000..1000, PX053 run_at infinite or more than a year ahead, PX054 dedupe_key not 1..255 bytes. NULLs pass.';
comment on function pepsi.workqueue_insert(pepsi.workqueue_item[], bigint[], int[], timestamptz[], text[]) is
    'The one statement that creates message rows (issue 13, 16): items with their priority, run_at (later than now: paused until then) and dedupe key; one id per item in input order, NULL where a live row holds the key. No check, no NOTIFY.';
comment on function pepsi.workqueue_create(pepsi.workqueue_item[], bigint[]) is
    'Writes messages pending at their stage and returns their ids in input order; p_body_ids shares existing bodies. workqueue_insert without enqueue options (issue 16). No check, no NOTIFY.';
comment on function pepsi.workqueue_enqueue(pepsi.workqueue_item[], int[], timestamptz[], text[]) is
    'Writes messages with their enqueue options and returns one id per item: the new row''s, or the live row''s that holds its dedupe key (issue 16); 40001 when a key''s row kept coming and going. No check, no NOTIFY.';
comment on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text,
                                           timestamptz, timestamptz, int, text) is
    'Queues one message and NOTIFYs workqueue; returns its id. Enqueue options (issue 16): p_run_at (not claimed before), p_priority (-1000..1000, lower first within a stage), p_dedupe_key (while a message with the key is queued, its id is returned and nothing written). PX001..PX006, PX052..PX054.';
comment on function pepsi.workqueue_inject_batch(jsonb) is
    'Queues a JSON array of messages (keys of workqueue_inject without p_, run_at, priority and dedupe_key included) in one call and one NOTIFY; all or nothing; ids in input order.';
comment on function pepsi.workqueue_batch_casts(jsonb) is
    'The slow path of workqueue_inject_batch after a failed cast: names the first element with a bad origin_addr, body_base64, run_at (PX003) or priority (PX052).';
comment on function pepsi.workqueue_claim(text[], int[], timestamptz, boolean, bigint, int) is
    'The plain claim: per stage, up to cap pending rows of the owner slot, lowest priority first then oldest (issue 16), become running in one UPDATE.';
comment on function pepsi.workqueue_sender_probe(text, text, text, int, int, text[]) is
    'One step of the fair claim''s sender window: the next senders after p_after with their first rows in (priority, workqueue_id) order (issue 16) and the last row''s priority.';
comment on function pepsi.workqueue_claim_fair(text[], int[], float8[], text[], text[], float8[], int, text[],
                                               int[], timestamptz, boolean, int, bigint, float8[], float8[],
                                               boolean[], int) is
    'The fair claim (D-53, D-57..D-61): ranks each sender''s rows (in priority, then id order, issue 16) by lead, with a FIFO share taken lowest priority first.';

revoke all on function pepsi.workqueue_sender_probe(text, text, text, int, int, text[]) from public;

commit;
