-- Deploy pepsi:stage_pause to pg
-- requires: workqueue
--
-- Pausing a stage (issue 16): an operator stops the claims of one stage
-- (pepsi.workqueue_pause_stage) without stopping a runner or editing its
-- file; its messages wait, pending, until pepsi.workqueue_resume_stage.
-- A pause is a row of pepsi.stage_pause, so it survives a runner's
-- restart and holds for every owner slot. The claims (workqueue_claim,
-- workqueue_claim_fair) read the table once per call at their top
-- (stage_pause_caps): with no stage paused that is one probe of an empty
-- table; while one is, the paused stages' caps become 0, and a stage with
-- cap 0 is not scanned. Rows already running finish as usual.

begin;

create table pepsi.stage_pause (
    stage     text
              constraint stage_pause_pkey primary key
              constraint stage_pause_stage_check check (pepsi.stage_name_valid(stage)),
    paused_at timestamptz not null,
    paused_by text not null,
    reason    text
              constraint stage_pause_reason_check check (octet_length(reason) <= 1000)
);

comment on table pepsi.stage_pause is
    'Stages an operator paused (pepsi.workqueue_pause_stage, issue 16): their pending messages are not claimed until pepsi.workqueue_resume_stage deletes the row. Survives runner restarts; read by every claim.';
comment on column pepsi.stage_pause.stage is 'The paused stage (a stage name; it need not be served yet).';
comment on column pepsi.stage_pause.paused_at is 'When the pause began.';
comment on column pepsi.stage_pause.paused_by is 'The session user who paused it.';
comment on column pepsi.stage_pause.reason is 'Why, as the operator gave it (NULL: none given).';

create function pepsi.stage_pause_caps(p_stages text[], p_caps int[])
returns int[]
language sql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The claims' view of the paused stages (issue 16): p_caps with 0 for
-- each entry of p_stages that pepsi.stage_pause names; the other entries
-- unchanged, in order. The claims call it only when a stage is paused.
-- Tables: stage_pause (read).
    select array(select case when sp.stage is null then s.cap else 0 end
                   from unnest(p_stages, p_caps) with ordinality as s(stage, cap, i)
                   left join pepsi.stage_pause sp on sp.stage = s.stage
                  order by s.i)
$$;

create function pepsi.workqueue_pause_stage(p_stage text, p_reason text default null)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 16): pauses stage p_stage: from the next claim on,
-- no dispatcher claims its pending messages, across runner restarts,
-- until pepsi.workqueue_resume_stage. Messages running at the stage
-- finish as usual; messages that advance to it wait there, pending.
-- p_reason (at most 1000 bytes) and the session user are kept in
-- pepsi.stage_pause. NOTIFY workqueue when the stage was newly paused.
-- Returns true when it newly paused the stage, false when it was paused
-- already (the first pause's time, user and reason stay).
-- Raises PX001 (an invalid stage name), PX003 (a reason over 1000 bytes).
-- Tables: stage_pause (insert).
declare
    v_n int;
begin
    perform pepsi.stage_check(p_stage);
    if octet_length(p_reason) > 1000 then
        raise exception 'a pause reason is at most 1000 bytes, not %', octet_length(p_reason)
            using errcode = 'PX003';
    end if;
    insert into pepsi.stage_pause (stage, paused_at, paused_by, reason)
    values (p_stage, now(), session_user, nullif(btrim(p_reason), ''))
    on conflict (stage) do nothing;
    get diagnostics v_n = row_count;
    if v_n > 0 then
        notify workqueue;
    end if;
    return v_n > 0;
end
$$;

comment on function pepsi.workqueue_pause_stage(text, text) is
    'Operators: stop the claims of a stage (its messages wait, pending) until workqueue_resume_stage; survives runner restarts. Returns true when newly paused. Refuses an invalid stage name (PX001) or a reason over 1000 bytes (PX003).';

create function pepsi.workqueue_resume_stage(p_stage text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- For operators (issue 16): ends the pause of stage p_stage
-- (pepsi.workqueue_pause_stage); NOTIFY workqueue, so that dispatchers
-- claim its waiting messages at once.
-- Returns true when the stage was paused, false when it was not.
-- Raises PX001 (an invalid stage name). Tables: stage_pause (delete).
declare
    v_n int;
begin
    perform pepsi.stage_check(p_stage);
    delete from pepsi.stage_pause sp where sp.stage = p_stage;
    get diagnostics v_n = row_count;
    if v_n > 0 then
        notify workqueue;
    end if;
    return v_n > 0;
end
$$;

comment on function pepsi.workqueue_resume_stage(text) is
    'Operators: end the pause of a stage (workqueue_pause_stage) and wake the dispatchers. Returns true when it was paused. Refuses an invalid stage name (PX001).';

revoke all on table pepsi.stage_pause from public;
revoke all on function pepsi.stage_pause_caps(text[], int[]) from public;
revoke all on function pepsi.workqueue_pause_stage(text, text) from public;
revoke all on function pepsi.workqueue_resume_stage(text) from public;
grant execute on function pepsi.workqueue_pause_stage(text, text) to pepsi_operator;
grant execute on function pepsi.workqueue_resume_stage(text) to pepsi_operator;
grant select on pepsi.stage_pause to pepsi_reader;

commit;
