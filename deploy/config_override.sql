-- Deploy pepsi:config_override to pg
-- requires: workqueue
-- requires: control_signal
-- requires: stats
-- requires: config_keys
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
--
-- Validation at the source (issue 15): config_set, config_unset and
-- config_remove_stage refuse with PX044 what the runner would refuse on
-- reload (D-118 would then shut it down), as far as SQL can know it:
--   - the key: a key of [stage-*] or a built-in program's own key of
--     pepsi.config_key (generated from the runner's key table), or another
--     own key of the stage's program that is not a typo of a [stage-*] key
--     (the runner's rule: conf_key_typo, edit distance 1 for keys of up to
--     4 characters, else 2) and not a key of [pepsi], [pepsi-postgres] or
--     [pepsi-dispatch];
--   - the value, by the key's type and range in pepsi.config_key: bool,
--     int within min..max (PARALLELISM 0 is refused), duration in the
--     runner's syntax (conf_value.c; pepsi.conf_duration_ms, checked
--     against testdata/conf-value-vectors.json by pgtap/15 and test_conf),
--     stage names, tristate, option lists;
--   - the graph: the file's sections as the dispatchers published them
--     (pepsi.stage_served, written at each start-up and reload) with the
--     overlay laid over them as the runner does (pepsi.config_graph). The changed
--     stage must have a PROGRAM, every stage it names (NEXT, BOUNCE_STAGE,
--     THEN, ELSE) must be known, and no known stage may name a stage that
--     config_remove_stage removes.
-- What stays to the runner (exit 78 at start-up, D-118 on reload): the
-- file itself, a PROGRAM that is not executable on the runner's host, a
-- built-in program's unknown own keys, and any write a DBA makes to
-- pepsi.config_override without these functions.

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

create function pepsi.conf_duration_ms(p_value text)
returns bigint
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- A pepsi.conf duration in milliseconds, or NULL when the runner's parser
-- (conf_parse_duration in runner/src/lib/conf_value.c) would refuse it:
-- digits, an optional fraction that comes to whole milliseconds (at most
-- 10 significant fraction digits), optional blanks, then an optional unit
-- ms, s, min, h or d in any case (none: seconds; blanks without a unit are
-- refused; "m" is refused). testdata/conf-value-vectors.json holds the
-- cases both sides are tested on.
declare
    m text[];
    v_unit bigint;
    v_frac text;
    v_part numeric;
    v_ms numeric;
begin
    m := regexp_match(p_value, '^([0-9]+)(?:\.([0-9]+))?([ \t]*)([A-Za-z]*)$');
    if m is null or (m[3] <> '' and m[4] = '') then
        return null;
    end if;
    v_unit := case lower(m[4]) when '' then 1000 when 'ms' then 1 when 's' then 1000
                               when 'min' then 60000 when 'h' then 3600000 when 'd' then 86400000 end;
    v_frac := rtrim(coalesce(m[2], ''), '0');
    if v_unit is null or length(v_frac) > 10 then
        return null;
    end if;
    v_part := coalesce(nullif(v_frac, '')::numeric, 0) * v_unit;
    if mod(v_part, 10::numeric ^ length(v_frac)) <> 0 then
        return null;
    end if;
    v_ms := m[1]::numeric * v_unit + div(v_part, 10::numeric ^ length(v_frac));
    if v_ms > 9223372036854775807 then
        return null;
    end if;
    return v_ms::bigint;
end
$$;

create function pepsi.conf_edit_distance(a text, b text)
returns int
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- Optimal string alignment distance (insertions, deletions,
-- substitutions, transpositions of neighbours), as edit_distance in
-- runner/src/lib/conf_names.c.
declare
    la int := length(a);
    lb int := length(b);
    prev2 int[];
    prev int[];
    cur int[];
    v_cost int;
begin
    prev := array(select generate_series(0, lb));
    prev2 := prev;
    for i in 1 .. la loop
        cur := array[i] || array_fill(0, array[lb]);
        for j in 1 .. lb loop
            v_cost := case when substr(a, i, 1) = substr(b, j, 1) then 0 else 1 end;
            cur[j + 1] := least(prev[j + 1] + 1, cur[j] + 1, prev[j] + v_cost);
            if i > 1 and j > 1 and substr(a, i, 1) = substr(b, j - 1, 1)
               and substr(a, i - 1, 1) = substr(b, j, 1) and prev2[j - 1] + 1 < cur[j + 1] then
                cur[j + 1] := prev2[j - 1] + 1;
            end if;
        end loop;
        prev2 := prev;
        prev := cur;
    end loop;
    return prev[lb + 1];
end
$$;

create function pepsi.conf_key_typo(p_section_kind text, p_key text)
returns text
language sql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The key of that kind of section that p_key is probably a typo of (edit
-- distance at most 1 for keys of up to 4 characters, else 2), or NULL:
-- the rule of conf_key_typo (runner/src/lib/conf_names.c).
    select k.key from pepsi.config_key k
     cross join lateral pepsi.conf_edit_distance(p_key, k.key) d
     where k.section_kind = p_section_kind and length(p_key) < 256
       and d <= case when length(k.key) <= 4 then 1 else 2 end
     order by d, k.key limit 1
$$;

create function pepsi.config_value_check(p_stage text, p_key text, p_value text)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises PX044 unless KEY = VALUE (VALUE NULL: the key taken out) is
-- what the runner accepts in [stage-<p_stage>], by pepsi.config_key: see
-- the head of this file. The runner's messages, so that an operator reads
-- the same words from both.
declare
    k pepsi.config_key;
    v_where text := format('key "%s" in [stage-%s]', p_key, p_stage);
    v_other text;
    v_ms bigint;
    v_item text;
begin
    select * into k from pepsi.config_key c
     where c.section_kind in ('stage', 'stage-own') and c.key = p_key
     order by c.section_kind = 'stage' desc limit 1;
    if not found then
        select string_agg(format('[%s]', c.section_kind), ', ') into v_other
          from pepsi.config_key c
         where c.section_kind in ('pepsi', 'pepsi-postgres', 'pepsi-dispatch') and c.key = p_key;
        if v_other is not null then
            raise exception '%: a key of %, never of a stage section', v_where, v_other using errcode = 'PX044';
        end if;
        v_other := pepsi.conf_key_typo('stage', p_key);
        if v_other is not null then
            raise exception 'unknown key "%" in [stage-%] (did you mean %?)', p_key, p_stage, v_other
                using errcode = 'PX044';
        end if;
        return;                         -- the program's own key
    end if;
    if p_value is null then
        return;                         -- back to its default; PROGRAM: config_graph_check
    end if;
    if k.type in ('string', 'stage', 'option-list') and p_value = '' then
        if k.required then
            raise exception '%: must not be empty', v_where using errcode = 'PX044';
        end if;
        return;
    end if;
    case k.type
    when 'bool', 'tristate' then
        if lower(p_value) not in ('yes', 'no', 'true', 'false', 'on', 'off', '1', '0')
           and not (k.type = 'tristate' and p_value = '') then
            raise exception '%: invalid value "%": expected yes or no (or true/false, on/off, 1/0)', v_where, p_value
                using errcode = 'PX044';
        end if;
    when 'int' then
        if p_value !~ '^-?[0-9]+$' or p_value::numeric < coalesce(k.min, -2147483648)
           or p_value::numeric > coalesce(k.max, 2147483647) then
            raise exception '%: invalid value "%": expected an integer from % to %', v_where, p_value,
                coalesce(k.min, -2147483648), coalesce(k.max, 2147483647) using errcode = 'PX044';
        end if;
    when 'duration' then
        v_ms := pepsi.conf_duration_ms(p_value);
        if v_ms is null then
            raise exception '%: invalid value "%": expected a duration such as 500ms, 30s, 5min, 120h%', v_where, p_value,
                case when p_value ~* 'm$' then ' ("m" is ambiguous: write min or ms)'
                     when strpos(p_value, '.') > 0 then ' (a fraction must come to whole milliseconds)'
                     else '' end using errcode = 'PX044';
        end if;
        if v_ms <= 0 or v_ms < coalesce(k.min, 1) or v_ms > coalesce(k.max, v_ms) then
            raise exception '%: invalid value "%": a duration must be greater than 0', v_where, p_value
                using errcode = 'PX044';
        end if;
    when 'stage' then
        if not pepsi.stage_name_valid(p_value) then
            raise exception '%: invalid value "%": expected a stage name (1 to 63 characters of A-Z, a-z, 0-9, ''_'', ''.'', ''-'', starting with a letter or digit)',
                v_where, p_value using errcode = 'PX044';
        end if;
    when 'option-list' then
        for v_item in select t from regexp_split_to_table(p_value, '[ \t,]+') t where t <> '' loop
            if v_item !~ '^[A-Z][A-Z0-9_]*$' or length(v_item) >= 256 then
                raise exception '%: "%" is not an option name', v_where, v_item using errcode = 'PX044';
            elsif pepsi.settings_option_operator_only(v_item) then
                raise exception '%: "%" is operator-only: it runs code, names a URL, carries a credential or routes messages',
                    v_where, v_item using errcode = 'PX044';
            end if;
        end loop;
    else
        null;                           -- string, any: the runner checks (PROGRAM on its host)
    end case;
end
$$;

create function pepsi.config_graph()
returns table (stage text, program text, refs jsonb)
language sql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The stage graph as SQL knows it, merged as the runner merges it: the
-- file's sections the dispatchers last published (the newest row per
-- stage) and the overlay's sections, less the sections the overlay
-- removed; PROGRAM and the stage references (NEXT, BOUNCE_STAGE, THEN,
-- ELSE: refs, only those set) with the overlay's rows over the file's.
    with ov as (
        select substr(o.section, 7) as stage, o.key, o.value from pepsi.config_override o
    ), pub as (
        select distinct on (s.stage) s.stage, s.program, s.refs
          from pepsi.stage_served s where s.in_file
         order by s.stage, s.published_at desc, s.owner_slot
    ), names as (
        select p.stage from pub p union select o.stage from ov o where o.key <> '*'
        except select o.stage from ov o where o.key = '*'
    )
    select n.stage,
           case when exists (select from ov o where o.stage = n.stage and o.key = 'PROGRAM')
                then (select o.value from ov o where o.stage = n.stage and o.key = 'PROGRAM')
                else (select p.program from pub p where p.stage = n.stage) end,
           coalesce((select jsonb_object_agg(r.key, r.target)
                       from (select rk.key,
                                    case when exists (select from ov o where o.stage = n.stage and o.key = rk.key)
                                         then (select nullif(o.value, '') from ov o where o.stage = n.stage and o.key = rk.key)
                                         else (select p.refs ->> rk.key from pub p where p.stage = n.stage) end as target
                               from pepsi.config_key rk
                              where rk.section_kind in ('stage', 'stage-own') and rk.type = 'stage') r
                      where r.target is not null), '{}')
      from names n
$$;

create function pepsi.config_graph_check(p_stage text)
returns void
language plpgsql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Raises PX044 when, after a change of [stage-<p_stage>], the graph SQL
-- knows (pepsi.config_graph) has that stage without a PROGRAM, that stage
-- naming a stage it does not know, or another stage naming p_stage when
-- p_stage is gone. Read after the change, in its transaction; the graph
-- is built once.
declare
    r record;
begin
    for r in with g as materialized (select * from pepsi.config_graph())
             select 'program' as what, g.stage, null as key, null as target
               from g where g.stage = p_stage and coalesce(g.program, '') = ''
             union all
             (select 'ref', g.stage, e.key, e.value
                from g cross join lateral jsonb_each_text(g.refs) e
               where (g.stage = p_stage or e.value = p_stage)
                 and not exists (select from g t where t.stage = e.value)
               order by g.stage = p_stage desc, g.stage, e.key)
             limit 1 loop
        if r.what = 'program' then
            raise exception 'section [stage-%]: PROGRAM is required', p_stage using errcode = 'PX044',
                hint = 'A stage that no runner has published yet needs config_set(stage, ''PROGRAM'', ...) first.';
        end if;
        raise exception 'key "%" in [stage-%]: no section [stage-%]', r.key, r.stage, r.target
            using errcode = 'PX044',
            hint = case when r.stage = p_stage
                        then 'The stages SQL knows are the file''s, as the runners published them (pepsi.stage_served), and the overlay''s; add the target first.'
                        else format('[stage-%s] names it: change its %s first.', r.stage, r.key) end;
    end loop;
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
-- section that the overlay had removed. The key, the value and the
-- graph are checked here (issue 15; see the head of this file); what
-- SQL cannot check, the dispatcher does when it reloads, and a value it
-- cannot parse stops it with exit 78 (D-118). NOTIFY config_changed.
-- Raises PX001 (stage name), PX003 (key, NULL value: use config_unset),
-- PX044 (invalid configuration).
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
    perform pepsi.config_value_check(p_stage, p_key, p_value);
    delete from pepsi.config_override o where o.section = v_section and o.key = '*';
    insert into pepsi.config_override as o (section, key, value)
    values (v_section, p_key, p_value)
    on conflict (section, key) do update
        set value = excluded.value, updated_at = now(), updated_by = session_user;
    perform pepsi.config_graph_check(p_stage);
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
-- NOTIFY config_changed. Raises PX001, PX003, PX044 (a typo'd key,
-- PROGRAM, a stage reference another stage needs). Tables: config_override.
declare
    v_section text := pepsi.config_section_check(p_stage);
begin
    perform pepsi.config_key_check(p_key);
    perform pepsi.config_value_check(p_stage, p_key, null);
    insert into pepsi.config_override as o (section, key, value)
    values (v_section, p_key, null)
    on conflict (section, key) do update
        set value = null, updated_at = now(), updated_by = session_user;
    perform pepsi.config_graph_check(p_stage);
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
-- Raises PX001, PX044 (a stage SQL knows still names it: NEXT,
-- BOUNCE_STAGE, THEN, ELSE). Tables: config_override.
declare
    v_section text := pepsi.config_section_check(p_stage);
begin
    delete from pepsi.config_override o where o.section = v_section;
    insert into pepsi.config_override (section, key, value) values (v_section, '*', null);
    perform pepsi.config_graph_check(p_stage);
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
revoke all on function pepsi.conf_duration_ms(text) from public;
revoke all on function pepsi.conf_edit_distance(text, text) from public;
revoke all on function pepsi.conf_key_typo(text, text) from public;
revoke all on function pepsi.config_value_check(text, text, text) from public;
revoke all on function pepsi.config_graph() from public;
revoke all on function pepsi.config_graph_check(text) from public;
revoke all on function pepsi.config_set(text, text, text) from public;
revoke all on function pepsi.config_unset(text, text) from public;
revoke all on function pepsi.config_remove_stage(text) from public;
revoke all on function pepsi.config_clear(text) from public;
revoke all on function pepsi.config_overlay() from public;
revoke all on function pepsi.telemetry_changed() from public;
grant execute on function pepsi.config_overlay() to pepsi_runner, pepsi_worker, pepsi_reader;
grant select on pepsi.config_override to pepsi_reader;
-- The overlay is the operator's to edit (issue 15); every edit is validated.
grant execute on function pepsi.config_set(text, text, text), pepsi.config_unset(text, text),
    pepsi.config_remove_stage(text), pepsi.config_clear(text) to pepsi_operator;

commit;
