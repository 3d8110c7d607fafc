-- Deploy pepsi:workqueue_history to pg
-- requires: workqueue
--
-- The history of messages that left the queue (issue 16): one row per
-- message, written by the very statement that deletes its workqueue row
-- ("with d as (delete ... returning ...) insert into workqueue_history
-- ... from d"), so a message is never gone without its trace, nor traced
-- while still queued. The writers: workqueue_transition's finish
-- (outcome 'finished'), workqueue_delete ('deleted') and workqueue_purge
-- ('purged'). Never the body. Partitioned by day (range on ended_at, UTC
-- days); pepsi.workqueue_history_maintain creates today's and tomorrow's
-- partitions (at deploy and on every reconciliation pass) and drops the
-- partitions past the retention (DETACH + DROP, never a DELETE). A
-- DEFAULT partition takes a row for a day without a partition, so a
-- finish never fails for want of one. The retention is
-- workqueue_history_settings.retention (reconcile_configure key
-- history_retention; default 7 days); 0 turns the history off: the
-- writers then write nothing and the next maintenance drops every day.

begin;

create table pepsi.workqueue_history_settings (
    singleton  boolean not null default true
               constraint workqueue_history_settings_pkey primary key
               constraint workqueue_history_settings_singleton_check check (singleton),
    retention  interval not null default interval '7 days'
               constraint workqueue_history_settings_retention_check
               check (retention = interval '0' or retention >= interval '1 day'),
    updated_at timestamptz not null default now()
);

comment on table pepsi.workqueue_history_settings is
    'One row: how long pepsi.workqueue_history keeps a day (retention; 0 = history off). Change it with reconcile_configure(''{"history_retention": "14 days"}'').';
comment on column pepsi.workqueue_history_settings.retention is
    'Days older than this are dropped by workqueue_history_maintain; 0 turns the history off (nothing written). 0 or at least 1 day.';

insert into pepsi.workqueue_history_settings default values;

create table pepsi.workqueue_history (
    workqueue_id  bigint not null,
    tube          text not null,
    stage         text not null,
    outcome       text not null
                  constraint workqueue_history_outcome_check check (outcome in ('finished', 'purged', 'deleted')),
    sender_key    text not null,
    origin_user   text,
    arrived_at    timestamptz not null,
    ended_at      timestamptz not null,
    hops          int,
    strikes       int,
    failure_class text,
    last_error    text
) partition by range (ended_at);

comment on table pepsi.workqueue_history is
    'One row per message that left the queue (issue 16): finished by its last stage, purged after failing, or deleted by an operator; written by the statement that deleted its row. Partitioned by UTC day on ended_at; never the body.';
comment on column pepsi.workqueue_history.workqueue_id is 'The message''s id while it was queued.';
comment on column pepsi.workqueue_history.stage is 'The last stage: the one that finished it, or where it was when purged or deleted.';
comment on column pepsi.workqueue_history.outcome is 'finished (its last stage finished it), purged (failed or timed out, then workqueue_purge), deleted (workqueue_delete: see workqueue_tombstones).';
comment on column pepsi.workqueue_history.ended_at is 'When it left the queue (the partition key).';
comment on column pepsi.workqueue_history.hops is 'state.hops: hops made since arrival or the last resume.';
comment on column pepsi.workqueue_history.strikes is 'state.strikes at the end (crashes and hangs at its last stage).';
comment on column pepsi.workqueue_history.failure_class is 'state.failure_class of a failed message, else NULL.';
comment on column pepsi.workqueue_history.last_error is 'state.last_error, cut to 4096 bytes.';

-- "What happened to message N": one probe per partition.
create index workqueue_history_workqueue_id_idx on pepsi.workqueue_history (workqueue_id);

create table pepsi.workqueue_history_default partition of pepsi.workqueue_history default;

comment on table pepsi.workqueue_history_default is
    'Rows of pepsi.workqueue_history for a day without its partition (maintenance did not run): moved into the day''s partition when workqueue_history_maintain creates it.';

create function pepsi.workqueue_history_on()
returns boolean
language sql stable
as $$
-- True unless the history is off (retention 0). The writers put it in the
-- WHERE of their INSERT ... SELECT FROM the deleted rows: language sql
-- without SET, so it is inlined and read once per statement.
    select exists (select 1 from pepsi.workqueue_history_settings s where s.retention > interval '0')
$$;

create function pepsi.workqueue_history_maintain(p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Keeps pepsi.workqueue_history's partitions (issue 16): with the history
-- on, the partitions of the UTC day of p_now and the next day exist
-- (created as workqueue_history_pYYYYMMDD; rows of that day waiting in
-- the DEFAULT partition are moved in first); every day partition that
-- ended at or before p_now - retention is detached and dropped, and
-- older rows of the DEFAULT partition deleted. With the history off
-- (retention 0) every day partition is dropped and none created.
-- Called at deploy and by every reconciliation pass (reconcile_retention).
-- Returns how many partitions it created or dropped.
-- Raises PX003 (a NULL p_now). Tables: workqueue_history (DDL, insert,
-- delete), workqueue_history_settings (read).
declare
    v_keep interval;
    v_today timestamptz;
    v_day timestamptz;
    v_name text;
    v_n int := 0;
    v_part record;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select s.retention into v_keep from pepsi.workqueue_history_settings s;
    v_today := date_trunc('day', p_now at time zone 'UTC') at time zone 'UTC';
    -- drop what is past the retention (all days when off)
    for v_part in
        select c.relname,
               to_date(substr(c.relname, 20), 'YYYYMMDD')::timestamp at time zone 'UTC' + interval '1 day' as upper
          from pg_inherits i join pg_class c on c.oid = i.inhrelid
         where i.inhparent = 'pepsi.workqueue_history'::regclass
           and c.relname ~ '^workqueue_history_p[0-9]{8}$'
         order by c.relname
    loop
        if v_keep = interval '0' or v_part.upper <= p_now - v_keep then
            execute format('alter table pepsi.workqueue_history detach partition pepsi.%I', v_part.relname);
            execute format('drop table pepsi.%I', v_part.relname);
            v_n := v_n + 1;
        end if;
    end loop;
    delete from pepsi.workqueue_history_default h
     where v_keep = interval '0' or h.ended_at < p_now - v_keep;
    if v_keep = interval '0' then
        return v_n;
    end if;
    foreach v_day in array array[v_today, v_today + interval '1 day'] loop
        v_name := 'workqueue_history_p' || to_char(v_day at time zone 'UTC', 'YYYYMMDD');
        continue when to_regclass('pepsi.' || v_name) is not null;
        execute format('create table pepsi.%I (like pepsi.workqueue_history including defaults including constraints)',
                       v_name);
        execute format('with m as (delete from pepsi.workqueue_history_default h'
                       '            where h.ended_at >= $1 and h.ended_at < $2 returning h.*)'
                       ' insert into pepsi.%I select * from m', v_name)
          using v_day, v_day + interval '1 day';
        execute format('alter table pepsi.workqueue_history attach partition pepsi.%I for values from (%L) to (%L)',
                       v_name, v_day, v_day + interval '1 day');
        v_n := v_n + 1;
    end loop;
    return v_n;
end
$$;

comment on function pepsi.workqueue_history_maintain(timestamptz) is
    'Creates the history partitions of today and tomorrow (UTC) and detaches and drops those past the retention (all of them when the history is off). Run by every reconciliation pass. Returns partitions created or dropped.';

select pepsi.workqueue_history_maintain(now());

revoke all on table pepsi.workqueue_history, pepsi.workqueue_history_default,
                    pepsi.workqueue_history_settings from public;
revoke all on function pepsi.workqueue_history_on() from public;
revoke all on function pepsi.workqueue_history_maintain(timestamptz) from public;
grant select on pepsi.workqueue_history, pepsi.workqueue_history_settings to pepsi_reader;

commit;
