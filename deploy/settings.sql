-- Deploy pepsi:settings to pg
-- requires: workqueue
--
-- Per-address overrides of [stage-<name>] options (D-122): before a worker
-- runs a stage on a message, it lays the overrides of the message's
-- correspondent over the section's options. The correspondent is the
-- envelope sender of a message with state.local_origin, the recipients
-- otherwise. Addresses are stored lower-cased (pepsi.address_key), so a
-- correspondent matches however it was spelled.

begin;

create function pepsi.address_key(p_address text)
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The form an address is matched in: lower case. Local parts are
-- case-sensitive in theory (RFC 5321), never in practice; one address, one
-- set of settings.
    select lower(p_address)
$$;

create table pepsi.settings (
    address     text not null
                constraint settings_address_check
                check (address = lower(address) and address ~ '^("[^"]*"|[^@\s"]+)@[^@\s]+$'),
    stage       pepsi.stage_name not null,
    option      text not null
                constraint settings_option_check check (option ~ '^[A-Z][A-Z0-9_]*$'),
    value       text not null,
    updated_at  timestamptz not null default now(),
    updated_by  text not null default session_user,
    constraint settings_pkey primary key (stage, address, option)
);

comment on table pepsi.settings is
    'Per-address overrides of [stage-*] options (D-122); written with settings_set/settings_delete, read by workers with the message (D-123).';

create function pepsi.settings_put(p_address text, p_stage text, p_option text, p_value text, p_by text)
returns void
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Sets OPTION = VALUE for p_address, recording p_by as its author: the
-- one writer of pepsi.settings, behind settings_set (an operator) and
-- settings_apply (an end user's control message). Internal: granted to
-- no one. Raises PX001 (stage), PX002 (address), PX003 (option, NULL value).
begin
    perform pepsi.stage_check(p_stage), pepsi.address_check(p_address, 'address');
    if p_option is null or p_option !~ '^[A-Z][A-Z0-9_]*$' or octet_length(p_option) > 64 then
        raise exception 'invalid option "%"', left(coalesce(p_option, '<null>'), 64)
            using errcode = 'PX003', hint = 'Options are upper-case keys of the stage''s section.';
    end if;
    if p_value is null then
        raise exception 'a NULL value: use pepsi.settings_delete' using errcode = 'PX003';
    end if;
    if octet_length(p_value) > 4096 then
        raise exception 'the value of % is % bytes; the limit is 4096', p_option, octet_length(p_value)
            using errcode = 'PX003';
    end if;
    insert into pepsi.settings as s (address, stage, option, value, updated_by)
    values (pepsi.address_key(p_address), p_stage, p_option, p_value, p_by)
    on conflict (stage, address, option) do update
        set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by;
end
$$;

create function pepsi.settings_set(p_address text, p_stage text, p_option text, p_value text)
returns void
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- An operator sets OPTION = VALUE of [stage-<p_stage>] for messages whose
-- correspondent is p_address; any option of the stage, operator-only ones
-- included (COMMAND, URL, ...). Whether the stage knows the option is
-- checked by `pepsi-runner settings set` against the configuration; a
-- value the stage cannot use fails the affected messages permanently
-- (D-114). updated_by records the session user (the login, not the
-- function's owner). Raises PX001, PX002, PX003 (as settings_put).
-- Tables: settings (insert, update).
    select pepsi.settings_put(p_address, p_stage, p_option, p_value, session_user::text)
$$;

create function pepsi.settings_delete(p_address text, p_stage text default null, p_option text default null)
returns int
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Deletes the overrides of p_address: all of them, those of one stage, or
-- one option. Returns how many went. Tables: settings (delete).
    with gone as (
        delete from pepsi.settings s
         where s.address = pepsi.address_key(p_address)
           and (p_stage is null or s.stage = p_stage)
           and (p_option is null or s.option = p_option)
        returning 1)
    select count(*)::int from gone
$$;

create function pepsi.settings_list(p_address text default null, p_stage text default null)
returns table (address text, stage text, option text, value text, updated_at timestamptz, updated_by text)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The overrides, optionally of one address and/or stage, in a stable order.
    select s.address, s.stage, s.option, s.value, s.updated_at, s.updated_by
      from pepsi.settings s
     where (p_address is null or s.address = pepsi.address_key(p_address))
       and (p_stage is null or s.stage = p_stage)
     order by s.address, s.stage, s.option
$$;

create function pepsi.settings_for(p_state jsonb, p_envelope_sender text, p_recipients text[])
returns jsonb
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The overrides that apply to a message, by stage and correspondent:
-- {"stage": {"address": {"OPTION": "value", ...}, ...}, ...}, or NULL when
-- none. The correspondent is the envelope sender of a state.local_origin
-- message, the recipients otherwise (D-122). Workers call it in the query
-- that loads the message (D-123); every stage is included, so that fused
-- stages get theirs too (D-132).
    select jsonb_object_agg(x.stage, x.by_address)
      from (select s.stage, jsonb_object_agg(s.address, s.opts) as by_address
              from (select s.stage, s.address, jsonb_object_agg(s.option, s.value) as opts
                      from pepsi.settings s
                     where s.address = any(
                               -- JSON true only, as the worker reads it (json_is_true):
                               -- any other value, a string included, is not a flag.
                               case when coalesce(p_state->'local_origin' = 'true'::jsonb, false)
                                    then array[pepsi.address_key(p_envelope_sender)]
                                    else array(select pepsi.address_key(r) from unnest(p_recipients) r) end)
                     group by s.stage, s.address) s
             group by s.stage) x
$$;

create index settings_address_idx on pepsi.settings (address);

revoke all on function pepsi.address_key(text) from public;
revoke all on function pepsi.settings_put(text, text, text, text, text) from public;
revoke all on function pepsi.settings_set(text, text, text, text) from public;
revoke all on function pepsi.settings_delete(text, text, text) from public;
revoke all on function pepsi.settings_list(text, text) from public;
revoke all on function pepsi.settings_for(jsonb, text, text[]) from public;
grant execute on function pepsi.settings_for(jsonb, text, text[]) to pepsi_worker;
grant execute on function pepsi.settings_list(text, text) to pepsi_reader, pepsi_worker;
grant select on pepsi.settings to pepsi_reader;
grant execute on function pepsi.settings_set(text, text, text, text), pepsi.settings_delete(text, text, text) to pepsi_operator;

commit;
