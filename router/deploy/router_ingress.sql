-- Deploy pepsi_router:router_ingress to pg
-- requires: router_api
--
-- What `pepsi-runner ingress` calls besides the ingest upsert, on the
-- router (issue 18), so that the ingress runs unchanged with its CONNINFO
-- pointing at the router:
--   schema_api()            RUN ON ALL: the API range every shard serves
--                           (level = min(level), oldest = max(oldest));
--                           PX073 when the shards' ranges do not overlap.
--   webhook_provider_list() RUN ON ALL: the shards' list, PX073 when the
--                           shards' providers differ (definition, secrets,
--                           tube, enabled): the ingress verifies with the
--                           router's list and each event is stored on the
--                           shard of its provider's tube, so a provider
--                           must be the same on every shard.
--   ingress_stats_flush()   on ONE shard: shard 0, or the next shard that
--                           answers when it does not (the counters are
--                           rates for the anomaly checks, not a ledger;
--                           one shard down must not stop the other
--                           shards' webhooks, and the ingress flushes its
--                           burst counters in the ingest's statement).
-- And for operators, the provider configuration on every shard (RUN ON
-- ALL, each shard in its own transaction: a shard that refuses or does not
-- answer leaves the shards different, which webhook_provider_list then
-- refuses until the call is repeated): webhook_provider_add, _change,
-- _add_secret, _retire_secret, _disable, _enable. As on a shard, no duty
-- role may execute them (the schema owner only).
-- Through the router nothing NOTIFYs webhook_provider_changed on the
-- ingress's connection (the shards notify their own listeners): after a
-- provider change, reload the ingress (SIGHUP), or wait for its
-- RELOAD_INTERVAL (default 5 minutes).
-- A shard that does not answer: PX070 naming it (a RUN ON ALL call's
-- error names the shard's database only: pepsi_router.unreachable_which
-- asks each shard in turn which one it is).

begin;

-- The routed functions need the shard count (routable: PX041 before
-- cluster_apply); webhook_provider_shards, granted to pepsi_ingress, calls
-- it too. It reads pepsi_router.topology, which only pepsi_reader may
-- select: security definer (its search_path is pinned), so that a login
-- that is only pepsi_ingress may route.
alter function pepsi_router.routable() security definer;
grant execute on function pepsi_router.routable() to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader, pepsi_operator;
-- The routed functions (SECURITY INVOKER) call shard_of_tube and
-- shard_of_id, granted to pepsi_reader alone by router_topology: a login
-- that is only pepsi_ingress (the ingress, an application that injects)
-- got "permission denied for function shard_of_tube" (e2e 91).
grant execute on function pepsi_router.shard_of_tube(text), pepsi_router.shard_of_id(bigint)
    to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_operator;

create function pepsi_router.ping_on(p_shard int)
returns setof int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select 1;
$$;

create function pepsi_router.unreachable_which(p_error text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- After a RUN ON ALL call failed to reach a shard (PL/Proxy's XX000,
-- naming the shard's database only): asks each shard in turn and raises
-- PX070 naming the first that does not answer; PX070 with p_error when
-- all answer now.
declare
    v_count int := (pepsi_router.routable()).shard_count;
begin
    for v_n in 0 .. v_count - 1 loop
        begin
            perform count(*) from pepsi_router.ping_on(v_n);
        exception when sqlstate 'XX000' then
            perform pepsi_router.unreachable(v_n, sqlerrm);
        end;
    end loop;
    raise exception 'a shard did not answer: %', p_error using errcode = 'PX070';
end
$$;

-- ---- schema_api ------------------------------------------------------------------------

create function pepsi_router.schema_api_all()
returns table (level int, oldest int)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select a.level, a.oldest from pepsi.schema_api() a;
$$;

create function pepsi.schema_api(out level int, out oldest int)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's schema_api (issue 18): the API levels every shard serves,
-- asked of all shards at once: level the lowest shard's level, oldest the
-- highest shard's oldest, so a program that passes this check passes each
-- shard's. PX073 when no level is served by every shard (a shard upgraded
-- past what another still serves: finish the upgrade), PX070 a shard that
-- does not answer, PX041 before cluster_apply. Columns and types are the
-- shard's (pepsi-runner reads level and oldest).
declare
    v_ranges text;
begin
    perform pepsi_router.routable();
    begin
        select min(a.level), max(a.oldest), string_agg(distinct a.oldest || '..' || a.level, ', ')
          into level, oldest, v_ranges
          from pepsi_router.schema_api_all() a;
    exception when sqlstate 'XX000' then
        perform pepsi_router.unreachable_which(sqlerrm);
    end;
    if level is null or oldest is null or oldest > level then
        raise exception 'the shards serve no common API level: they serve levels %', coalesce(v_ranges, 'none')
              using errcode = 'PX073',
                    hint = 'Deploy the same plan on every shard (sqitch deploy), README "Upgrading".';
    end if;
end
$$;

-- ---- webhook_provider_list ------------------------------------------------------------

create function pepsi_router.webhook_provider_list_all()
returns table (provider text, scheme text, secrets jsonb, tolerance_s bigint, id_source text,
               signature_header text, signature_encoding text, signature_prefix text, tube text)
language plproxy
as $$
    cluster 'pepsi_shards';
    run on all;
    select l.provider, l.scheme, l.secrets, l.tolerance_s, l.id_source, l.signature_header, l.signature_encoding,
           l.signature_prefix, t.tube
      from pepsi.webhook_provider_list() l
           left join pepsi.webhook_provider_tubes(array(select x.provider from pepsi.webhook_provider_list() x)) t
                  on t.provider = l.provider;
$$;

create function pepsi.webhook_provider_list()
returns table (provider text, scheme text, secrets jsonb, tolerance_s bigint, id_source text,
               signature_header text, signature_encoding text, signature_prefix text)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_list (issue 18): the shard's columns,
-- read on every shard at once; the list when every shard has the same
-- enabled providers with the same definition, secrets and tube, PX073
-- naming the providers that differ otherwise (never their secrets): the
-- ingress verifies a request with this list and its event is stored on
-- the shard of the provider's tube. PX070 a shard that does not answer,
-- PX041 before cluster_apply. pepsi_ingress alone (it returns secrets).
declare
    v_count int := (pepsi_router.routable()).shard_count;
    v_rows jsonb;
    v_bad text;
begin
    begin
        v_rows := coalesce((select jsonb_agg(to_jsonb(a)) from pepsi_router.webhook_provider_list_all() a), '[]');
    exception when sqlstate 'XX000' then
        perform pepsi_router.unreachable_which(sqlerrm);
    end;
    -- A shard lists a provider once: a row found on every shard is there
    -- v_count times.
    select string_agg(format('"%s"', g.p), ', ' order by g.p) into v_bad
      from (select distinct e->>'provider' as p
              from jsonb_array_elements(v_rows) e group by e having count(*) <> v_count) g;
    if v_bad is not null then
        raise exception 'the shards'' webhook providers differ: % not the same on every shard', v_bad
              using errcode = 'PX073',
                    detail = 'Compared: enabled or not, scheme, secrets, tolerance, id source, signature options, tube.',
                    hint = 'Configure providers through the router (webhook_provider_add, _change, ... run on every shard), then reload the ingress (SIGHUP).';
    end if;
    return query
    select distinct r.provider, r.scheme, r.secrets, r.tolerance_s, r.id_source, r.signature_header,
           r.signature_encoding, r.signature_prefix
      from jsonb_to_recordset(v_rows) as r(provider text, scheme text, secrets jsonb, tolerance_s bigint,
                                            id_source text, signature_header text, signature_encoding text,
                                            signature_prefix text)
     order by r.provider;
end
$$;

-- ---- ingress_stats_flush ---------------------------------------------------------------

create function pepsi_router.ingress_stats_flush_on(p_shard int, p_instance text, p_deltas jsonb, p_now timestamptz)
returns setof int
language plproxy
as $$
    cluster 'pepsi_shards';
    run on p_shard;
    select 1 from pepsi.ingress_stats_flush(p_instance, p_deltas, p_now);
$$;

create function pepsi.ingress_stats_flush(p_instance text, p_deltas jsonb, p_now timestamptz default now())
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's ingress_stats_flush (issue 18): the counters of an ingress
-- that runs through the router go to ONE shard, shard 0, or when it does
-- not answer the next shard that does (they are rates for that shard's
-- anomaly checks, not a ledger; a shard down must not fail the other
-- shards' bursts, whose statement flushes them). Its own transaction
-- there: they do not commit with the events (which commit on their
-- shards). The shard's errors (PX003) as they are; PX070 when no shard
-- answers.
declare
    v_count int := (pepsi_router.routable()).shard_count;
    v_err text;
begin
    for v_n in 0 .. v_count - 1 loop
        begin
            perform count(*) from pepsi_router.ingress_stats_flush_on(v_n, p_instance, p_deltas, p_now);
            return;
        exception when sqlstate 'XX000' then
            v_err := sqlerrm;
        end;
    end loop;
    raise exception 'no shard answered for the ingress counters: %', v_err using errcode = 'PX070';
end
$$;

-- ---- provider configuration, on every shard ---------------------------------------------

create function pepsi_router.webhook_provider_add_all(p_provider text, p_scheme text, p_secrets text[], p_stage text,
    p_tube text, p_id_source text, p_tolerance interval, p_signature_header text, p_signature_encoding text,
    p_signature_prefix text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_add(p_provider, p_scheme, p_secrets, p_stage, p_tube, p_id_source, p_tolerance,
        p_signature_header, p_signature_encoding, p_signature_prefix);
$$;

create function pepsi_router.webhook_provider_change_all(p_provider text, p_changes jsonb)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_change(p_provider, p_changes);
$$;

create function pepsi_router.webhook_provider_add_secret_all(p_provider text, p_secret text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_add_secret(p_provider, p_secret);
$$;

create function pepsi_router.webhook_provider_retire_secret_all(p_provider text, p_secret text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_retire_secret(p_provider, p_secret);
$$;

create function pepsi_router.webhook_provider_disable_all(p_provider text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_disable(p_provider);
$$;

create function pepsi_router.webhook_provider_enable_all(p_provider text)
returns setof int language plproxy as $$
    cluster 'pepsi_shards'; run on all;
    select 1 from pepsi.webhook_provider_enable(p_provider);
$$;

create function pepsi.webhook_provider_add(
    p_provider           text,
    p_scheme             text,
    p_secrets            text[],
    p_stage              text default null,
    p_tube               text default 'default',
    p_id_source          text default null,
    p_tolerance          interval default interval '5 minutes',
    p_signature_header   text default null,
    p_signature_encoding text default null,
    p_signature_prefix   text default null)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_add (issue 18): on every shard (RUN ON
-- ALL), each in its own transaction. The shard's errors (PX010) as they
-- are, PX070 a shard that does not answer; either may leave the shards
-- different (webhook_provider_list refuses them, PX073) until repeated
-- where it failed.
begin
    perform count(*) from pepsi_router.webhook_provider_add_all(p_provider, p_scheme, p_secrets, p_stage, p_tube,
        p_id_source, p_tolerance, p_signature_header, p_signature_encoding, p_signature_prefix);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

create function pepsi.webhook_provider_change(p_provider text, p_changes jsonb)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_change (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.webhook_provider_change_all(p_provider, p_changes);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

create function pepsi.webhook_provider_add_secret(p_provider text, p_secret text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_add_secret (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.webhook_provider_add_secret_all(p_provider, p_secret);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

create function pepsi.webhook_provider_retire_secret(p_provider text, p_secret text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_retire_secret (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.webhook_provider_retire_secret_all(p_provider, p_secret);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

create function pepsi.webhook_provider_disable(p_provider text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_disable (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.webhook_provider_disable_all(p_provider);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

create function pepsi.webhook_provider_enable(p_provider text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
-- The router's webhook_provider_enable (issue 18): on every shard.
begin
    perform count(*) from pepsi_router.webhook_provider_enable_all(p_provider);
exception when sqlstate 'XX000' then
    perform pepsi_router.unreachable_which(sqlerrm);
end
$$;

-- ---- comments ---------------------------------------------------------------------------

comment on function pepsi_router.ping_on(int) is
    'Internal (issue 18): PL/Proxy "select 1" on shard p_shard (which shard does not answer).';
comment on function pepsi_router.unreachable_which(text) is
    'Internal (issue 18): after a RUN ON ALL call could not reach a shard, raises PX070 naming the first shard that does not answer.';
comment on function pepsi.schema_api() is
    'Router (issue 18): the API levels every shard serves (RUN ON ALL; level = lowest level, oldest = highest oldest), what pepsi-runner ingress checks when it connects to the router. PX073 the shards serve no common level, PX070 a shard does not answer, PX041 no applied topology.';
comment on function pepsi.webhook_provider_list() is
    'Router (issue 18), pepsi_ingress alone (secrets): the shards'' enabled providers (RUN ON ALL), the shard''s columns; PX073 naming the providers that are not the same on every shard (definition, secrets, tube), PX070, PX041.';
comment on function pepsi.ingress_stats_flush(text, jsonb, timestamptz) is
    'Router (issue 18), pepsi_ingress: the shard''s ingress_stats_flush on shard 0, or on the next shard that answers when it does not; its own transaction there (not atomic with the events). PX003 as on a shard, PX070 no shard answers.';
comment on function pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text) is
    'Router (issue 18), schema owner: webhook_provider_add on every shard (RUN ON ALL, each its own transaction). PX010, PX070; a partial failure leaves the shards different until repeated (webhook_provider_list: PX073). Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi.webhook_provider_change(text, jsonb) is
    'Router (issue 18), schema owner: webhook_provider_change on every shard. PX003, PX010, PX011, PX070. Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi.webhook_provider_add_secret(text, text) is
    'Router (issue 18), schema owner: webhook_provider_add_secret on every shard. PX010, PX011, PX070. Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi.webhook_provider_retire_secret(text, text) is
    'Router (issue 18), schema owner: webhook_provider_retire_secret on every shard. PX010, PX011, PX070. Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi.webhook_provider_disable(text) is
    'Router (issue 18), schema owner: webhook_provider_disable on every shard. PX011, PX070. Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi.webhook_provider_enable(text) is
    'Router (issue 18), schema owner: webhook_provider_enable on every shard. PX011, PX070. Reload the ingress (SIGHUP) afterwards.';
comment on function pepsi_router.schema_api_all() is
    'Internal (issue 18): PL/Proxy call of pepsi.schema_api on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_list_all() is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_list, with each provider''s tube, on every shard (RUN ON ALL).';
comment on function pepsi_router.ingress_stats_flush_on(int, text, jsonb, timestamptz) is
    'Internal (issue 18): PL/Proxy call of pepsi.ingress_stats_flush on shard p_shard (RUN ON p_shard).';
comment on function pepsi_router.webhook_provider_add_all(text, text, text[], text, text, text, interval, text, text, text) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_add on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_change_all(text, jsonb) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_change on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_add_secret_all(text, text) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_add_secret on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_retire_secret_all(text, text) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_retire_secret on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_disable_all(text) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_disable on every shard (RUN ON ALL).';
comment on function pepsi_router.webhook_provider_enable_all(text) is
    'Internal (issue 18): PL/Proxy call of pepsi.webhook_provider_enable on every shard (RUN ON ALL).';

-- ---- grants: the shard's -----------------------------------------------------------------

revoke all on function pepsi_router.ping_on(int), pepsi_router.unreachable_which(text),
    pepsi_router.schema_api_all(), pepsi.schema_api(),
    pepsi_router.webhook_provider_list_all(), pepsi.webhook_provider_list(),
    pepsi_router.ingress_stats_flush_on(int, text, jsonb, timestamptz), pepsi.ingress_stats_flush(text, jsonb, timestamptz),
    pepsi_router.webhook_provider_add_all(text, text, text[], text, text, text, interval, text, text, text),
    pepsi_router.webhook_provider_change_all(text, jsonb), pepsi_router.webhook_provider_add_secret_all(text, text),
    pepsi_router.webhook_provider_retire_secret_all(text, text), pepsi_router.webhook_provider_disable_all(text),
    pepsi_router.webhook_provider_enable_all(text),
    pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text),
    pepsi.webhook_provider_change(text, jsonb), pepsi.webhook_provider_add_secret(text, text),
    pepsi.webhook_provider_retire_secret(text, text), pepsi.webhook_provider_disable(text),
    pepsi.webhook_provider_enable(text)
    from public;
-- schema_api: the shard grants it to every duty role.
grant execute on function pepsi_router.ping_on(int), pepsi_router.unreachable_which(text),
    pepsi_router.schema_api_all(), pepsi.schema_api()
    to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;
grant execute on function pepsi_router.ping_on(int), pepsi_router.unreachable_which(text) to pepsi_operator;
grant execute on function pepsi_router.webhook_provider_list_all(), pepsi.webhook_provider_list(),
    pepsi_router.ingress_stats_flush_on(int, text, jsonb, timestamptz), pepsi.ingress_stats_flush(text, jsonb, timestamptz)
    to pepsi_ingress;

commit;
