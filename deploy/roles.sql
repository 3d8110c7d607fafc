-- Deploy pepsi:roles to pg
-- Roles by duty (PgQ style). They are NOLOGIN groups: grant them to the
-- login roles that run each component.
--   pepsi_runner   the dispatcher: claims, requeues, strikes, statistics
--   pepsi_worker   stage programs: load messages, commit their results
--   pepsi_ingress  webhook ingress and applications: inject messages
--   pepsi_reader   DBAs and dashboards: the views and the statistics tables
--   pepsi_operator people on call: resume, pause, delete, settings and the
--                  stage overlay; a member of pepsi_reader (issue 15)
-- Roles are cluster-wide while the schema lives in one database, so a
-- second database in the same cluster finds them already there; that is
-- the one place where deploy tolerates an existing object.

begin;

do $$
declare
    v_role text;
begin
    foreach v_role in array array['pepsi_runner', 'pepsi_worker', 'pepsi_ingress', 'pepsi_reader', 'pepsi_operator'] loop
        if not exists (select 1 from pg_catalog.pg_roles where rolname = v_role) then
            execute format('create role %I nologin', v_role);
        end if;
    end loop;
end
$$;

-- An operator reads what it acts on.
grant pepsi_reader to pepsi_operator;

commit;
