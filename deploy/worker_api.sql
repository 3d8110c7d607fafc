-- Deploy pepsi:worker_api to pg
-- requires: workqueue
-- requires: settings
-- requires: config_override
-- requires: roles
--
-- The worker API in SQL (issue 16): a stage program in any language loads
-- a batch of the messages it was handed with one call, and commits their
-- results with one call of pepsi.workqueue_commit, without reading the
-- configuration file or the overlay and without knowing the C SDK's
-- queries. The protocol around it (ids on stdin, one status line per id)
-- is README "The worker protocol"; sdk/python/pepsi_worker.py uses both.

begin;

create function pepsi.worker_load(p_stage text, p_ids bigint[], p_body boolean default true)
returns table (workqueue_id bigint, tube text, sender_key text, envelope_sender text, recipients text[],
               header_from text, subject text, state jsonb, arrived_at timestamptz,
               headers text, body bytea, settings jsonb, next_stage text, bounce_stage text)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- One row per id of p_ids that is running at p_stage, in the order of
-- p_ids (an id given twice comes twice); ids not running there (moved on,
-- finished, another stage's, unknown) are left out, so that no worker
-- reads another stage's messages through it. Columns: the envelope the C
-- SDK loads (tube, sender_key, envelope_sender, recipients, header_from,
-- subject, state, arrived_at); the header block and body when p_body
-- (NULL both without, or for a message without a body); settings, the
-- per-address overrides of p_stage that apply to the message
-- ({"address": {"OPTION": "value"}}, NULL when none; pepsi.settings_for,
-- D-122, D-123); next_stage and bounce_stage, p_stage's NEXT and
-- BOUNCE_STAGE as SQL knows the graph (the file's section as the
-- dispatchers last published it, pepsi.stage_served, with the overlay's
-- rows laid over it, as pepsi.config_graph merges them; NULL: none, the
-- message finishes after p_stage).
-- Security definer for the graph (stage_served, config_override are
-- not pepsi_worker's to read); pepsi_worker reads workqueue and
-- workqueue_body anyway.
-- Raises PX001 (p_stage NULL or not a stage name), PX003 (p_ids NULL or
-- more than 10,000 ids; p_body NULL).
declare
    v_next text;
    v_bounce text;
    v_settings boolean;
begin
    if p_stage is null or not pepsi.stage_name_valid(p_stage) then
        raise exception 'invalid stage name "%"', pepsi.excerpt(p_stage) using errcode = 'PX001';
    end if;
    if p_ids is null then
        raise exception 'p_ids is NULL: an array of message ids is required' using errcode = 'PX003';
    end if;
    if cardinality(p_ids) > 10000 then
        raise exception 'p_ids holds % ids; the limit is 10000', cardinality(p_ids) using errcode = 'PX003';
    end if;
    if p_body is null then
        raise exception 'p_body is NULL: true or false' using errcode = 'PX003';
    end if;
    -- config_graph's merge for one stage and two keys, by primary key
    -- (config_graph itself builds every stage's refs: ~0.3 s, too slow
    -- for every batch): the overlay's row when there is one (an empty
    -- value: unset), else the newest published file section's.
    if not exists (select from pepsi.config_override o where o.section = 'stage-' || p_stage and o.key = '*') then
        select case when ov_next.section is not null then nullif(ov_next.value, '') else pub.refs ->> 'NEXT' end,
               case when ov_bounce.section is not null then nullif(ov_bounce.value, '') else pub.refs ->> 'BOUNCE_STAGE' end
          into v_next, v_bounce
          from (select 1) one
          left join lateral (select s.refs from pepsi.stage_served s where s.stage = p_stage and s.in_file
                              order by s.published_at desc, s.owner_slot limit 1) pub on true
          left join pepsi.config_override ov_next on ov_next.section = 'stage-' || p_stage and ov_next.key = 'NEXT'
          left join pepsi.config_override ov_bounce
                 on ov_bounce.section = 'stage-' || p_stage and ov_bounce.key = 'BOUNCE_STAGE';
    end if;
    -- settings_for costs ~0.2 ms a row; most stages have no settings at all
    v_settings := exists (select from pepsi.settings s where s.stage = p_stage);
    return query
    select w.workqueue_id, w.tube, w.sender_key, w.envelope_sender, w.recipients, w.header_from, w.subject,
           w.state, w.arrived_at,
           case when p_body then b.headers end, case when p_body then b.body end,
           case when v_settings then pepsi.settings_for(w.state, w.envelope_sender, w.recipients) -> p_stage end,
           v_next, v_bounce
      from unnest(p_ids) with ordinality as i(id, ord)
      join pepsi.workqueue w on w.workqueue_id = i.id
      left join pepsi.workqueue_body b on p_body and b.body_id = w.body_id
     where w.stage = p_stage and w.status = 'running'
     order by i.ord;
end
$$;

comment on function pepsi.worker_load(text, bigint[], boolean) is
    'Loads the messages of p_ids running at p_stage, in the order of p_ids, for a worker in any language (issue 16): envelope, state, header block and body (p_body), the per-address settings of p_stage and its NEXT / BOUNCE_STAGE (the published graph with the overlay, as pepsi.config_graph merges it). Commit the results with pepsi.workqueue_commit. README "Workers in Python".';

revoke all on function pepsi.worker_load(text, bigint[], boolean) from public;
grant execute on function pepsi.worker_load(text, bigint[], boolean) to pepsi_worker;

commit;
