-- issue 13 (slice conf): pepsi.config_key is the runner's key table
-- (runner/src/lib/conf.c, published by `pepsi-runner conf-keys sql` as
-- deploy/config_keys.sql; `make lint` keeps the two equal). Here: the keys
-- conf/pepsi.conf documents are exactly the table's, with the same
-- defaults, and pepsi.settings_option_operator_only, which now reads the
-- table, answers as the rule it replaced (a list and a regular expression
-- written out in deploy/settings.sql) on every name below.
-- scripts/test-sql loads conf/pepsi.conf into public.pepsi_source.

begin;
select plan(7);

create temp table conf_text on commit drop as
select body from public.pepsi_source where kind = 'conf' and file = 'pepsi.conf';

select is((select count(*)::int from conf_text), 1,
          'issue 13: scripts/test-sql loaded conf/pepsi.conf into public.pepsi_source');

-- Every "KEY = value" line of pepsi.conf, commented out or not, with the
-- section it is under: [pepsi], [pepsi-postgres], [pepsi-dispatch], or the
-- commented template "# [stage-NAME]" that lists every key of a stage
-- section (the example stages below it set stage programs' own keys too).
create temp table conf_line on commit drop as
select l.n, l.line,
       (select h.m[1] from (select n2, pg_catalog.regexp_match(line2, '^#?\s*\[([A-Za-z0-9_.-]+)\]\s*$') as m
                              from pg_catalog.regexp_split_to_table((select body from conf_text), '\n')
                                   with ordinality as x(line2, n2)) h
         where h.m is not null and h.n2 < l.n order by h.n2 desc limit 1) as section
  from pg_catalog.regexp_split_to_table((select body from conf_text), '\n') with ordinality as l(line, n);

create temp table documented on commit drop as
select case when c.section = 'stage-NAME' then 'stage' else c.section end as section_kind,
       m[1] as key, m[2] as value
  from conf_line c
 cross join lateral pg_catalog.regexp_match(c.line, '^#?\s*([A-Z][A-Z0-9_]*)\s*=\s*(.*?)\s*$') m
 where m is not null and c.section in ('pepsi', 'pepsi-postgres', 'pepsi-dispatch', 'stage-NAME');

select cmp_ok((select count(*)::int from documented), '>=', 30,
              'issue 13: the keys of conf/pepsi.conf were found (the parse above is not empty)');

select set_eq($$select section_kind, key from documented$$,
              $$select section_kind, key from pepsi.config_key
                 where section_kind in ('pepsi', 'pepsi-postgres', 'pepsi-dispatch', 'stage')$$,
              'issue 13: conf/pepsi.conf documents exactly the keys of pepsi.config_key (the runner''s table)');

select set_eq($$select section_kind, key, value from documented d
                 where not exists (select from pepsi.config_key k
                                    where k.section_kind = d.section_kind and k.key = d.key and k.required)$$,
              $$select section_kind, key, default_value from pepsi.config_key
                 where section_kind in ('pepsi', 'pepsi-postgres', 'pepsi-dispatch', 'stage') and not required$$,
              'issue 13: each default conf/pepsi.conf shows is the table''s');

-- The rule as deploy/settings.sql wrote it before issue 13, the reference
-- (and MAX_RSS_GROWTH, issue 19: operator-only like MAX_MESSAGES).
create function pg_temp.old_operator_only(p_option text) returns boolean
language sql immutable as $$
    select p_option is null
        or p_option in ('PROGRAM', 'NEXT', 'BOUNCE_STAGE', 'THEN', 'ELSE', 'FUSION', 'USER_OPTIONS',
                        'PARALLELISM', 'QUEUE_LIMIT', 'MAX_MESSAGES', 'MAX_RSS_GROWTH', 'WORKER_IDLE_TIMEOUT',
                        'MAX_RUNTIME', 'PASS_CONNINFO')
        or p_option ~ '(COMMAND|CONDITION|URL|SECRET|PASSWORD|PASSWD|TOKEN|AUTH|CREDENTIAL|KEY|CONNINFO|SCRIPT|EXEC|PROGRAM|STAGE|HOST)'
$$;

create temp table probe on commit drop as
select distinct o from (
    select key as o from pepsi.config_key
    union all
    select k.key || '_X' from pepsi.config_key k
    union all
    select 'X_' || k.key from pepsi.config_key k
    union all
    select unnest(array['HEADERS', 'MAX_LIFETIME', 'TIMEOUT', 'LANGUAGE', 'SIGNATURE_TEXT', 'API_KEY',
                        'DB_PASSWORD', 'SIGNING_SECRET', 'SMTP_HOST', 'WEBHOOK_URL', 'METRICS_TOKEN',
                        'TOKEN_TTL', 'AUTHOR', 'MONKEY', 'STAGED', 'EXECUTE', 'A', 'THEN_X', 'NEXTS',
                        'PROGRAMS', 'FUSION2', 'SUBJECT_PREFIX', 'RETRIES'])
) x;

select is((select count(*)::int from probe where pepsi.settings_option_operator_only(o) <> pg_temp.old_operator_only(o)),
          0, 'issue 13: settings_option_operator_only, read from pepsi.config_key, answers as the old rule on '
             || (select count(*) from probe) || ' names');
select ok(pepsi.settings_option_operator_only(null), 'issue 11: a NULL option is operator-only, as before');

select ok(has_table_privilege('pepsi_reader', 'pepsi.config_key', 'select')
          and not has_table_privilege('pepsi_worker', 'pepsi.config_key', 'select'),
          'issue 13: pepsi_reader may read pepsi.config_key (pgtap/40 holds the full sets)');

select * from finish();
rollback;
