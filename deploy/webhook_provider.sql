-- Deploy pepsi:webhook_provider to pg
-- requires: schema
--
-- The webhook providers that `pepsi-runner ingress` accepts on
-- POST /hooks/<provider>: how each signs its requests, with which secrets,
-- where the external id comes from, and where its events go (the entry
-- stage and tube of a pipeline, or nowhere: pulled by the application's
-- own workers, W-15..W-19). Secrets are readable by the schema owner and,
-- through webhook_provider_list(), by pepsi_ingress only; DBAs and
-- dashboards see pepsi.webhook_providers, which hides them. Every change
-- raises NOTIFY webhook_provider_changed (empty payload, a wake-up only):
-- the ingress reloads its in-memory copy without a restart, so that a
-- rejected request never needs a query.

begin;

create table pepsi.webhook_provider (
    provider           text
                       constraint webhook_provider_pkey primary key
                       constraint webhook_provider_name_check
                       check (pepsi.stage_name_valid(provider)),
    scheme             text not null
                       constraint webhook_provider_scheme_check
                       check (scheme in ('standard-webhooks', 'stripe', 'github', 'slack', 'shopify', 'hmac-sha256')),
    secrets            text[] not null
                       constraint webhook_provider_secrets_check
                       check (cardinality(secrets) between 1 and 16
                              and array_position(secrets, null) is null
                              and '' <> all (secrets)),
    tolerance          interval not null default interval '5 minutes'
                       constraint webhook_provider_tolerance_check
                       check (tolerance between interval '1 second' and interval '7 days'),
    id_source          text not null
                       constraint webhook_provider_id_source_check
                       check (id_source ~ '^(header:[!#$%&''*+.^_`|~0-9A-Za-z-]{1,100}|json:[^.]{1,100}(\.[^.]{1,100}){0,7}|sha256)$'),
    signature_header   text
                       constraint webhook_provider_signature_header_check
                       check (signature_header ~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]{1,100}$'),
    signature_encoding text
                       constraint webhook_provider_signature_encoding_check
                       check (signature_encoding in ('hex', 'base64')),
    signature_prefix   text
                       constraint webhook_provider_signature_prefix_check
                       check (octet_length(signature_prefix) <= 100),
    stage              text
                       constraint webhook_provider_stage_check
                       check (pepsi.stage_name_valid(stage)),
    tube               text not null default 'default'
                       constraint webhook_provider_tube_check
                       check (pepsi.tube_name_valid(tube)),
    enabled            boolean not null default true,
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now(),
    constraint webhook_provider_generic_check
        check ((scheme = 'hmac-sha256') = (signature_header is not null and signature_encoding is not null)
               and (scheme = 'hmac-sha256' or signature_prefix is null))
);

comment on table pepsi.webhook_provider is
    'Webhook providers accepted by pepsi-runner ingress. Written only through the webhook_provider_* functions; secrets are hidden from every role but pepsi_ingress (see the view pepsi.webhook_providers).';
comment on column pepsi.webhook_provider.secrets is
    'Active signing secrets, newest first. Several verify at once during a rotation. standard-webhooks: whsec_<base64>; the others: the secret text itself.';
comment on column pepsi.webhook_provider.tolerance is
    'How far a signed timestamp may lie from the ingress clock, both ways (standard-webhooks, stripe, slack).';
comment on column pepsi.webhook_provider.id_source is
    'Where the external id comes from: header:<Name>, json:<key>[.<key>...] (read from the body after verification), or sha256 (of the raw body).';
comment on column pepsi.webhook_provider.stage is
    'Entry stage of the messages made from new events; NULL: the events are pulled (webhook_events_pull).';

create function pepsi.webhook_id_source_default(p_scheme text)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
-- The external id's source when webhook_provider_add is not given one:
-- the header each provider documents as its delivery or event id, or the
-- "id" field of a Stripe event and the "event_id" of a Slack Events API
-- callback. The generic hmac-sha256 scheme has no default (NULL).
    select case p_scheme
        when 'standard-webhooks' then 'header:webhook-id'
        when 'stripe' then 'json:id'
        when 'github' then 'header:X-GitHub-Delivery'
        when 'slack' then 'json:event_id'
        when 'shopify' then 'header:X-Shopify-Webhook-Id'
    end
$$;

create function pepsi.webhook_provider_check(p_row pepsi.webhook_provider)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Raises PX010 with a precise message when p_row is not a usable provider
-- definition; the table's constraints say the same thing less kindly.
-- Checks: the name (it is a URL path segment), the scheme, one to 16
-- non-empty secrets of at most 1024 bytes (a standard-webhooks secret
-- must be base64 after an optional whsec_ prefix and not empty), the tolerance, the id source,
-- the hmac-sha256 options, and the entry stage and tube.
declare
    v_secret text;
    v_key bytea;
begin
    if p_row.provider is null or not pepsi.stage_name_valid(p_row.provider) then
        raise exception 'invalid webhook provider name "%"', left(coalesce(p_row.provider, '<null>'), 64)
            using errcode = 'PX010',
                  hint = 'A provider name has 1 to 63 letters, digits, "_", "." or "-" and starts with a letter or digit.';
    end if;
    if p_row.scheme is null
       or p_row.scheme not in ('standard-webhooks', 'stripe', 'github', 'slack', 'shopify', 'hmac-sha256') then
        raise exception 'unknown signature scheme "%" for webhook provider "%"', left(coalesce(p_row.scheme, '<null>'), 64), p_row.provider
            using errcode = 'PX010',
                  hint = 'Use standard-webhooks, stripe, github, slack, shopify or hmac-sha256.';
    end if;
    if p_row.secrets is null or cardinality(p_row.secrets) not between 1 and 16 then
        raise exception 'webhook provider "%" needs 1 to 16 secrets', p_row.provider using errcode = 'PX010';
    end if;
    foreach v_secret in array p_row.secrets loop
        if v_secret is null or v_secret = '' then
            raise exception 'webhook provider "%": empty secret', p_row.provider using errcode = 'PX010';
        end if;
        if octet_length(v_secret) > 1024 then
            raise exception 'webhook provider "%": a secret is % bytes; the limit is 1024', p_row.provider,
                octet_length(v_secret)
                using errcode = 'PX010';
        end if;
        if p_row.scheme = 'standard-webhooks' then
            begin
                v_key := decode(regexp_replace(v_secret, '^whsec_', ''), 'base64');
            exception when others then
                v_key := null;
            end;
            if v_key is null or octet_length(v_key) = 0
               or regexp_replace(v_secret, '^whsec_', '') !~ '^[A-Za-z0-9+/]+={0,2}$' then
                raise exception 'webhook provider "%": a standard-webhooks secret is whsec_ followed by base64', p_row.provider
                    using errcode = 'PX010';
            end if;
        end if;
    end loop;
    if p_row.tolerance is null or p_row.tolerance not between interval '1 second' and interval '7 days' then
        raise exception 'webhook provider "%": tolerance must lie between 1 second and 7 days', p_row.provider
            using errcode = 'PX010';
    end if;
    if p_row.id_source is null
       or p_row.id_source !~ '^(header:[!#$%&''*+.^_`|~0-9A-Za-z-]{1,100}|json:[^.]{1,100}(\.[^.]{1,100}){0,7}|sha256)$' then
        raise exception 'webhook provider "%": invalid id source "%"', p_row.provider, left(coalesce(p_row.id_source, '<null>'), 120)
            using errcode = 'PX010',
                  hint = 'Use header:<Name>, json:<key>[.<key>...] or sha256.';
    end if;
    if p_row.scheme = 'hmac-sha256' then
        if p_row.signature_header is null or p_row.signature_header !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]{1,100}$' then
            raise exception 'webhook provider "%": hmac-sha256 needs a signature header name', p_row.provider
                using errcode = 'PX010';
        end if;
        if p_row.signature_encoding is null or p_row.signature_encoding not in ('hex', 'base64') then
            raise exception 'webhook provider "%": signature encoding must be hex or base64', p_row.provider
                using errcode = 'PX010';
        end if;
        if octet_length(p_row.signature_prefix) > 100 then
            raise exception 'webhook provider "%": signature prefix too long', p_row.provider using errcode = 'PX010';
        end if;
    elsif p_row.signature_header is not null or p_row.signature_encoding is not null or p_row.signature_prefix is not null then
        raise exception 'webhook provider "%": signature header, encoding and prefix belong to the hmac-sha256 scheme only', p_row.provider
            using errcode = 'PX010';
    end if;
    if p_row.stage is not null and not pepsi.stage_name_valid(p_row.stage) then
        raise exception 'webhook provider "%": invalid entry stage "%"', p_row.provider, left(p_row.stage, 64)
            using errcode = 'PX010';
    end if;
    if p_row.tube is null or not pepsi.tube_name_valid(p_row.tube) then
        raise exception 'webhook provider "%": invalid tube "%"', p_row.provider, left(coalesce(p_row.tube, '<null>'), 64)
            using errcode = 'PX010';
    end if;
end
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
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Adds a webhook provider, enabled, and tells the ingress (NOTIFY
-- webhook_provider_changed). Parameters: the name (the <provider> of
-- POST /hooks/<provider>), the signature scheme (standard-webhooks,
-- stripe, github, slack, shopify, hmac-sha256), the active secrets
-- (newest first), the entry stage and tube of the messages made from new
-- events (stage NULL: the events are pulled with webhook_events_pull),
-- the external id's source (NULL: the scheme's default, see
-- webhook_id_source_default), the timestamp tolerance, and for
-- hmac-sha256 the signature header, its encoding (hex, the default, or
-- base64) and a prefix before the value (e.g. 'sha256=').
-- Raises PX010 (bad definition, or the name is taken).
-- Tables: webhook_provider (insert).
declare
    v_row pepsi.webhook_provider;
begin
    v_row.provider := p_provider;
    v_row.scheme := p_scheme;
    v_row.secrets := p_secrets;
    v_row.stage := p_stage;
    v_row.tube := coalesce(p_tube, 'default');
    v_row.id_source := coalesce(p_id_source, pepsi.webhook_id_source_default(p_scheme));
    v_row.tolerance := coalesce(p_tolerance, interval '5 minutes');
    v_row.signature_header := p_signature_header;
    v_row.signature_encoding := case when p_scheme = 'hmac-sha256' then coalesce(p_signature_encoding, 'hex')
                                     else p_signature_encoding end;
    v_row.signature_prefix := p_signature_prefix;
    perform pepsi.webhook_provider_check(v_row);
    if exists (select 1 from pepsi.webhook_provider p where p.provider = p_provider) then
        raise exception 'webhook provider "%" already exists', p_provider using errcode = 'PX010';
    end if;
    insert into pepsi.webhook_provider (provider, scheme, secrets, tolerance, id_source, signature_header,
                                        signature_encoding, signature_prefix, stage, tube)
    values (v_row.provider, v_row.scheme, v_row.secrets, v_row.tolerance, v_row.id_source, v_row.signature_header,
            v_row.signature_encoding, v_row.signature_prefix, v_row.stage, v_row.tube);
    notify webhook_provider_changed;
end
$$;

create function pepsi.webhook_provider_get(p_provider text)
returns pepsi.webhook_provider
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The provider's row, locked for update, or PX011 when there is none.
-- Shared by the functions that change a provider.
declare
    v_row pepsi.webhook_provider;
begin
    select * into v_row from pepsi.webhook_provider p where p.provider = p_provider for update;
    if not found then
        raise exception 'unknown webhook provider "%"', left(coalesce(p_provider, '<null>'), 64) using errcode = 'PX011';
    end if;
    return v_row;
end
$$;

create function pepsi.webhook_provider_save(p_row pepsi.webhook_provider)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Checks p_row, writes it over the provider of the same name, stamps
-- updated_at and notifies webhook_provider_changed. Shared by the
-- functions that change a provider. Raises PX010.
begin
    perform pepsi.webhook_provider_check(p_row);
    update pepsi.webhook_provider p
       set scheme = p_row.scheme, secrets = p_row.secrets, tolerance = p_row.tolerance,
           id_source = p_row.id_source, signature_header = p_row.signature_header,
           signature_encoding = p_row.signature_encoding, signature_prefix = p_row.signature_prefix,
           stage = p_row.stage, tube = p_row.tube, enabled = p_row.enabled, updated_at = now()
     where p.provider = p_row.provider;
    notify webhook_provider_changed;
end
$$;

create function pepsi.webhook_provider_change(p_provider text, p_changes jsonb)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Changes the keys of p_changes (a JSON object) and leaves the others:
-- scheme, secrets (array), stage (null: pulled from now on), tube,
-- id_source, tolerance (an interval as text, e.g. "10 minutes"),
-- signature_header, signature_encoding, signature_prefix, enabled.
-- A new event routes by the provider's row at the time it is stored;
-- messages already queued keep their stage. Notifies
-- webhook_provider_changed. Raises PX003 (not an object, unknown key),
-- PX010 (the result is not a usable provider), PX011 (no such provider).
-- Tables: webhook_provider (update).
declare
    v_row pepsi.webhook_provider;
    v_bad text;
begin
    if p_changes is null or jsonb_typeof(p_changes) <> 'object' then
        raise exception 'changes must be a JSON object' using errcode = 'PX003';
    end if;
    select k into v_bad from jsonb_object_keys(p_changes) k
     where k not in ('scheme', 'secrets', 'stage', 'tube', 'id_source', 'tolerance', 'signature_header',
                     'signature_encoding', 'signature_prefix', 'enabled')
     limit 1;
    if found then
        raise exception 'unknown webhook provider key "%"', v_bad using errcode = 'PX003';
    end if;
    if p_changes ? 'secrets' and jsonb_typeof(p_changes->'secrets') <> 'array' then
        raise exception 'secrets must be a JSON array of strings' using errcode = 'PX003';
    end if;
    if p_changes ? 'enabled' and jsonb_typeof(p_changes->'enabled') <> 'boolean' then
        raise exception 'enabled must be true or false' using errcode = 'PX003';
    end if;
    v_row := pepsi.webhook_provider_get(p_provider);
    if p_changes ? 'scheme' then v_row.scheme := p_changes->>'scheme'; end if;
    if p_changes ? 'secrets' then
        v_row.secrets := array(select jsonb_array_elements_text(p_changes->'secrets'));
    end if;
    if p_changes ? 'stage' then v_row.stage := p_changes->>'stage'; end if;
    if p_changes ? 'tube' then v_row.tube := p_changes->>'tube'; end if;
    if p_changes ? 'id_source' then v_row.id_source := p_changes->>'id_source'; end if;
    if p_changes ? 'tolerance' then
        begin
            v_row.tolerance := (p_changes->>'tolerance')::interval;
        exception when others then
            raise exception 'tolerance "%" is not an interval', p_changes->>'tolerance' using errcode = 'PX010';
        end;
    end if;
    if p_changes ? 'signature_header' then v_row.signature_header := p_changes->>'signature_header'; end if;
    if p_changes ? 'signature_encoding' then v_row.signature_encoding := p_changes->>'signature_encoding'; end if;
    if p_changes ? 'signature_prefix' then v_row.signature_prefix := p_changes->>'signature_prefix'; end if;
    if p_changes ? 'enabled' then v_row.enabled := (p_changes->>'enabled')::boolean; end if;
    perform pepsi.webhook_provider_save(v_row);
end
$$;

create function pepsi.webhook_provider_add_secret(p_provider text, p_secret text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Starts a secret rotation: p_secret becomes the newest active secret and
-- the old ones keep verifying until webhook_provider_retire_secret.
-- Adding a secret that is already active does nothing (but notify).
-- Raises PX010 (bad secret, too many), PX011. Tables: webhook_provider.
declare
    v_row pepsi.webhook_provider;
begin
    v_row := pepsi.webhook_provider_get(p_provider);
    if p_secret is null or not (p_secret = any (v_row.secrets)) then
        v_row.secrets := array_prepend(p_secret, v_row.secrets);
    end if;
    perform pepsi.webhook_provider_save(v_row);
end
$$;

create function pepsi.webhook_provider_retire_secret(p_provider text, p_secret text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Ends a rotation: p_secret stops verifying. The last secret cannot be
-- retired (add the new one first). Raises PX010 (not an active secret, or
-- the last one), PX011. Tables: webhook_provider (update).
declare
    v_row pepsi.webhook_provider;
begin
    v_row := pepsi.webhook_provider_get(p_provider);
    if p_secret is null or not (p_secret = any (v_row.secrets)) then
        raise exception 'webhook provider "%" has no such active secret', p_provider using errcode = 'PX010';
    end if;
    if cardinality(v_row.secrets) = 1 then
        raise exception 'cannot retire the last secret of webhook provider "%"', p_provider
            using errcode = 'PX010', hint = 'Add the new secret first (webhook_provider_add_secret).';
    end if;
    v_row.secrets := array_remove(v_row.secrets, p_secret);
    perform pepsi.webhook_provider_save(v_row);
end
$$;

create function pepsi.webhook_provider_disable(p_provider text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Stops accepting the provider's requests (the ingress answers 404 once it
-- has reloaded, within a moment of the notification). Its stored events
-- and queued messages are untouched. Raises PX011. Tables: webhook_provider.
declare
    v_row pepsi.webhook_provider;
begin
    v_row := pepsi.webhook_provider_get(p_provider);
    v_row.enabled := false;
    perform pepsi.webhook_provider_save(v_row);
end
$$;

create function pepsi.webhook_provider_enable(p_provider text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Accepts the provider's requests again. Raises PX011. Tables: webhook_provider.
declare
    v_row pepsi.webhook_provider;
begin
    v_row := pepsi.webhook_provider_get(p_provider);
    v_row.enabled := true;
    perform pepsi.webhook_provider_save(v_row);
end
$$;

create function pepsi.webhook_provider_list()
returns table (provider text, scheme text, secrets jsonb, tolerance_s bigint, id_source text,
               signature_header text, signature_encoding text, signature_prefix text)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- What the ingress keeps in memory: every enabled provider with its
-- secrets (a JSON array of strings, newest first), the tolerance in whole seconds, the id source and the
-- hmac-sha256 options. The only way a role other than the owner reads
-- secrets; granted to pepsi_ingress alone. Tables: webhook_provider (read).
    select p.provider, p.scheme, to_jsonb(p.secrets), extract(epoch from p.tolerance)::bigint, p.id_source,
           p.signature_header, p.signature_encoding, p.signature_prefix
      from pepsi.webhook_provider p
     where p.enabled
     order by p.provider
$$;

create view pepsi.webhook_providers as
-- The providers without their secrets (only how many are active), and
-- how their events are processed: "pipeline" (messages at stage, tube)
-- or "pull" (webhook_events_pull).
select p.provider, p.scheme, cardinality(p.secrets) as active_secrets, p.tolerance, p.id_source,
       p.signature_header, p.signature_encoding, p.signature_prefix,
       case when p.stage is null then 'pull' else 'pipeline' end as mode,
       p.stage, p.tube, p.enabled, p.created_at, p.updated_at
  from pepsi.webhook_provider p;

comment on view pepsi.webhook_providers is
    'Webhook providers without their secrets: scheme, id source, mode (pipeline or pull), entry stage and tube.';

revoke all on function pepsi.webhook_id_source_default(text) from public;
revoke all on function pepsi.webhook_provider_check(pepsi.webhook_provider) from public;
revoke all on table pepsi.webhook_provider from public;
revoke all on table pepsi.webhook_providers from public;
revoke all on function pepsi.webhook_provider_get(text) from public;
revoke all on function pepsi.webhook_provider_save(pepsi.webhook_provider) from public;
revoke all on function pepsi.webhook_provider_add(text, text, text[], text, text, text, interval, text, text, text) from public;
revoke all on function pepsi.webhook_provider_change(text, jsonb) from public;
revoke all on function pepsi.webhook_provider_add_secret(text, text) from public;
revoke all on function pepsi.webhook_provider_retire_secret(text, text) from public;
revoke all on function pepsi.webhook_provider_disable(text) from public;
revoke all on function pepsi.webhook_provider_enable(text) from public;
revoke all on function pepsi.webhook_provider_list() from public;
grant execute on function pepsi.webhook_provider_list() to pepsi_ingress;
grant select on pepsi.webhook_providers to pepsi_reader;

commit;
