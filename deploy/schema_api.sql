-- Deploy pepsi:schema_api to pg
-- requires: roles

begin;

-- Upgrades in place (issue 15): each program is built against an API
-- level and each schema declares the range of levels it serves, so that
-- `sqitch deploy` of a compatible change under a live service stops no
-- stage. The rules, for whoever changes the schema:
--   - a change programs may rely on (a new function, a new optional
--     parameter, a new column) raises LEVEL and keeps OLDEST: every
--     program built before keeps running, and a program built after
--     refuses (78, "older") a schema that lacks the change;
--   - a change that breaks programs built before (a function dropped or
--     its signature or meaning changed) raises LEVEL and sets OLDEST to
--     it: older programs refuse (78, "upgrade the program") at start;
--   - a change nothing in a program depends on (an index, a comment, a
--     view for DBAs) changes neither.
-- The runner's build reads its level from the line below (scripts/
-- schema-manifest): one definition. While the project is unreleased this
-- file is edited in place; once released, a new level is a sqitch rework
-- of this change.
create function pepsi.schema_api(out level int, out oldest int)
language sql immutable parallel safe
as $$
    select 1 as level, 1 as oldest
$$;

comment on function pepsi.schema_api() is
    'The API level this schema serves (level) and the oldest level a program may be built against and still run (oldest): pepsi-runner and its workers run when oldest <= their build''s level <= level, and exit 78 otherwise (D-12, issue 15). README "Upgrading".';

revoke all on function pepsi.schema_api() from public;
grant execute on function pepsi.schema_api() to pepsi_runner, pepsi_worker, pepsi_ingress, pepsi_reader;

commit;
