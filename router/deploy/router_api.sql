-- Deploy pepsi_router:router_api to pg
-- requires: router_cluster
--
-- The public API of pepsi on the router (issue 18): functions of schema
-- pepsi with the names, arguments and defaults of a shard's, so a
-- producer or an operator points its connection at the router and
-- changes nothing else. Each is a SECURITY INVOKER PL/pgSQL function
-- that finds the shard(s) and calls a PL/Proxy helper in pepsi_router
-- (RUN ON the shard, or RUN ON ALL), so that
--   - PL/Proxy connects to a shard as the caller, and the shard's own
--     grants decide (the router grants each function to the role the
--     shard grants it to, no more);
--   - a shard that does not answer is PX070 naming the shard, raised for
--     the calls that need that shard only (PL/Proxy's own error is XX000
--     "[dbname] PQconnectPoll: ..."); every other shard keeps serving;
--   - a shard's own errors come back with their SQLSTATE (PX001, PX003,
--     PX004, PX006, ...): PL/Proxy re-raises them.
-- Routing:
--   by tube  workqueue_inject, tube_pause (pepsi_router.shard_of_tube)
--   split    workqueue_inject_batch: elements grouped by the shard of
--            their tube, one call per shard in shard order. ALL OR
--            NOTHING PER SHARD ONLY: each shard's call commits on its
--            own, so when shard 1 refuses its part, shard 0's part may
--            already be queued. The error names the shard and the
--            element by its place in the whole batch.
--   by id    workqueue_delete, workqueue_retry, workqueue_reroute,
--            workqueue_resume (with ids), workqueue_move, workqueue_pause:
--            the shard is id >> 48 (pepsi_router.shard_of_id); ids of
--            several shards: one call per shard, counts summed, all or
--            nothing per shard only (an unknown id, PX004, refuses only
--            its shard's part, unless no shard can have given it: then
--            nothing is sent anywhere).
--   all      workqueue_resume without ids (by filter; with p_tube: only
--            its shard), workqueue_purge, workqueue_pause_stage,
--            workqueue_resume_stage, and the configuration every shard
--            must share: config_set, config_unset, config_remove_stage,
--            config_clear, settings_set, settings_delete (RUN ON ALL,
--            counts summed; each shard applies it in its own transaction).
--   by provider  webhook_events_ingest, webhook_event_ingest: by the tube
--            of each event's provider; a burst split by shard with each
--            event's payload bytes, all or nothing per shard only.
-- Not routed (router/pgtap/02-routes.sql lists them and why): the
-- tombstone and back-fill requests, the runner's and workers' functions
-- (they connect to their own shard), and read-only look-ups. The ingress
-- process's own calls (provider list, statistics, schema_api) are routed
-- by the change router_ingress.

begin;

-- The status type of the shards, for workqueue_resume's p_statuses: the
-- same labels in the same order (e2e 90 compares them with a shard's).
create type pepsi.workqueue_status as enum ('pending', 'running', 'paused', 'failed', 'timeout');

comment on type pepsi.workqueue_status is
    'The shards'' message status type, for workqueue_resume''s p_statuses on the router (issue 18).';

create function pepsi_router.unreachable(p_shard int, p_error text)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Raises PX070 for a shard PL/Proxy could not reach (its XX000).
begin
    raise exception 'shard % did not answer: %', p_shard, p_error
          using errcode = 'PX070',
                hint = 'Only this shard''s tubes and ids wait; the other shards serve. Start the shard, or see pepsi_router.cluster_apply.';
end
$$;

comment on function pepsi_router.unreachable(int, text) is
    'Internal (issue 18): raises PX070 naming a shard that PL/Proxy could not reach.';

-- ---- by tube -------------------------------------------------------------------

create function pepsi_router.workqueue_inject_on(p_shard int, p_stage text, p_body bytea, p_headers text,
    p_envelope_sender text, p_recipients text[], p_origin_user text, p_origin_addr inet, p_state jsonb,
    p_tube text, p_subject text, p_header_from text, p_arrived_at timestamptz, p_run_at timestamptz,
    p_priority int, p_dedupe_key text)
returns bigint
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    -- Positional: PL/Proxy substitutes every p_ name, also before "=>".
    select pepsi.workqueue_inject(p_stage, p_body, p_headers, p_envelope_sender, p_recipients, p_origin_user,
        p_origin_addr, p_state, p_tube, p_subject, p_header_from, p_arrived_at, p_run_at, p_priority, p_dedupe_key);
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
    p_arrived_at      timestamptz default now(),
    p_run_at          timestamptz default null,
    p_priority        int default 0,
    p_dedupe_key      text default null)
returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_inject (issue 18): the shard's, with the same
-- defaults, on the shard that owns p_tube. Returns the id the shard gave
-- (its top bits are the shard). PX070 when that shard does not answer.
declare
    v_shard int := pepsi_router.shard_of_tube(p_tube);
begin
    return pepsi_router.workqueue_inject_on(v_shard, p_stage, p_body, p_headers, p_envelope_sender, p_recipients,
        p_origin_user, p_origin_addr, p_state, p_tube, p_subject, p_header_from, p_arrived_at, p_run_at,
        p_priority, p_dedupe_key);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi_router.tube_pause_on(p_shard int, p_tube text, p_seconds int, p_now timestamptz)
returns timestamptz
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.tube_pause(p_tube, p_seconds, p_now);
$$;

create function pepsi.tube_pause(p_tube text, p_seconds int, p_now timestamptz default now())
returns timestamptz
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's tube_pause (issue 18): on the shard that owns p_tube.
declare
    v_shard int := pepsi_router.shard_of_tube(p_tube);
begin
    return pepsi_router.tube_pause_on(v_shard, p_tube, p_seconds, p_now);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

-- ---- split by tube ---------------------------------------------------------------

create function pepsi_router.workqueue_inject_batch_on(p_shard int, p_messages jsonb)
returns setof bigint
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_inject_batch(p_messages);
$$;

create function pepsi.workqueue_inject_batch(p_messages jsonb)
returns setof bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_inject_batch (issue 18): the elements (each
-- naming its tube, default 'default') grouped by the shard that owns
-- their tube, one call per shard in shard order, the ids returned in
-- input order. All or nothing per shard only: a shard's call commits on
-- that shard, so a refusal by a later shard leaves the earlier shards'
-- parts queued. A shard's error keeps its SQLSTATE and names the shard
-- and the element's place in the whole batch ("shard 1: message 7:
-- ..."). PX003 for what is not a JSON array, PX006 for an element whose
-- tube is not a tube name (before anything is sent), PX070 for a shard
-- that does not answer.
declare
    v_ids bigint[];
    v_part record;
    v_got bigint[];
    v_state text;
    v_msg text;
    v_n int;
begin
    if p_messages is null or jsonb_typeof(p_messages) <> 'array' then
        raise exception 'messages must be a JSON array' using errcode = 'PX003';
    end if;
    if jsonb_array_length(p_messages) = 0 then
        return;
    end if;
    select e.ord into v_n
      from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
     where not coalesce(pepsi.tube_name_valid(case when jsonb_typeof(e.m) = 'object' then coalesce(e.m->>'tube', 'default') end), false)
     order by e.ord limit 1;
    if v_n is not null then
        raise exception 'message %: not an object with a valid tube name', v_n using errcode = 'PX006';
    end if;
    v_ids := array_fill(null::bigint, array[jsonb_array_length(p_messages)]);
    for v_part in
        select s.shard, array_agg(s.ord order by s.ord) as ords, jsonb_agg(s.m order by s.ord) as messages
          from (select e.ord::int as ord, e.m, t.shard
                  from jsonb_array_elements(p_messages) with ordinality as e(m, ord)
                       -- the shard of each distinct tube, once: a batch names few tubes
                       join (select d.tube, pepsi_router.shard_of_tube(d.tube) as shard
                               from (select distinct coalesce(x.m->>'tube', 'default') as tube
                                       from jsonb_array_elements(p_messages) as x(m)) d) t
                         on t.tube = coalesce(e.m->>'tube', 'default')) s
         group by s.shard order by s.shard
    loop
        begin
            v_got := array(select i from pepsi_router.workqueue_inject_batch_on(v_part.shard, v_part.messages) i);
        exception when others then
            get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
            if v_state = 'XX000' then
                perform pepsi_router.unreachable(v_part.shard, v_msg);
            end if;
            -- PL/Proxy prefixes the shard's message ("f(2): [db] REMOTE
            -- ERROR: message 2: ..."); the element number is the shard's
            -- part's: give the element's place in the whole batch.
            v_msg := coalesce(substring(v_msg from 'REMOTE ERROR: (.*)$'), v_msg);
            v_n := (regexp_match(v_msg, '^message ([0-9]+):'))[1]::int;
            if v_n between 1 and cardinality(v_part.ords) then
                v_msg := regexp_replace(v_msg, '^message [0-9]+:', 'message ' || v_part.ords[v_n] || ':');
            end if;
            raise exception 'shard %: %', v_part.shard, v_msg using errcode = v_state;
        end;
        for v_n in 1 .. cardinality(v_part.ords) loop
            v_ids[v_part.ords[v_n]] := v_got[v_n];
        end loop;
    end loop;
    return query select u from unnest(v_ids) u;
end
$$;

-- ---- webhook events, by their provider's tube ---------------------------------------
-- An event goes to the shard of its provider's tube (a pulled provider's
-- tube column all the same, default 'default'), which the shards know
-- (pepsi.webhook_provider_tubes, asked of the first shard that answers:
-- every shard holds the same providers). pepsi-runner ingress with the
-- router as its CONNINFO calls these (router_ingress adds the rest of
-- what it calls), as may applications that store events themselves.

create function pepsi_router.webhook_provider_tubes_on(p_shard int, p_providers text[])
returns table (provider text, tube text)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select t.provider, t.tube from pepsi.webhook_provider_tubes(p_providers) t;
$$;

create function pepsi_router.webhook_provider_shards(p_providers text[])
returns table (provider text, shard int)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The shard of each named provider's tube (unknown providers: no row),
-- asked of shard 0, or of the next when it does not answer: one shard
-- down does not stop the others' webhooks. PX070 when none answers.
declare
    v_count int := (pepsi_router.routable()).shard_count;
    v_err text;
begin
    for v_n in 0 .. v_count - 1 loop
        begin
            return query select t.provider, pepsi_router.shard_of_tube(t.tube)
                           from pepsi_router.webhook_provider_tubes_on(v_n, p_providers) t;
            return;
        exception when sqlstate 'XX000' then
            v_err := sqlerrm;
        end;
    end loop;
    raise exception 'no shard answered for the webhook providers'' tubes: %', v_err using errcode = 'PX070';
end
$$;

create function pepsi_router.webhook_events_ingest_on(p_shard int, p_events jsonb, p_payloads bytea)
returns table (ord int, webhook_event_id bigint, outcome text, workqueue_id bigint)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select i.ord, i.webhook_event_id, i.outcome, i.workqueue_id from pepsi.webhook_events_ingest(p_events, p_payloads) i;
$$;

create function pepsi.webhook_events_ingest(p_events jsonb, p_payloads bytea default null)
returns table (ord int, webhook_event_id bigint, outcome text, workqueue_id bigint)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_events_ingest (issue 18): the burst split by the
-- shard of each event's provider's tube, each event's payload_length
-- bytes of p_payloads going with it, one call per shard in shard order;
-- one row per event in input order (ord: its place in the whole burst).
-- All or nothing per shard only. Refused before anything is sent: PX003
-- (not an array, an element not an object, payload lengths that do not
-- add up), PX011 (an unknown provider), PX012 (a payload_length that is
-- not a number); a shard's own error keeps its SQLSTATE and names the
-- shard and the event's place in the whole burst; PX070 a shard that
-- does not answer.
declare
    v_rows jsonb;
    v_part record;
    v_bad record;
    v_state text;
    v_msg text;
    v_n int;
begin
    if p_events is null or jsonb_typeof(p_events) <> 'array' then
        raise exception 'events must be a JSON array' using errcode = 'PX003';
    end if;
    if jsonb_array_length(p_events) = 0 then
        return;
    end if;
    -- Each event with its shard and the offset and length of its bytes in
    -- p_payloads; an event whose payload_length is not a number is left
    -- out here (and refused below).
    v_rows := (select jsonb_agg(jsonb_build_object('ord', x.ord, 'ev', x.ev, 'shard', x.shard, 'off', x.off,
                                                   'len', x.len) order by x.ord)
                 from (select e.ord, e.ev, s.shard,
                              sum(coalesce((e.ev->>'payload_length')::bigint, 0)) over (order by e.ord)
                                  - coalesce((e.ev->>'payload_length')::bigint, 0) as off,
                              (e.ev->>'payload_length')::bigint as len
                         from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
                              left join pepsi_router.webhook_provider_shards(
                                  array(select distinct x->>'provider' from jsonb_array_elements(p_events) x
                                         where jsonb_typeof(x) = 'object' and x->>'provider' is not null)) s
                                     on jsonb_typeof(e.ev) = 'object' and s.provider = e.ev->>'provider'
                        where jsonb_typeof(e.ev) <> 'object' or not (e.ev ? 'payload_length')
                           or (jsonb_typeof(e.ev->'payload_length') = 'number'
                               and (e.ev->>'payload_length') ~ '^[0-9]{1,10}$')) x);
    select min(e.ord) filter (where jsonb_typeof(e.ev) <> 'object') as not_object,
           min(e.ord) filter (where jsonb_typeof(e.ev) = 'object' and r.ord is null) as malformed,
           min(e.ord) filter (where r.shard is null and jsonb_typeof(e.ev) = 'object') as unknown,
           coalesce(sum(r.len), 0) as total
      into v_bad
      from jsonb_array_elements(p_events) with ordinality as e(ev, ord)
           left join jsonb_to_recordset(v_rows) as r(ord int, ev jsonb, shard int, off bigint, len bigint)
                  on r.ord = e.ord;
    if v_bad.not_object is not null then
        raise exception 'event % of the burst is not a JSON object', v_bad.not_object using errcode = 'PX003';
    end if;
    if v_bad.malformed is not null then
        raise exception 'event % of the burst is malformed', v_bad.malformed using errcode = 'PX012',
              detail = 'payload_length must be a number of bytes.';
    end if;
    if v_bad.unknown is not null then
        raise exception 'event %: unknown webhook provider "%"', v_bad.unknown,
              coalesce(p_events->(v_bad.unknown::int - 1)->>'provider', '<null>') using errcode = 'PX011';
    end if;
    if v_bad.total <> coalesce(octet_length(p_payloads), 0) then
        raise exception 'payload lengths add up to % bytes, the payloads have %', v_bad.total,
              coalesce(octet_length(p_payloads), 0) using errcode = 'PX003';
    end if;
    for v_part in
        select r.shard, array_agg(r.ord order by r.ord) as ords, jsonb_agg(r.ev order by r.ord) as events,
               string_agg(case when r.len is not null then substring(p_payloads from (r.off + 1)::int for r.len::int) end,
                          ''::bytea order by r.ord) as payloads
          from jsonb_to_recordset(v_rows) as r(ord int, ev jsonb, shard int, off bigint, len bigint)
         group by r.shard order by r.shard
    loop
        begin
            return query
            select v_part.ords[i.ord], i.webhook_event_id, i.outcome, i.workqueue_id
              from pepsi_router.webhook_events_ingest_on(v_part.shard, v_part.events, v_part.payloads) i;
        exception when others then
            get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text;
            if v_state = 'XX000' then
                perform pepsi_router.unreachable(v_part.shard, v_msg);
            end if;
            v_msg := coalesce(substring(v_msg from 'REMOTE ERROR: (.*)$'), v_msg);
            v_n := (regexp_match(v_msg, '^event ([0-9]+)'))[1]::int;
            if v_n between 1 and cardinality(v_part.ords) then
                v_msg := regexp_replace(v_msg, '^event [0-9]+', 'event ' || v_part.ords[v_n]);
            end if;
            raise exception 'shard %: %', v_part.shard, v_msg using errcode = v_state;
        end;
    end loop;
end
$$;

create function pepsi_router.webhook_event_ingest_on(p_shard int, p_provider text, p_external_id text,
                                                     p_payload bytea, p_headers jsonb, p_received_at timestamptz)
returns table (webhook_event_id bigint, outcome text, workqueue_id bigint)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select i.webhook_event_id, i.outcome, i.workqueue_id
      from pepsi.webhook_event_ingest(p_provider, p_external_id, p_payload, p_headers, p_received_at) i;
$$;

create function pepsi.webhook_event_ingest(
    p_provider    text,
    p_external_id text,
    p_payload     bytea,
    p_headers     jsonb default '{}',
    p_received_at timestamptz default now())
returns table (webhook_event_id bigint, outcome text, workqueue_id bigint)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_event_ingest (issue 18): on the shard of the
-- provider's tube. PX011 for an unknown provider (nothing sent), PX070
-- when that shard does not answer.
declare
    v_shard int := (select s.shard from pepsi_router.webhook_provider_shards(array[p_provider]) s);
begin
    if v_shard is null then
        raise exception 'unknown webhook provider "%"', coalesce(left(p_provider, 64), '<null>') using errcode = 'PX011';
    end if;
    return query select i.webhook_event_id, i.outcome, i.workqueue_id
                   from pepsi_router.webhook_event_ingest_on(v_shard, p_provider, p_external_id, p_payload,
                                                            p_headers, p_received_at) i;
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
end
$$;

-- ---- by id -----------------------------------------------------------------------

create function pepsi_router.workqueue_delete_on(p_shard int, p_ids bigint[], p_reason text, p_now timestamptz)
returns int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_delete(p_ids, p_reason, p_now);
$$;

create function pepsi_router.workqueue_retry_on(p_shard int, p_ids bigint[], p_now timestamptz)
returns int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_retry(p_ids, p_now);
$$;

create function pepsi_router.workqueue_reroute_on(p_shard int, p_ids bigint[], p_stage text, p_now timestamptz)
returns int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_reroute(p_ids, p_stage, p_now);
$$;

create function pepsi_router.workqueue_resume_on(p_shard int, p_ids bigint[], p_stage text, p_failure_class text,
                                                 p_tube text, p_statuses text[])
returns int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_resume(p_ids, p_stage, p_failure_class, p_tube, p_statuses::pepsi.workqueue_status[]);
$$;

create function pepsi_router.workqueue_resume_all(p_stage text, p_failure_class text, p_statuses text[])
returns setof int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select pepsi.workqueue_resume(null, p_stage, p_failure_class, null, p_statuses::pepsi.workqueue_status[]);
$$;

create function pepsi_router.by_shard(p_ids bigint[])
returns table (shard int, ids bigint[])
language sql stable
set search_path = pg_catalog, pg_temp
as $$
-- The ids grouped by their shard (id >> 48), in shard order, each group
-- in the order given. PX004 (before anything is sent) for an id no shard
-- can have given.
    select pepsi_router.shard_of_id(i.id), array_agg(i.id order by i.ord)
      from unnest(p_ids) with ordinality as i(id, ord)
     group by 1 order by 1
$$;

create function pepsi.workqueue_delete(p_ids bigint[], p_reason text, p_now timestamptz default now())
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_delete (issue 18): each shard deletes its own
-- ids (id >> 48), counts summed. All or nothing per shard only. NULL or
-- no ids: shard 0 answers as a shard does.
declare
    v record;
    v_shard int;
    v_total int := 0;
begin
    if p_ids is null or cardinality(p_ids) = 0 then
        v_shard := 0;
        return pepsi_router.workqueue_delete_on(0, p_ids, p_reason, p_now);
    end if;
    for v in select * from pepsi_router.by_shard(p_ids) loop
        v_shard := v.shard;
        v_total := v_total + pepsi_router.workqueue_delete_on(v.shard, v.ids, p_reason, p_now);
    end loop;
    return v_total;
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi.workqueue_retry(p_ids bigint[], p_now timestamptz default now())
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_retry (issue 18): per shard of the ids, summed.
declare
    v record;
    v_shard int;
    v_total int := 0;
begin
    if p_ids is null or cardinality(p_ids) = 0 then
        v_shard := 0;
        return pepsi_router.workqueue_retry_on(0, p_ids, p_now);
    end if;
    for v in select * from pepsi_router.by_shard(p_ids) loop
        v_shard := v.shard;
        v_total := v_total + pepsi_router.workqueue_retry_on(v.shard, v.ids, p_now);
    end loop;
    return v_total;
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi.workqueue_reroute(p_ids bigint[], p_stage text, p_now timestamptz default now())
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_reroute (issue 18): per shard of the ids, summed.
declare
    v record;
    v_shard int;
    v_total int := 0;
begin
    if p_ids is null or cardinality(p_ids) = 0 then
        v_shard := 0;
        return pepsi_router.workqueue_reroute_on(0, p_ids, p_stage, p_now);
    end if;
    for v in select * from pepsi_router.by_shard(p_ids) loop
        v_shard := v.shard;
        v_total := v_total + pepsi_router.workqueue_reroute_on(v.shard, v.ids, p_stage, p_now);
    end loop;
    return v_total;
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi.workqueue_resume(
    p_ids           bigint[] default null,
    p_stage         text default null,
    p_failure_class text default null,
    p_tube          text default null,
    p_statuses      pepsi.workqueue_status[] default '{failed,paused,timeout}')
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_resume (issue 18): with ids, per shard of the
-- ids (summed); with a tube and no ids, on the tube's shard; by filter
-- alone, on every shard (RUN ON ALL, summed). PX070 names a shard that
-- does not answer (for RUN ON ALL, PL/Proxy's message names its dbname).
declare
    v record;
    v_shard int;
    v_total int := 0;
begin
    if p_ids is null and p_tube is not null then
        v_shard := pepsi_router.shard_of_tube(p_tube);
        return pepsi_router.workqueue_resume_on(v_shard, null, p_stage, p_failure_class, p_tube, p_statuses::text[]);
    end if;
    if p_ids is null then
        v_shard := null;
        return coalesce((select sum(n)::int from pepsi_router.workqueue_resume_all(p_stage, p_failure_class,
                                                                                   p_statuses::text[]) n), 0);
    end if;
    if cardinality(p_ids) = 0 then
        v_shard := 0;
        return pepsi_router.workqueue_resume_on(0, p_ids, p_stage, p_failure_class, p_tube, p_statuses::text[]);
    end if;
    for v in select * from pepsi_router.by_shard(p_ids) loop
        v_shard := v.shard;
        v_total := v_total + pepsi_router.workqueue_resume_on(v.shard, v.ids, p_stage, p_failure_class, p_tube,
                                                              p_statuses::text[]);
    end loop;
    return v_total;
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi_router.workqueue_move_on(p_shard int, p_id bigint, p_from text, p_to text, p_via text[],
                                               p_max_hops int)
returns text
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select pepsi.workqueue_move(p_id, p_from, p_to, p_via, p_max_hops);
$$;

create function pepsi.workqueue_move(p_id bigint, p_from text, p_to text, p_via text[] default null,
                                     p_max_hops int default 1000)
returns text
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_move (issue 18): on the shard of p_id (workers
-- normally call their own shard; this is for tools that hold only ids).
declare
    v_shard int := pepsi_router.shard_of_id(p_id);
begin
    return pepsi_router.workqueue_move_on(v_shard, p_id, p_from, p_to, p_via, p_max_hops);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
    return null;
end
$$;

create function pepsi_router.workqueue_pause_on(p_shard int, p_id bigint, p_stage text, p_until timestamptz,
                                                p_reason text, p_state jsonb)
returns int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select 1 from pepsi.workqueue_pause(p_id, p_stage, p_until, p_reason, p_state);
$$;

create function pepsi.workqueue_pause(p_id bigint, p_stage text, p_until timestamptz, p_reason text default null,
                                      p_state jsonb default null)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_pause (issue 18): on the shard of p_id.
declare
    v_shard int := pepsi_router.shard_of_id(p_id);
begin
    perform pepsi_router.workqueue_pause_on(v_shard, p_id, p_stage, p_until, p_reason, p_state);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(v_shard, sqlerrm);
end
$$;

-- ---- on every shard ------------------------------------------------------------------
-- RUN ON ALL needs set-returning helpers; a void function answers 1 per
-- shard. PL/Proxy's error for a shard that does not answer names its
-- dbname: PX070 carries it.

create function pepsi_router.workqueue_purge_all(p_older_than interval, p_now timestamptz)
returns setof bigint language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select pepsi.workqueue_purge(p_older_than, p_now);
$$;

create function pepsi_router.workqueue_pause_stage_all(p_stage text, p_reason text)
returns setof boolean language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select pepsi.workqueue_pause_stage(p_stage, p_reason);
$$;

create function pepsi_router.workqueue_resume_stage_all(p_stage text)
returns setof boolean language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select pepsi.workqueue_resume_stage(p_stage);
$$;

create function pepsi_router.config_set_all(p_stage text, p_key text, p_value text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.config_set(p_stage, p_key, p_value);
$$;

create function pepsi_router.config_unset_all(p_stage text, p_key text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.config_unset(p_stage, p_key);
$$;

create function pepsi_router.config_remove_stage_all(p_stage text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.config_remove_stage(p_stage);
$$;

create function pepsi_router.config_clear_all(p_stage text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select pepsi.config_clear(p_stage);
$$;

create function pepsi_router.settings_set_all(p_address text, p_stage text, p_option text, p_value text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.settings_set(p_address, p_stage, p_option, p_value);
$$;

create function pepsi_router.settings_delete_all(p_address text, p_stage text, p_option text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select pepsi.settings_delete(p_address, p_stage, p_option);
$$;

create function pepsi.workqueue_purge(p_older_than interval, p_now timestamptz default now())
returns bigint
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_purge (issue 18): on every shard, summed.
begin
    return coalesce((select sum(n)::bigint from pepsi_router.workqueue_purge_all(p_older_than, p_now) n), 0);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
    return null;
end
$$;

create function pepsi.workqueue_pause_stage(p_stage text, p_reason text default null)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_pause_stage (issue 18): on every shard; true
-- when any shard's stage was not paused before.
begin
    return (select bool_or(b) from pepsi_router.workqueue_pause_stage_all(p_stage, p_reason) b);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
    return null;
end
$$;

create function pepsi.workqueue_resume_stage(p_stage text)
returns boolean
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's workqueue_resume_stage (issue 18): on every shard; true
-- when any shard's stage was paused.
begin
    return (select bool_or(b) from pepsi_router.workqueue_resume_stage_all(p_stage) b);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
    return null;
end
$$;

create function pepsi.config_set(p_stage text, p_key text, p_value text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's config_set (issue 18): the overlay is the same on every
-- shard, so every shard sets it (each in its own transaction).
begin
    perform count(*) from pepsi_router.config_set_all(p_stage, p_key, p_value);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
end
$$;

create function pepsi.config_unset(p_stage text, p_key text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's config_unset (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.config_unset_all(p_stage, p_key);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
end
$$;

create function pepsi.config_remove_stage(p_stage text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's config_remove_stage (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.config_remove_stage_all(p_stage);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
end
$$;

create function pepsi.config_clear(p_stage text default null)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's config_clear (issue 18): on every shard, rows summed.
begin
    return coalesce((select sum(n)::int from pepsi_router.config_clear_all(p_stage) n), 0);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
    return null;
end
$$;

create function pepsi.settings_set(p_address text, p_stage text, p_option text, p_value text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's settings_set (issue 18): on every shard (an address's
-- messages may be in any tube, hence on any shard).
begin
    perform count(*) from pepsi_router.settings_set_all(p_address, p_stage, p_option, p_value);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
end
$$;

create function pepsi.settings_delete(p_address text, p_stage text default null, p_option text default null)
returns int
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's settings_delete (issue 18): on every shard, rows summed.
begin
    return coalesce((select sum(n)::int from pepsi_router.settings_delete_all(p_address, p_stage, p_option) n), 0);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable(null, sqlerrm);
    return null;
end
$$;

-- ---- comments -------------------------------------------------------------------------

comment on function pepsi.workqueue_inject(text, bytea, text, text, text[], text, inet, jsonb, text, text, text,
                                           timestamptz, timestamptz, int, text) is
    'Router (issue 18): the shard''s workqueue_inject with the same defaults, on the shard that owns p_tube; returns the shard''s id (id >> 48 is the shard). PX070 when that shard does not answer; the shard''s own errors as they are.';
comment on function pepsi.workqueue_inject_batch(jsonb) is
    'Router (issue 18): the batch split by the shard of each element''s tube, one call per shard; ids in input order. All or nothing per shard only. PX003 not an array, PX006 a bad tube (nothing sent), a shard''s error prefixed "shard N:" with the element''s place in the whole batch, PX070 a shard that does not answer.';
comment on function pepsi.tube_pause(text, int, timestamptz) is
    'Router (issue 18): the shard''s tube_pause on the shard that owns p_tube. PX070 when it does not answer.';
comment on function pepsi.workqueue_delete(bigint[], text, timestamptz) is
    'Router (issue 18): workqueue_delete on the shard of each id (id >> 48), counts summed; all or nothing per shard only. PX004 an id no shard gives (nothing sent), PX070 a shard that does not answer.';
comment on function pepsi.workqueue_retry(bigint[], timestamptz) is
    'Router (issue 18): workqueue_retry on the shard of each id, counts summed; all or nothing per shard only. PX004, PX070.';
comment on function pepsi.workqueue_reroute(bigint[], text, timestamptz) is
    'Router (issue 18): workqueue_reroute on the shard of each id, counts summed; all or nothing per shard only. PX004, PX070.';
comment on function pepsi.workqueue_resume(bigint[], text, text, text, pepsi.workqueue_status[]) is
    'Router (issue 18): workqueue_resume on the shard of each id; with a tube and no ids on its shard; by filter alone on every shard (RUN ON ALL); counts summed. PX004, PX070.';
comment on function pepsi.workqueue_move(bigint, text, text, text[], int) is
    'Router (issue 18): workqueue_move on the shard of p_id. PX004, PX070.';
comment on function pepsi.workqueue_pause(bigint, text, timestamptz, text, jsonb) is
    'Router (issue 18): workqueue_pause on the shard of p_id. PX004, PX070.';
comment on function pepsi.workqueue_purge(interval, timestamptz) is
    'Router (issue 18): workqueue_purge on every shard (RUN ON ALL), rows summed. PX070 when a shard does not answer.';
comment on function pepsi.workqueue_pause_stage(text, text) is
    'Router (issue 18): workqueue_pause_stage on every shard; true when it paused the stage on any. PX070.';
comment on function pepsi.workqueue_resume_stage(text) is
    'Router (issue 18): workqueue_resume_stage on every shard; true when the stage was paused on any. PX070.';
comment on function pepsi.config_set(text, text, text) is
    'Router (issue 18): config_set on every shard (each in its own transaction; the overlay is the same everywhere). PX044 as on a shard, PX070.';
comment on function pepsi.config_unset(text, text) is
    'Router (issue 18): config_unset on every shard. PX044, PX070.';
comment on function pepsi.config_remove_stage(text) is
    'Router (issue 18): config_remove_stage on every shard. PX044, PX070.';
comment on function pepsi.config_clear(text) is
    'Router (issue 18): config_clear on every shard, rows summed. PX070.';
comment on function pepsi.settings_set(text, text, text, text) is
    'Router (issue 18): settings_set on every shard (an address''s messages may be on any). PX070.';
comment on function pepsi.settings_delete(text, text, text) is
    'Router (issue 18): settings_delete on every shard, rows summed. PX070.';
comment on function pepsi.webhook_events_ingest(jsonb, bytea) is
    'Router (issue 18): the burst split by the shard of each event''s provider''s tube, payload bytes with their events, one call per shard; rows in input order. All or nothing per shard only. PX003, PX011, PX012 before anything is sent; a shard''s error prefixed "shard N:" with the event''s place in the whole burst; PX070.';
comment on function pepsi.webhook_event_ingest(text, text, bytea, jsonb, timestamptz) is
    'Router (issue 18): webhook_event_ingest on the shard of the provider''s tube. PX011 unknown provider (nothing sent), PX070.';
comment on function pepsi_router.webhook_provider_shards(text[]) is
    'Internal (issue 18): the shard of each named provider''s tube, asked of the first shard that answers; PX070 when none does.';
comment on function pepsi_router.by_shard(bigint[]) is
    'Internal (issue 18): ids grouped by their shard (id >> 48), shard order; PX004 for an id no shard gives.';

do $$
declare
    v record;
begin
    for v in select p.oid::regprocedure as fn, p.proname, p.proname like '%\_all' as every
               from pg_catalog.pg_proc p
              where p.pronamespace = 'pepsi_router'::regnamespace and p.prolang = (select oid from pg_catalog.pg_language where lanname = 'plproxy')
                and p.proname <> 'shard_identity_on' loop
        execute format('comment on function %s is %L', v.fn,
                       format('Internal (issue 18): PL/Proxy call of pepsi.%s %s.',
                              regexp_replace(v.proname, '_(on|all)$', ''),
                              case when v.every then 'on every shard (RUN ON ALL)' else 'on shard p_shard (RUN ON p_shard)' end));
    end loop;
end
$$;

-- ---- grants: the shard's, for the public functions and their helpers -------------------

do $$
declare
    v record;
begin
    for v in
        select p.oid::regprocedure as fn,
               case when p.proname in ('workqueue_inject', 'workqueue_inject_batch', 'workqueue_inject_on',
                                       'workqueue_inject_batch_on')
                    then 'pepsi_ingress, pepsi_worker'
                    when p.proname in ('webhook_events_ingest', 'webhook_event_ingest', 'webhook_events_ingest_on',
                                       'webhook_event_ingest_on', 'webhook_provider_tubes_on', 'webhook_provider_shards')
                    then 'pepsi_ingress'
                    when p.proname in ('workqueue_move', 'workqueue_pause', 'workqueue_move_on', 'workqueue_pause_on')
                    then 'pepsi_worker'
                    when p.proname in ('unreachable', 'by_shard')
                    then 'pepsi_ingress, pepsi_worker, pepsi_operator'
                    else 'pepsi_operator' end as who
          from pg_catalog.pg_proc p
         where (p.pronamespace = 'pepsi'::regnamespace
                and p.proname in ('workqueue_inject', 'workqueue_inject_batch', 'tube_pause', 'workqueue_delete',
                                  'webhook_events_ingest', 'webhook_event_ingest',
                                  'workqueue_retry', 'workqueue_reroute', 'workqueue_resume', 'workqueue_move',
                                  'workqueue_pause', 'workqueue_purge', 'workqueue_pause_stage',
                                  'workqueue_resume_stage', 'config_set', 'config_unset', 'config_remove_stage',
                                  'config_clear', 'settings_set', 'settings_delete'))
            or (p.pronamespace = 'pepsi_router'::regnamespace
                and (p.proname like '%\_on' or p.proname like '%\_all'
                     or p.proname in ('unreachable', 'by_shard', 'webhook_provider_shards'))
                and p.proname <> 'shard_identity_on')
    loop
        execute format('revoke all on function %s from public', v.fn);
        execute format('grant execute on function %s to %s', v.fn, v.who);
    end loop;
end
$$;
-- tube_pause is also the runner role's on a shard (issue 14).
grant execute on function pepsi.tube_pause(text, int, timestamptz),
    pepsi_router.tube_pause_on(int, text, int, timestamptz) to pepsi_runner;

commit;
