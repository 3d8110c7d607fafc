-- Deploy pepsi:config_override to pg
-- requires: workqueue
-- requires: control_signal
--
-- Every [stage-*] section is a hot setting (D-117): rows here are laid over
-- the configuration file's sections, in (section, key) order, by the
-- dispatcher and by every worker. Any change to them (through the
-- functions below, or a DBA's own statement) moves the config_changed
-- version and sends NOTIFY config_changed (pepsi.control_signal_send), on
-- which the dispatcher rebuilds its stage table and retires every worker;
-- a config_changed without a new version is ignored (issue 11). A value NULL takes a key back out
-- of the file's section; the key '*' with a NULL value removes the whole
-- section. [pepsi-dispatch] is never overlaid (D-120).

begin;

create table pepsi.config_override (
    section     text not null
                constraint config_override_section_check
                check (starts_with(section, 'stage-') and pepsi.stage_name_valid(substr(section, 7))),
    key         text not null
                constraint config_override_key_check
                check (key ~ '^[A-Z][A-Z0-9_]*$' or key = '*'),
    value       text,
    updated_at  timestamptz not null default now(),
    updated_by  text not null default session_user,
    constraint config_override_pkey primary key (section, key),
    constraint config_override_removal_check check (key <> '*' or value is null)
);

create function pepsi.config_override_changed()
returns trigger
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Any row written to the overlay announces a new configuration version.
begin
    perform pepsi.control_signal_send('config_changed');
    return null;
end
$$;

create trigger config_override_changed_trg
    after insert or update or delete on pepsi.config_override
    for each row execute function pepsi.config_override_changed();

comment on table pepsi.config_override is
    'Overlay of [stage-*] sections (D-117): key = value over the file; value NULL removes the key; key * removes the section. Change it with config_set, config_unset, config_remove_stage, config_clear.';

create function pepsi.config_section_check(p_stage text)
returns text
language plpgsql immutable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Returns 'stage-<p_stage>' for a valid stage name, else raises PX001.
begin
    return 'stage-' || pepsi.stage_check(p_stage);
end
$$;

create function pepsi.config_key_check(p_key text)
returns text
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
-- Returns p_key when it is an upper-case configuration key, else PX003.
begin
    if p_key is null or p_key !~ '^[A-Z][A-Z0-9_]*$' then
        raise exception 'invalid configuration key "%"', left(coalesce(p_key, '<null>'), 64)
            using errcode = 'PX003', hint = 'Keys are upper case: A-Z, 0-9 and _, starting with a letter.';
    end if;
    return p_key;
end
$$;

create function pepsi.config_set(p_stage text, p_key text, p_value text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Sets KEY = VALUE in [stage-<p_stage>] of the overlay (adding the stage
-- when the file has none; it then needs a PROGRAM) and brings back a
-- section that the overlay had removed. The value is checked by the
-- dispatcher when it reloads: one that cannot be parsed stops it with
-- exit 78 (D-118). NOTIFY config_changed.
-- Raises PX001 (stage name), PX003 (key, NULL value: use config_unset).
-- Tables: config_override (insert, update, delete).
declare
    v_section text := pepsi.config_section_check(p_stage);
begin
    perform pepsi.config_key_check(p_key);
    if p_value is null then
        raise exception 'a NULL value: use pepsi.config_unset to take a key out' using errcode = 'PX003';
    end if;
    -- The runner and every worker load the overlay: a value is a line of
    -- configuration, not a payload.
    if octet_length(p_value) > 4096 then
        raise exception 'the value of % is % bytes; the limit is 4096', p_key, octet_length(p_value)
            using errcode = 'PX003';
    end if;
    delete from pepsi.config_override o where o.section = v_section and o.key = '*';
    insert into pepsi.config_override as o (section, key, value)
    values (v_section, p_key, p_value)
    on conflict (section, key) do update
        set value = excluded.value, updated_at = now(), updated_by = session_user;
end
$$;

create function pepsi.config_unset(p_stage text, p_key text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Takes KEY out of [stage-<p_stage>]: a common key returns to its
-- default, a stage's own key is removed, whatever the file says.
-- NOTIFY config_changed. Raises PX001, PX003. Tables: config_override.
declare
    v_section text := pepsi.config_section_check(p_stage);
begin
    perform pepsi.config_key_check(p_key);
    insert into pepsi.config_override as o (section, key, value)
    values (v_section, p_key, null)
    on conflict (section, key) do update
        set value = null, updated_at = now(), updated_by = session_user;
end
$$;

create function pepsi.config_remove_stage(p_stage text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Removes [stage-<p_stage>] from the running graph, file section and
-- overlay rows alike. Messages still pending at that stage then wait
-- until a stage of that name exists again. NOTIFY config_changed.
-- Raises PX001. Tables: config_override.
declare
    v_section text := pepsi.config_section_check(p_stage);
begin
    delete from pepsi.config_override o where o.section = v_section;
    insert into pepsi.config_override (section, key, value) values (v_section, '*', null);
end
$$;

create function pepsi.config_clear(p_stage text default null)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Drops the overlay of one stage (or of all when p_stage is NULL): the
-- file's sections apply again. Returns how many rows went; NOTIFY
-- config_changed when any did. Raises PX001. Tables: config_override.
declare
    v_count int;
begin
    delete from pepsi.config_override o
     where p_stage is null or o.section = pepsi.config_section_check(p_stage);
    get diagnostics v_count = row_count;
    if v_count > 0 then
        end if;
    return v_count;
end
$$;

create function pepsi.config_overlay()
returns table (section text, key text, value text)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The overlay rows in the order they are applied: by section, then key
-- ('*', the section's removal, sorts before every key).
    select o.section, o.key, o.value from pepsi.config_override o
     order by o.section collate "C", o.key collate "C"
$$;

create function pepsi.telemetry_changed()
returns void
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Sent after [pepsi] SHARE_TELEMETRY was rewritten in the configuration
-- file: the dispatcher retires every worker, so that their successors read
-- the file again; the stage table is left alone (D-116). Moves the
-- telemetry_changed version, so that the runner knows it is no stranger's.
    select from pepsi.control_signal_send('telemetry_changed')
$$;

revoke all on function pepsi.config_override_changed() from public;
revoke all on function pepsi.config_section_check(text) from public;
revoke all on function pepsi.config_key_check(text) from public;
revoke all on function pepsi.config_set(text, text, text) from public;
revoke all on function pepsi.config_unset(text, text) from public;
revoke all on function pepsi.config_remove_stage(text) from public;
revoke all on function pepsi.config_clear(text) from public;
revoke all on function pepsi.config_overlay() from public;
revoke all on function pepsi.telemetry_changed() from public;
grant execute on function pepsi.config_overlay() to pepsi_runner, pepsi_worker, pepsi_reader;
grant select on pepsi.config_override to pepsi_reader;

commit;
