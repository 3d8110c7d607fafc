-- Revert pepsi:roles from pg
-- Drop the roles only where no other database of the cluster still grants
-- them something (pg_shdepend): another pepsi database keeps them alive.
-- pepsi_operator goes first: its membership of pepsi_reader would keep
-- pepsi_reader alive.

begin;

do $$
declare
    v_role text;
begin
    foreach v_role in array array['pepsi_operator', 'pepsi_runner', 'pepsi_worker', 'pepsi_ingress', 'pepsi_reader'] loop
        if not exists (select 1 from pg_catalog.pg_shdepend d
                        join pg_catalog.pg_roles r on r.oid = d.refobjid
                       where r.rolname = v_role)
           and not exists (select 1 from pg_catalog.pg_auth_members m
                            join pg_catalog.pg_roles r on r.oid = m.roleid
                           where r.rolname = v_role) then
            execute format('drop role %I', v_role);
        end if;
    end loop;
end
$$;

commit;
