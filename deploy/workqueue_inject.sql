-- Deploy pepsi:workqueue_inject to pg
-- requires: workqueue

begin;

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
-- the null sender), recipients (each an address), origin user and peer
-- address, initial state (a JSON object), tube, Subject and From.
-- Returns the new workqueue_id. NOTIFY workqueue with an empty payload:
-- the notification is only a wake-up, and PostgreSQL folds identical
-- notifications of one transaction into one.
-- Tables: workqueue_body, workqueue (insert).
declare
    v_body_id bigint;
    v_id bigint;
begin
    perform pepsi.stage_check(p_stage);
    perform pepsi.tube_check(p_tube);
    if p_envelope_sender is not null and p_envelope_sender <> '' then
        perform pepsi.address_check(p_envelope_sender, 'envelope sender');
    end if;
    perform pepsi.address_check(r, 'recipient') from unnest(p_recipients) r;
    if p_state is null or jsonb_typeof(p_state) <> 'object' then
        raise exception 'state must be a JSON object' using errcode = 'PX003';
    end if;

    if p_body is not null or p_headers is not null then
        insert into pepsi.workqueue_body (headers, body) values (p_headers, p_body)
        returning body_id into v_body_id;
    end if;

    insert into pepsi.workqueue (tube, stage, origin_user, origin_addr, envelope_sender,
                                 recipients, header_from, subject, state, body_id, arrived_at)
    values (p_tube, p_stage, p_origin_user, p_origin_addr, p_envelope_sender,
            coalesce(p_recipients, '{}'), p_header_from, p_subject, p_state, v_body_id,
            coalesce(p_arrived_at, now()))
    returning workqueue_id into v_id;

    notify workqueue;
    return v_id;
end
$$;

create function pepsi.workqueue_inject_batch(p_messages jsonb)
returns setof bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Queues many messages in one call and one NOTIFY; returns their ids in
-- input order. p_messages is a JSON array of objects with the keys of
-- workqueue_inject without the p_ prefix: stage (required), body (text,
-- stored as UTF-8) or body_base64 (any bytes), headers, envelope_sender,
-- recipients (array), origin_user, origin_addr, state (object), tube,
-- subject, header_from. Validation is the same as workqueue_inject's,
-- and a bad element rejects the whole batch (nothing is queued).
-- Tables: workqueue_body, workqueue (insert).
declare
    v_bad bigint;
begin
    if p_messages is null or jsonb_typeof(p_messages) <> 'array' then
        raise exception 'messages must be a JSON array' using errcode = 'PX003';
    end if;

    select e.ord into v_bad
      from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
     where jsonb_typeof(e.m) <> 'object'
        or (e.m ? 'state' and jsonb_typeof(e.m->'state') <> 'object')
        or (e.m ? 'recipients' and jsonb_typeof(e.m->'recipients') <> 'array')
        or exists (select 1 from jsonb_object_keys(case when jsonb_typeof(e.m) = 'object' then e.m else '{}' end) k
                    where k not in ('stage', 'body', 'body_base64', 'headers', 'envelope_sender',
                                    'recipients', 'origin_user', 'origin_addr', 'state', 'tube',
                                    'subject', 'header_from'))
     limit 1;
    if found then
        raise exception 'message % of the batch is malformed', v_bad
            using errcode = 'PX003',
                  detail = 'Each element must be an object with known keys; state an object; recipients an array.';
    end if;
    perform pepsi.stage_check(m->>'stage'), pepsi.tube_check(coalesce(m->>'tube', 'default'))
       from jsonb_array_elements(p_messages) m;
    perform pepsi.address_check(m->>'envelope_sender', 'envelope sender')
       from jsonb_array_elements(p_messages) m
      where coalesce(m->>'envelope_sender', '') <> '';
    perform pepsi.address_check(r, 'recipient')
       from jsonb_array_elements(p_messages) m,
            jsonb_array_elements_text(coalesce(m->'recipients', '[]')) r;

    -- Body ids are drawn before the insert so that each message knows its
    -- body without matching rows back by position.
    return query
    with src as materialized (
        select e.ord, e.m,
               case when e.m ?| array['body', 'body_base64', 'headers']
                    then nextval(pg_get_serial_sequence('pepsi.workqueue_body', 'body_id')) end as body_id
          from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
    ), bodies as (
        insert into pepsi.workqueue_body (body_id, headers, body)
        overriding system value
        select s.body_id, s.m->>'headers',
               case when s.m ? 'body_base64' then decode(s.m->>'body_base64', 'base64')
                    when s.m ? 'body' then convert_to(s.m->>'body', 'UTF8') end
          from src s where s.body_id is not null
    )
    insert into pepsi.workqueue (tube, stage, origin_user, origin_addr, envelope_sender,
                                 recipients, header_from, subject, state, body_id)
    select coalesce(s.m->>'tube', 'default'), s.m->>'stage', s.m->>'origin_user',
           (s.m->>'origin_addr')::inet, s.m->>'envelope_sender',
           array(select jsonb_array_elements_text(coalesce(s.m->'recipients', '[]'))),
           s.m->>'header_from', s.m->>'subject', coalesce(s.m->'state', '{}'), s.body_id
      from src s
     order by s.ord
    returning workqueue_id;

    notify workqueue;
end
$$;

revoke all on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz) from public;
revoke all on function pepsi.workqueue_inject_batch(jsonb) from public;
grant execute on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text, timestamptz)
    to pepsi_ingress, pepsi_worker;
grant execute on function pepsi.workqueue_inject_batch(jsonb) to pepsi_ingress, pepsi_worker;

commit;
