-- Deploy pepsi:control_signal to pg
-- requires: schema
--
-- Notifications are wake-ups, never authority (issue 11). Any login that
-- can connect may NOTIFY any channel, so a runner that reloaded its stage
-- graph or ran a reconciliation pass on every config_changed, reconcile or
-- telemetry_changed would do so for strangers too. Each such channel has a
-- version here that only the schema owner's functions move, in the same
-- transaction as the change they announce; a runner acts on a
-- notification only when the version it reads has moved since it last
-- acted, so a spoofed one costs one cheap query.

begin;

create table pepsi.control_signal (
    channel     text primary key
                constraint control_signal_channel_check
                check (channel in ('config_changed', 'telemetry_changed', 'reconcile')),
    version     bigint not null default 0,
    changed_at  timestamptz not null default now(),
    changed_by  text not null default session_user
);

comment on table pepsi.control_signal is
    'Version per control channel (config_changed, telemetry_changed, reconcile): moved only by the owner''s functions with the change; runners act on a NOTIFY only when it moved (issue 11).';

insert into pepsi.control_signal (channel) values ('config_changed'), ('telemetry_changed'), ('reconcile');

create function pepsi.control_signal_send(p_channel text)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Moves p_channel's version and sends NOTIFY p_channel (empty payload).
-- Both take effect at commit: a runner woken by the notification reads
-- the new version. Returns the new version. Raises PX003 for an unknown
-- channel. Tables: control_signal (update).
declare
    v_version bigint;
begin
    update pepsi.control_signal s
       set version = s.version + 1, changed_at = now(), changed_by = session_user
     where s.channel = p_channel
    returning s.version into v_version;
    if not found then
        raise exception 'unknown control channel "%"', coalesce(p_channel, '<null>')
            using errcode = 'PX003', hint = 'One of config_changed, telemetry_changed, reconcile.';
    end if;
    perform pg_notify(p_channel, '');
    return v_version;
end
$$;

create function pepsi.control_signal_versions()
returns table (channel text, version bigint)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Every channel's version, for a runner deciding whether a notification
-- is news.
    select s.channel, s.version from pepsi.control_signal s order by s.channel
$$;

revoke all on function pepsi.control_signal_send(text) from public;
revoke all on function pepsi.control_signal_versions() from public;
grant execute on function pepsi.control_signal_versions() to pepsi_runner, pepsi_reader;
grant select on pepsi.control_signal to pepsi_reader;

commit;
