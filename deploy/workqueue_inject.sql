-- Deploy pepsi:workqueue_inject to pg
-- requires: workqueue
-- requires: topology

begin;

-- One message as a producer hands it in, before it is written: the shared
-- shape of workqueue_inject's arguments and a workqueue_inject_batch
-- element, so that both are checked by one function; also a message made
-- from a webhook event (webhook_event_item) or a split's sibling, which
-- carry the event link webhook_event_id (issue 13; NULL for a producer's).
create type pepsi.workqueue_item as (
    stage           text,
    tube            text,
    body            bytea,
    headers         text,
    envelope_sender text,
    recipients      text[],
    origin_user     text,
    origin_addr     inet,
    state           jsonb,
    subject         text,
    header_from     text,
    arrived_at      timestamptz,
    webhook_event_id bigint
);

create function pepsi.workqueue_item_check(p_item pepsi.workqueue_item, p_where text default null)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises the first problem of the message p_item, before anything is
-- written (issue 11); p_where names it in a batch ("message 3: subject is
-- 204800 bytes; the limit is 998").
--   PX003  a field over its limit (pepsi.input_limits: subject,
--          header_from, headers, body, origin_user, state, recipients;
--          the sizes are checked first), a state that is not an object, a
--          NULL arrived_at, an address over RFC 5321's lengths
--   PX001  the stage name; PX006 the tube name
--   PX002  an envelope sender (other than '', the null sender) or a
--          recipient that is not local@domain
-- The limits fold to constants in the cached plans, so a message within
-- them costs a few comparisons; size_error runs only for one over them.
declare
    v_pre text := coalesce(p_where || ': ', '');
begin
    if octet_length(p_item.subject) > pepsi.input_limit('subject') then
        perform pepsi.size_error(p_where, 'subject', octet_length(p_item.subject));
    end if;
    if octet_length(p_item.header_from) > pepsi.input_limit('header_from') then
        perform pepsi.size_error(p_where, 'header_from', octet_length(p_item.header_from));
    end if;
    if octet_length(p_item.headers) > pepsi.input_limit('headers') then
        perform pepsi.size_error(p_where, 'headers', octet_length(p_item.headers));
    end if;
    if octet_length(p_item.body) > pepsi.input_limit('body') then
        perform pepsi.size_error(p_where, 'body', octet_length(p_item.body));
    end if;
    if octet_length(p_item.origin_user) > pepsi.input_limit('origin_user') then
        perform pepsi.size_error(p_where, 'origin_user', octet_length(p_item.origin_user));
    end if;
    if octet_length(p_item.state::text) > pepsi.input_limit('state') then
        perform pepsi.size_error(p_where, 'state', octet_length(p_item.state::text));
    end if;
    if cardinality(p_item.recipients) > pepsi.input_limit('recipients') then
        perform pepsi.size_error(p_where, 'recipients', cardinality(p_item.recipients));
    end if;

    perform pepsi.stage_check(p_item.stage, p_where), pepsi.tube_check(p_item.tube, p_where);
    if jsonb_typeof(p_item.state) is distinct from 'object' then
        raise exception '%state must be a JSON object, not %', v_pre, coalesce(jsonb_typeof(p_item.state), 'NULL')
            using errcode = 'PX003';
    end if;
    if p_item.arrived_at is null then
        raise exception '%arrived_at must not be NULL', v_pre using errcode = 'PX003';
    end if;
    if p_item.envelope_sender <> '' then
        perform pepsi.address_check(p_item.envelope_sender, v_pre || 'envelope sender');
    end if;
    perform pepsi.address_check(r.address, v_pre || 'recipient ' || r.n)
       from unnest(p_item.recipients) with ordinality as r(address, n);
end
$$;

create function pepsi.workqueue_create(p_items pepsi.workqueue_item[], p_body_ids bigint[] default null)
returns setof bigint
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Writes the messages p_items, pending at their stage, in one statement
-- and returns their new ids in input order: the one place a message row
-- is created (issue 13: inject, inject_batch, split, the webhook ingest
-- and reconciliation's re-inject), with the item's webhook_event_id (the
-- event link; NULL for a producer's message). Body sharing: with
-- p_body_ids NULL, an item with a body or a header block gets a
-- workqueue_body row of its own (body ids are drawn before the insert, so
-- that each message knows its body without matching rows back by
-- position); with p_body_ids, item n shares the existing body
-- p_body_ids[n] (NULL: none) and its body and headers are ignored.
-- Each row gets its tube's partition (issue 14):
-- pepsi.tube_partition(tube, partition_count) of the stored topology,
-- hashed once per distinct tube of the call, and that partition's owner
-- slot from partition_map; 0 and 0 without a topology (slot 0 owns every
-- row). The map is read under a ROW SHARE lock of partition_map, which
-- partition_map_set's EXCLUSIVE lock waits for: a row is never written
-- with a slot read from a map that a concurrent change has just replaced
-- (that change rewrites the slots of the rows already there; in READ
-- COMMITTED, which producers use, the insert's snapshot follows the lock).
-- Nothing is checked here: the caller has checked every item
-- (workqueue_item_check) or copies a row already stored. No NOTIFY: the
-- caller decides. Tables: workqueue_body, workqueue (insert); topology, partition_map (read).
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
                    then nextval(pg_get_serial_sequence('pepsi.workqueue_body', 'body_id')) end as body_id
          from unnest(p_items) with ordinality as i(stage, tube, body, headers, envelope_sender, recipients,
                                                    origin_user, origin_addr, state, subject, header_from,
                                                    arrived_at, webhook_event_id, ord)
    ), bodies as (
        insert into pepsi.workqueue_body (body_id, headers, body)
        overriding system value
        select s.body_id, s.headers, s.body from src s where s.body_id is not null and p_body_ids is null
    ), parts as (
        select p.tube, p.partition, coalesce(m.owner_slot, 0) as owner_slot
          from (select d.tube, case when v_count is null then 0
                                    else pepsi.tube_partition(d.tube, v_count) end as partition
                  from (select distinct s.tube from src s) d) p
               left join pepsi.partition_map m on m.partition = p.partition
    )
    insert into pepsi.workqueue (tube, stage, origin_user, origin_addr, envelope_sender,
                                 recipients, header_from, subject, state, body_id, arrived_at,
                                 webhook_event_id, partition, owner_slot)
    select s.tube, s.stage, s.origin_user, s.origin_addr, s.envelope_sender, s.recipients,
           s.header_from, s.subject, s.state, s.body_id, s.arrived_at, s.webhook_event_id, p.partition,
           p.owner_slot
      from src s join parts p on p.tube = s.tube
     order by s.ord
    returning workqueue_id;
end
$$;

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
    p_arrived_at      timestamptz default now())
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
-- and From, arrival time (not NULL).
-- Every field is checked against pepsi.input_limits before anything is
-- written (workqueue_item_check): PX001 stage, PX002 address, PX003 a
-- limit or a bad argument, PX006 tube.
-- Returns the new workqueue_id. NOTIFY workqueue with an empty payload:
-- the notification is only a wake-up, and PostgreSQL folds identical
-- notifications of one transaction into one.
-- Tables: workqueue_body, workqueue (insert).
declare
    v_item pepsi.workqueue_item := row(p_stage, p_tube, p_body, p_headers, p_envelope_sender,
                                       coalesce(p_recipients, '{}'), p_origin_user, p_origin_addr, p_state,
                                       p_subject, p_header_from, p_arrived_at, null)::pepsi.workqueue_item;
    v_id bigint;
begin
    perform pepsi.workqueue_item_check(v_item);
    select c into v_id from pepsi.workqueue_create(array[v_item]) c;
    notify workqueue;
    return v_id;
end
$$;

create function pepsi.workqueue_batch_casts(p_messages jsonb)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The slow path of workqueue_inject_batch, run only after a cast failed:
-- finds the first element whose origin_addr is not an IP address or whose
-- body_base64 is not base64, and raises PX003 naming it. Returns when it
-- finds none (the caller then re-raises the original error).
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
    end loop;
end
$$;

create function pepsi.workqueue_inject_batch(p_messages jsonb)
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
-- (object), tube, subject, header_from; each a string or null but
-- recipients and state. Arrival is now(). Validation is
-- workqueue_inject's (workqueue_item_check), on every element, and the
-- first bad element rejects the whole batch (nothing is queued); errors
-- name it ("message 3: ..."). Raises PX003 also for a batch that is not
-- such an array, an origin_addr that is not an IP address and a
-- body_base64 that is not base64.
-- Tables: workqueue_body, workqueue (insert).
declare
    v_bad bigint;
    v_items pepsi.workqueue_item[];
    v_item pepsi.workqueue_item;
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
                                        'subject', 'header_from')
                       or (k.key not in ('recipients', 'state') and jsonb_typeof(k.value) not in ('string', 'null')))
     order by e.ord
     limit 1;
    if found then
        raise exception 'message % of the batch is malformed', v_bad
            using errcode = 'PX003',
                  detail = 'Each element must be an object with known keys whose values are strings or null; state an object; recipients an array.';
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
    exception when data_exception then
        perform pepsi.workqueue_batch_casts(p_messages);
        raise;
    end;
    foreach v_item in array v_items loop
        v_n := v_n + 1;
        perform pepsi.workqueue_item_check(v_item, 'message ' || v_n);
    end loop;

    return query select c from pepsi.workqueue_create(v_items) c;
    notify workqueue;
end
$$;

revoke all on function pepsi.workqueue_item_check(pepsi.workqueue_item, text) from public;
revoke all on function pepsi.workqueue_batch_casts(jsonb) from public;
revoke all on function pepsi.workqueue_create(pepsi.workqueue_item[], bigint[]) from public;
revoke all on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz) from public;
revoke all on function pepsi.workqueue_inject_batch(jsonb) from public;
grant execute on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz)
    to pepsi_ingress, pepsi_worker;
grant execute on function pepsi.workqueue_inject_batch(jsonb) to pepsi_ingress, pepsi_worker;

commit;
