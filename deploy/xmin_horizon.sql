-- Deploy pepsi:xmin_horizon to pg
-- requires: anomaly_checks
-- requires: roles
--
-- Issue 19: a REPEATABLE READ transaction held open for 120 s during an
-- unfused run took the pipeline from 9.6k to 1.0k messages/s: every claim
-- walks the index entries of the rows it already moved, dead but not
-- removable while some snapshot is older than them. The check
-- xmin_horizon_age (anomaly_checks) said so only after 15 minutes and
-- named a pid and an application. Here: pepsi.xmin_horizon_holders()
-- names every holder of this database's horizon (user, application,
-- state, since when), the check reads it and warns after 60 s, and
-- xmin_horizon_age_critical, the same measure, is critical after 300 s
-- (the registry has one severity per check, so two rows make the two
-- levels; both tuned with anomaly_check_set).

begin;

create function pepsi.xmin_horizon_holders(p_now timestamptz default now())
returns table (kind text, pid int, usename text, application_name text, state text, since timestamptz,
               age_seconds numeric, holder text)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Who holds back the xmin horizon of this database, oldest first: sessions
-- of this database with a snapshot (backend_xmin) or a transaction id
-- (backend_xid: a READ COMMITTED transaction that wrote holds it between
-- statements, without a snapshot), and prepared transactions of this
-- database. Sessions of other databases do not hold back this one's
-- tables (PostgreSQL computes the horizon per database), and a plain
-- VACUUM's own xmin is ignored by the horizon (its pid is in
-- pg_stat_progress_vacuum), so neither is listed. since: the start of
-- the transaction (the snapshot of a READ COMMITTED statement may be
-- younger: an upper bound) or when it was prepared; age_seconds: p_now -
-- since; holder: one line for a person ("pid 4242 (user bob, application
-- psql, idle in transaction, 125 s)").
-- Security definer: pg_stat_activity shows another role's backend_xmin
-- only to superusers and members of pg_read_all_stats, so what this sees
-- depends on its owner (the schema owner) being one; the reader and the
-- runner read it through this function without that privilege.
-- Replication slots (pg_replication_slots.xmin) are not listed: they
-- carry no time to give an age in seconds.
-- Raises PX003 (a NULL p_now).
-- Tables: pg_stat_activity, pg_stat_progress_vacuum, pg_prepared_xacts (read).
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    return query
    with h as (
        select 'session'::text as kind, a.pid, a.usename::text as usename, a.application_name,
               coalesce(a.state, a.backend_type) as state, a.xact_start as since
          from pg_catalog.pg_stat_activity a
         where a.datname = current_database()
           and (a.backend_xmin is not null or a.backend_xid is not null)
           and a.xact_start is not null
           and not exists (select 1 from pg_catalog.pg_stat_progress_vacuum v where v.pid = a.pid)
        union all
        select 'prepared', null, p.owner::text, null, 'prepared ' || p.gid, p.prepared
          from pg_catalog.pg_prepared_xacts p
         where p.database = current_database()
    )
    select h.kind, h.pid, h.usename, h.application_name, h.state, h.since,
           round(extract(epoch from p_now - h.since), 3),
           case when h.kind = 'session'
                then format('pid %s (user %s, application %s, %s, %s s)', h.pid, coalesce(h.usename, '?'),
                            coalesce(nullif(h.application_name, ''), '-'), h.state,
                            round(extract(epoch from p_now - h.since)))
                else format('%s (user %s, %s s)', h.state, coalesce(h.usename, '?'),
                            round(extract(epoch from p_now - h.since))) end
      from h
     order by h.since, h.pid;
end
$$;

comment on function pepsi.xmin_horizon_holders(timestamptz) is
    'Sessions and prepared transactions of this database holding back its xmin horizon (dead rows younger than them cannot be vacuumed; issue 19: claims then walk ever more dead index entries), oldest first: pid, user, application, state, since when, age in seconds at p_now, and one line naming it. Read by the checks xmin_horizon_age and xmin_horizon_age_critical; pepsi_reader and pepsi_runner may call it.';

revoke all on function pepsi.xmin_horizon_holders(timestamptz) from public;
grant execute on function pepsi.xmin_horizon_holders(timestamptz) to pepsi_reader, pepsi_runner;

-- The shipped bound moves from 15 minutes to 60 s (issue 19: 120 s cost
-- 90 % of the throughput); a bound an operator tuned stays as it is.
update pepsi.anomaly_check
   set metric = $m$select h.holder, h.age_seconds from pepsi.xmin_horizon_holders($1) h$m$,
       description = 'Age of each session or prepared transaction of this database holding back the xmin horizon (pepsi.xmin_horizon_holders), naming the oldest: pid, user, application, state, how long. While one holds it, no dead row younger than it can be vacuumed and every claim walks the dead entries of the rows it moved (issue 19). xmin_horizon_age_critical is the same measure at a later bound.',
       max_value = case when max_value = 900 then 60 else max_value end,
       updated_at = now()
 where name = 'xmin_horizon_age';

insert into pepsi.anomaly_check (name, family, reads, unit, min_value, max_value, severity, description, metric) values
('xmin_horizon_age_critical', 'health', 'live', 's', null, 300, 'critical',
 'xmin_horizon_age at a later bound, critical: a session or prepared transaction of this database has held back the xmin horizon for minutes (pepsi.xmin_horizon_holders names it); end it, or the queue slows down to a fraction (issue 19).',
 $m$select h.holder, h.age_seconds from pepsi.xmin_horizon_holders($1) h$m$);

commit;
