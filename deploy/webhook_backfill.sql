-- Deploy pepsi:webhook_backfill to pg
-- requires: webhook_gaps
-- requires: webhook_ingest
-- requires: workqueue_inject
--
-- Back-fill (W-33..W-35): a gap that has no tombstone and is still missing
-- after a retry (later passes re-checked it, and the provider's
-- retry_after has passed) becomes a request to the provider's API for
-- that one id. The request is an ordinary message at the provider's
-- back-fill stage, state {"backfill": true, "webhook_provider": ...,
-- "external_id": ...}, so it is retried, paused, failed and resumed like
-- any other; the built-in http stage in GET mode runs it
-- (pepsi-stage-http, METHOD = GET, URL = https://api.../events/{external_id})
-- and hands the answer to webhook_backfill_store:
--   the event (2xx with a body)  stored through the same upsert as a
--                                delivery (webhook_events_ingest): a new
--                                event becomes exactly one message; if the
--                                original delivery arrived meanwhile, or
--                                arrives later, the upsert keys on
--                                (provider, external_id) and no second
--                                message is ever made (W-34)
--   nothing (404, 410, empty)    a tombstone with the reason (W-35)
-- Authenticity: an API answer carries no webhook signature. It is trusted
-- because the stage fetched it itself, from the URL the operator
-- configured, over TLS with the certificate chain and host name verified
-- (libcurl's defaults; https:// is for production, http:// for tests),
-- with the operator's API credential (AUTHORIZATION); and because the
-- answer must name the id that was asked for where the provider's id
-- source can show it (json:<path>: that field; sha256: the body's digest).

begin;

create function pepsi.webhook_backfill_inject(p_provider text, p_external_id text, p_stage text, p_tube text,
                                              p_now timestamptz)
returns bigint
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Queues one back-fill request (internal: webhook_backfill_request and the
-- passes call it). No body; origin user backfill:<provider>, so fair
-- scheduling shares the back-fill stage between providers. NOTIFY
-- workqueue (folded per transaction). Returns the message id.
-- Tables: workqueue (insert).
    select pepsi.workqueue_inject(
               p_stage => p_stage, p_tube => p_tube, p_origin_user => 'backfill:' || p_provider,
               p_state => jsonb_build_object('backfill', true, 'webhook_provider', p_provider,
                                             'external_id', p_external_id),
               p_arrived_at => p_now)
$$;

create function pepsi.webhook_backfill_request(p_provider text, p_external_id text, p_now timestamptz default now())
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators: asks the provider's API for p_external_id now, whether
-- or not a pass found it missing (the id may lie outside the sequence).
-- The request goes to the provider's back-fill stage and tube
-- (webhook_id_sequence_set). The id's gap row records the request (one is
-- made if needed). Returns the message id.
-- Raises PX003 (a NULL p_now), PX011 (unknown provider), PX012 (bad id),
-- PX020 (the event is stored), PX021 (no back-fill stage for the provider).
-- Tables: webhook_gaps (insert, update), workqueue (insert).
declare
    v_seq pepsi.webhook_id_sequence;
    v_id bigint;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    if not exists (select 1 from pepsi.webhook_provider p where p.provider = p_provider) then
        raise exception 'unknown webhook provider "%"', pepsi.excerpt(p_provider) using errcode = 'PX011';
    end if;
    if p_external_id is null or p_external_id = '' or octet_length(p_external_id) > 1024 then
        raise exception 'invalid external id "%"', pepsi.excerpt(p_external_id) using errcode = 'PX012';
    end if;
    select * into v_seq from pepsi.webhook_id_sequence s where s.provider = p_provider;
    if not found or v_seq.backfill_stage is null then
        raise exception 'webhook provider "%" has no back-fill stage', p_provider
            using errcode = 'PX021', hint = 'Set one with webhook_id_sequence_set(..., p_backfill_stage => ...).';
    end if;
    if exists (select 1 from pepsi.webhook_events e where e.provider = p_provider and e.external_id = p_external_id) then
        raise exception 'event "%" of webhook provider "%" is stored; nothing to back-fill', p_external_id, p_provider
            using errcode = 'PX020';
    end if;
    v_id := pepsi.webhook_backfill_inject(p_provider, p_external_id, v_seq.backfill_stage, v_seq.backfill_tube, p_now);
    insert into pepsi.webhook_gaps as g (provider, external_id, number, state, first_seen_at, checked_at,
                                         attempts, workqueue_id, requested_at)
    values (p_provider, p_external_id,
            pepsi.webhook_external_id_number(v_seq.kind, v_seq.prefix, v_seq.width, p_external_id),
            'backfill', p_now, p_now, 1, v_id, p_now)
    on conflict on constraint webhook_gaps_pkey do update
       set state = 'backfill', attempts = g.attempts + 1, workqueue_id = v_id, requested_at = p_now,
           checked_at = p_now, resolved_at = null, detail = 'requested by an operator';
    return v_id;
end
$$;

create function pepsi.webhook_backfill_due(p_now timestamptz default now(), p_limit int default 1000)
returns table (kind text, provider text, external_id text, action text, workqueue_id bigint, detail jsonb)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- One step of each reconciliation pass, after webhook_gaps_recheck (so
-- every unresolved gap is still missing):
--   open gaps first seen at least retry_after ago, of a provider with a
--   back-fill stage: a back-fill request each (W-33; "after a retry":
--   the gap was recorded by an earlier pass and re-checked since);
--   back-fill requests whose message is gone without an answer (a stage
--   that is not the http stage in GET mode, an operator's delete): asked
--   again up to max_attempts, then failed;
--   back-fill requests whose message failed or timed out: failed (the
--   message stays for an operator; resuming it still stores the answer).
-- At most p_limit requests a pass. Returns one row per request made
-- (kind backfill, action backfill_requested) or failure (kind
-- backfill_failed, action flagged).
-- Tables: webhook_gaps (update), workqueue (insert; read),
-- webhook_id_sequence (read).
declare
    v_gap record;
    v_id bigint;
    v_n int := 0;
begin
    if p_limit is null or p_limit < 0 then
        raise exception 'invalid limit %', coalesce(p_limit::text, '<null>') using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    -- Requests whose message failed, timed out or vanished.
    for v_gap in
        select g.provider, g.external_id, g.attempts, g.workqueue_id, s.max_attempts, s.backfill_stage,
               s.backfill_tube, w.status::text as status, w.state->>'last_error' as last_error
          from pepsi.webhook_gaps g
          join pepsi.webhook_id_sequence s on s.provider = g.provider
          left join pepsi.workqueue w on w.workqueue_id = g.workqueue_id
         where g.state = 'backfill'
           and (w.workqueue_id is null or w.status in ('failed', 'timeout'))
         order by g.provider, g.number
           for update of g
    loop
        if v_gap.status is null and v_gap.attempts < v_gap.max_attempts and v_gap.backfill_stage is not null
           and v_n < p_limit then
            v_id := pepsi.webhook_backfill_inject(v_gap.provider, v_gap.external_id, v_gap.backfill_stage,
                                                  v_gap.backfill_tube, p_now);
            v_n := v_n + 1;
            update pepsi.webhook_gaps g
               set attempts = g.attempts + 1, workqueue_id = v_id, requested_at = p_now, checked_at = p_now,
                   detail = 'the previous request ended without an answer'
             where g.provider = v_gap.provider and g.external_id = v_gap.external_id;
            return query select 'backfill'::text, v_gap.provider, v_gap.external_id, 'backfill_requested'::text, v_id,
                                jsonb_build_object('attempt', v_gap.attempts + 1);
        elsif v_gap.status is not null or v_gap.attempts >= v_gap.max_attempts then
            update pepsi.webhook_gaps g
               set state = 'failed', checked_at = p_now,
                   detail = coalesce(v_gap.last_error, 'no answer after ' || v_gap.attempts || ' request(s)')
             where g.provider = v_gap.provider and g.external_id = v_gap.external_id;
            return query select 'backfill_failed'::text, v_gap.provider, v_gap.external_id, 'flagged'::text,
                                v_gap.workqueue_id,
                                jsonb_build_object('attempts', v_gap.attempts, 'message_status', v_gap.status,
                                                   'last_error', v_gap.last_error);
        end if;
    end loop;
    -- Open gaps that are due.
    for v_gap in
        select g.provider, g.external_id, s.backfill_stage, s.backfill_tube
          from pepsi.webhook_gaps g
          join pepsi.webhook_id_sequence s on s.provider = g.provider
         where g.state = 'open'
           and s.enabled and s.backfill_stage is not null
           and g.first_seen_at <= p_now - s.retry_after
           and g.checked_at < p_now
         order by g.provider, g.number
         limit greatest(p_limit - v_n, 0)
           for update of g
    loop
        v_id := pepsi.webhook_backfill_inject(v_gap.provider, v_gap.external_id, v_gap.backfill_stage,
                                              v_gap.backfill_tube, p_now);
        update pepsi.webhook_gaps g
           set state = 'backfill', attempts = g.attempts + 1, workqueue_id = v_id, requested_at = p_now,
               checked_at = p_now
         where g.provider = v_gap.provider and g.external_id = v_gap.external_id;
        return query select 'backfill'::text, v_gap.provider, v_gap.external_id, 'backfill_requested'::text, v_id,
                            jsonb_build_object('attempt', 1);
    end loop;
    -- The others were looked at too.
    update pepsi.webhook_gaps g set checked_at = p_now
     where g.resolved_at is null and g.state = 'open' and g.checked_at < p_now;
end
$$;

create function pepsi.webhook_backfill_check_id(p_id_source text, p_external_id text, p_payload bytea)
returns void
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises PX023 unless the back-fill answer p_payload is the event
-- p_external_id, as far as the provider's id source shows it:
-- json:<path> (the field, a string or an integer, must equal the id),
-- sha256 (the hex SHA-256 of the answer must be the id). header:<Name>:
-- the id is not in the body, nothing to compare.
declare
    v_found text;
begin
    if p_id_source like 'json:%' then
        begin
            v_found := convert_from(p_payload, 'UTF8')::jsonb #>> string_to_array(substr(p_id_source, 6), '.');
        exception when others then
            raise exception 'the back-fill answer for "%" is not JSON', p_external_id using errcode = 'PX023';
        end;
        if v_found is distinct from p_external_id then
            raise exception 'the back-fill answer for "%" is the event "%"', p_external_id, coalesce(v_found, '<none>')
                using errcode = 'PX023';
        end if;
    elsif p_id_source = 'sha256' and encode(sha256(p_payload), 'hex') <> p_external_id then
        raise exception 'the back-fill answer for "%" does not hash to that id', p_external_id using errcode = 'PX023';
    end if;
end
$$;

create function pepsi.webhook_backfill_store(
    p_id          bigint,
    p_stage       text,
    p_http_status int,
    p_payload     bytea,
    p_headers     jsonb default '{}',
    p_now         timestamptz default now())
returns text
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The answer to back-fill request p_id, running at p_stage: called by the
-- http stage in GET mode before it finishes the message (an answer stored
-- twice, after a crash between the two calls, changes nothing).
--   2xx with a body: the event; checked to be the id asked for
--     (webhook_backfill_check_id), then stored with webhook_events_ingest,
--     the deliveries' upsert, with p_headers (the answer's content type
--     and where it came from) and received_at p_now. Returns its outcome:
--     new (stored now, and queued for a pipeline provider: exactly one
--     message), refreshed or processed (the original delivery got there
--     first: no second message), busy (a puller holds it). The gap is
--     resolved as found.
--   404, 410, or 2xx without a body: the provider has no such event.
--     A tombstone with the reason, unless the event was stored meanwhile
--     (then 'arrived'). Returns tombstoned or arrived.
-- Raises PX003 (a NULL p_now, headers not an object, an answer over
-- input_limit('body'): see webhook_events_ingest), PX004/PX005 (not
-- running at p_stage), PX011 (the provider is gone), PX022 (not a
-- back-fill message), PX023 (the answer is another event, or a status
-- that is not an answer).
-- Tables: webhook_events, workqueue, workqueue_body (via
-- webhook_events_ingest), webhook_tombstones (insert), webhook_gaps
-- (update); workqueue, webhook_provider (read).
declare
    v_state jsonb;
    v_provider text;
    v_external_id text;
    v_id_source text;
    v_outcome text;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select w.state into v_state from pepsi.workqueue w
     where w.workqueue_id = p_id and w.status = 'running' and w.stage = p_stage;
    if not found then
        perform pepsi.workqueue_refuse(p_id, p_stage);
    end if;
    v_provider := v_state->>'webhook_provider';
    v_external_id := v_state->>'external_id';
    if v_state->'backfill' is distinct from 'true'::jsonb or v_provider is null or v_external_id is null then
        raise exception 'message % is not a back-fill request', p_id using errcode = 'PX022';
    end if;
    select p.id_source into v_id_source from pepsi.webhook_provider p where p.provider = v_provider;
    if not found then
        raise exception 'unknown webhook provider "%"', v_provider using errcode = 'PX011';
    end if;
    if p_headers is null or jsonb_typeof(p_headers) <> 'object' then
        raise exception 'headers must be a JSON object' using errcode = 'PX003';
    end if;

    if p_http_status between 200 and 299 and octet_length(p_payload) > 0 then
        perform pepsi.webhook_backfill_check_id(v_id_source, v_external_id, p_payload);
        select i.outcome into v_outcome
          from pepsi.webhook_events_ingest(
                   jsonb_build_array(jsonb_build_object(
                       'provider', v_provider, 'external_id', v_external_id, 'headers', p_headers,
                       'received_at', p_now, 'payload_length', octet_length(p_payload))),
                   p_payload) i;
        update pepsi.webhook_gaps g
           set state = 'found', resolved_at = p_now, checked_at = p_now, detail = 'back-fill: ' || v_outcome
         where g.provider = v_provider and g.external_id = v_external_id and g.resolved_at is null;
        return v_outcome;
    end if;
    if not (p_http_status in (404, 410) or p_http_status between 200 and 299) then
        raise exception 'HTTP % is not an answer to a back-fill request', coalesce(p_http_status::text, '<null>')
            using errcode = 'PX023';
    end if;
    if exists (select 1 from pepsi.webhook_events e where e.provider = v_provider and e.external_id = v_external_id) then
        update pepsi.webhook_gaps g
           set state = 'arrived', resolved_at = p_now, checked_at = p_now,
               detail = 'delivered while the back-fill found nothing'
         where g.provider = v_provider and g.external_id = v_external_id and g.resolved_at is null;
        return 'arrived';
    end if;
    insert into pepsi.webhook_tombstones (provider, external_id, reason, source, created_at)
    values (v_provider, v_external_id,
            format('back-fill: the provider''s API answered HTTP %s for this id', p_http_status), 'backfill', p_now)
    on conflict (provider, external_id) do nothing;
    update pepsi.webhook_gaps g
       set state = 'tombstoned', resolved_at = p_now, checked_at = p_now,
           detail = format('back-fill: HTTP %s', p_http_status)
     where g.provider = v_provider and g.external_id = v_external_id and g.resolved_at is null;
    return 'tombstoned';
end
$$;

revoke all on function pepsi.webhook_backfill_inject(text, text, text, text, timestamptz) from public;
revoke all on function pepsi.webhook_backfill_request(text, text, timestamptz) from public;
grant execute on function pepsi.webhook_backfill_request(text, text, timestamptz) to pepsi_operator;
revoke all on function pepsi.webhook_backfill_due(timestamptz, int) from public;
revoke all on function pepsi.webhook_backfill_check_id(text, text, bytea) from public;
revoke all on function pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz) from public;
grant execute on function pepsi.webhook_backfill_store(bigint, text, int, bytea, jsonb, timestamptz) to pepsi_worker;

commit;
