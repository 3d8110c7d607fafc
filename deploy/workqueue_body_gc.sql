-- Deploy pepsi:workqueue_body_gc to pg
-- requires: workqueue

begin;

create function pepsi.workqueue_body_release()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Statement trigger after DELETE on workqueue (D-144): deletes each body
-- that the deleted rows referred to and that no remaining row refers to.
-- A statement trigger with a transition table costs one statement per
-- batch of deletions, not one per row. Two concurrent deletions of the
-- last two siblings can each see the other's row and leave the body;
-- pepsi.workqueue_body_gc() collects those.
begin
    delete from pepsi.workqueue_body b
     where b.body_id in (select distinct o.body_id from old_rows o where o.body_id is not null)
       and not exists (select 1 from pepsi.workqueue w where w.body_id = b.body_id);
    return null;
end
$$;

create trigger workqueue_body_release
    after delete on pepsi.workqueue
    referencing old table as old_rows
    for each statement execute function pepsi.workqueue_body_release();

create function pepsi.workqueue_body_gc(p_limit int default 10000, p_now timestamptz default now())
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Removes up to p_limit bodies that no workqueue row refers to (D-143) and
-- returns how many. Bodies younger than a minute are left alone: a writer
-- inserts the body before the row that refers to it, in one transaction,
-- and a READ COMMITTED anti-join must not race that insert.
-- Raises PX003 (a NULL or negative limit, a NULL p_now).
-- Tables: workqueue_body (delete), workqueue (read).
declare
    v_count int;
begin
    if p_limit is null or p_limit < 0 then
        raise exception 'invalid limit %', coalesce(p_limit::text, '<null>') using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    with orphan as (
        select b.body_id from pepsi.workqueue_body b
         where b.created_at < p_now - interval '1 minute'
           and not exists (select 1 from pepsi.workqueue w where w.body_id = b.body_id)
         order by b.body_id
         limit p_limit
         for update skip locked
    )
    delete from pepsi.workqueue_body b using orphan o where b.body_id = o.body_id;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

revoke all on function pepsi.workqueue_body_release() from public;
revoke all on function pepsi.workqueue_body_gc(int, timestamptz) from public;
grant execute on function pepsi.workqueue_body_gc(int, timestamptz) to pepsi_runner;

commit;
