-- issue 19, producer throughput: workqueue_inject_batch checks all its
-- elements in one statement (pepsi.workqueue_batch_valid) and runs the
-- per-element checks only to name a bad element; the generated sender_key
-- is inlined (sender_key_of, domain_of and peer_key_of without SET);
-- workqueue_insert looks its sequences up once. Same behaviour, asserted
-- against the previous definitions themselves: their text is taken from
-- the deploy scripts that last defined them (public.pepsi_source, loaded
-- by scripts/test-sql), installed in this transaction, and every input
-- runs through both: the ids in input order, every stored column but ids,
-- each refusal's SQLSTATE and message naming the element, every sender
-- key. Nothing here is timed.

begin;
select plan(55);

set local track_functions = 'pl';

-- 'ok', or the SQLSTATE and message p_sql raised (given p_arg as $1)
create function pg_temp.outcome(p_sql text, p_arg jsonb default null) returns text
language plpgsql as $$
begin
    execute p_sql using p_arg;
    return 'ok';
exception when others then
    return sqlstate || ': ' || sqlerrm;
end
$$;

-- The CREATE statement of the function that starts with p_head in
-- deploy/p_file, as CREATE OR REPLACE.
create function pg_temp.definition(p_file text, p_head text) returns text
language plpgsql as $fn$
declare
    v_body text := (select s.body from public.pepsi_source s where s.kind = 'deploy' and s.file = p_file);
    v_from int := strpos(v_body, p_head);
    v_rest text;
    v_open int;
begin
    if v_from = 0 then
        raise exception 'deploy/% has no "%"', p_file, p_head;
    end if;
    v_rest := substr(v_body, v_from);
    v_open := strpos(v_rest, '$$');
    return regexp_replace(left(v_rest, v_open + 1 + strpos(substr(v_rest, v_open + 2), E'\n$$;') + 3),
                          '^create function', 'create or replace function');
end
$fn$;

-- Installs the definitions before inject_batch_fast (p_old) or those of
-- inject_batch_fast.
create function pg_temp.use(p_old boolean) returns void
language plpgsql as $$
declare
    v_heads text[] := array['create function pepsi.domain_of(', 'create function pepsi.peer_key_of(',
                            'create function pepsi.sender_key_of(',
                            'create or replace function pepsi.workqueue_insert(',
                            'create or replace function pepsi.workqueue_inject_batch('];
    v_files text[] := array['workqueue.sql', 'workqueue.sql', 'workqueue.sql', 'shard_topology.sql',
                            'workqueue_enqueue_options.sql'];
begin
    for i in 1 .. 5 loop
        execute pg_temp.definition(case when p_old then v_files[i] else 'inject_batch_fast.sql' end,
                                   case when p_old then v_heads[i]
                                        else replace(v_heads[i], 'create function', 'create or replace function') end);
    end loop;
end
$$;

-- calls of a PL/pgSQL function in this transaction (track_functions)
create function pg_temp.calls(p_function regprocedure) returns bigint
language sql as $$
    select coalesce((select f.calls from pg_stat_xact_user_functions f where f.funcid = p_function), 0)
$$;

-- the rows of ids p_ids, each as JSON without its ids, with its body
create function pg_temp.stored(p_ids bigint[]) returns jsonb[]
language sql as $$
    select array_agg(to_jsonb(w) - 'workqueue_id' - 'body_id'
                     || jsonb_build_object('body_row', w.body_id is not null, 'body', encode(b.body, 'hex'),
                                           'headers', b.headers)
                     order by i.n)
      from unnest(p_ids) with ordinality as i(id, n)
           join pepsi.workqueue w on w.workqueue_id = i.id
           left join pepsi.workqueue_body b on b.body_id = w.body_id
$$;

-- ids relative to the first, 'held' for the id of the row that held a key
create function pg_temp.shape(p_ids bigint[], p_held bigint) returns text[]
language sql as $$
    select array_agg(case when i.id = p_held then 'held' else (i.id - p_ids[1])::text end order by i.n)
      from unnest(p_ids) with ordinality as i(id, n)
$$;

-- The definitions under test are deployed; the previous ones can be read.
select ok(pg_temp.definition('inject_batch_fast.sql', 'create function pepsi.workqueue_batch_valid(') like '%$$;',
          'issue 19: the test reads the deploy scripts (public.pepsi_source)');
select is(pg_temp.outcome('select pg_temp.use(true)') || pg_temp.outcome('select pg_temp.use(false)'), 'okok',
          'issue 19: the previous definitions and the new ones install from their deploy scripts');

-- A varied batch ------------------------------------------------------------------

-- A row holds the key 'held' throughout.
create temp table held on commit drop as select pepsi.workqueue_inject('one', p_dedupe_key => 'held') as id;

create temp table batch on commit drop as
select jsonb_build_array(
    jsonb_build_object('stage', 'one', 'body', 'x'),
    jsonb_build_object('stage', 'Two.b-c_d', 'tube', 't+/;.$_()-x', 'body_base64', 'AAEC/w==',
                       'headers', E'X-A: 1\r\n', 'envelope_sender', 'Bob@Example.COM',
                       'recipients', jsonb_build_array('a@b.org', '"q r"@Host.NET'), 'origin_user', '',
                       'origin_addr', '2001:db8:1:2:3:4:5:6', 'state', jsonb_build_object('k', jsonb_build_array(1, 2)),
                       'subject', 'Grüße ✓', 'header_from', 'Bob <bob@example.com>'),
    jsonb_build_object('stage', 'one', 'envelope_sender', '', 'recipients', jsonb_build_array('Dsn@ÄÖ.Example'),
                       'origin_addr', '::ffff:192.0.2.7', 'priority', '-5'),
    jsonb_build_object('stage', 'one', 'origin_user', 'Ünïcödé', 'origin_addr', '192.0.2.1/24', 'priority', 7,
                       'run_at', '2000-01-01T00:00:00Z'),
    jsonb_build_object('stage', 'one', 'dedupe_key', 'k-1', 'priority', null, 'run_at', null),
    jsonb_build_object('stage', 'one', 'dedupe_key', 'k-1', 'body', 'the same key'),
    jsonb_build_object('stage', 'one', 'dedupe_key', 'held'),
    jsonb_build_object('stage', 'one', 'tube', 'later', 'run_at', now() + interval '1 day', 'body', 'delayed'),
    jsonb_build_object('stage', 'one', 'envelope_sender', 'x@Y', 'recipients', '[]'::jsonb, 'headers', null,
                       'body', null, 'state', '{}'::jsonb, 'origin_addr', null),
    jsonb_build_object('stage', 'one', 'recipients', (select jsonb_agg('r' || i || '@X.example') from generate_series(1, 1000) i),
                       'subject', repeat('s', 998), 'header_from', repeat('f', 998), 'origin_user', repeat('u', 256),
                       'envelope_sender', repeat('l', 64) || '@' || repeat('d', 189)),
    jsonb_build_object('stage', repeat('s', 63), 'tube', repeat('t', 200)),
    jsonb_build_object('stage', 'one', 'priority', -1000, 'dedupe_key', repeat('d', 255)),
    jsonb_build_object('stage', 'one', 'priority', 1000, 'run_at', now() + interval '364 days'))
    || (select jsonb_agg(jsonb_build_object('stage', 'one', 'tube', 'tube-' || i % 5, 'body', 'm' || i,
                                            'envelope_sender', 's' || i || '@Dom' || i % 3 || '.org'))
          from generate_series(14, 40) i) as b;

create temp table run (way text primary key, ids bigint[], rows jsonb[], item_checks bigint) on commit drop;

-- ways: new (inject_batch_fast), old (the previous definitions), single
-- (workqueue_inject per element); each run's rows are deleted after it
-- (but the held one), so that the dedupe keys are free for the next
create function pg_temp.run(p_way text) returns void
language plpgsql as $$
declare
    v_checks bigint := pg_temp.calls('pepsi.workqueue_item_check(pepsi.workqueue_item, text)');
    v_ids bigint[];
    m jsonb;
begin
    if p_way = 'single' then
        v_ids := '{}';
        for m in select e from jsonb_array_elements((select b from batch)) e loop
            v_ids := v_ids || pepsi.workqueue_inject(
                p_stage => m->>'stage',
                p_body => case when m->>'body_base64' is not null then decode(m->>'body_base64', 'base64')
                               else convert_to(m->>'body', 'UTF8') end,
                p_headers => m->>'headers', p_envelope_sender => m->>'envelope_sender',
                p_recipients => array(select jsonb_array_elements_text(coalesce(m->'recipients', '[]'))),
                p_origin_user => m->>'origin_user', p_origin_addr => (m->>'origin_addr')::inet,
                p_state => coalesce(m->'state', '{}'), p_tube => coalesce(m->>'tube', 'default'),
                p_subject => m->>'subject', p_header_from => m->>'header_from',
                p_run_at => (m->>'run_at')::timestamptz, p_priority => (m->>'priority')::int,
                p_dedupe_key => m->>'dedupe_key');
        end loop;
    else
        perform pg_temp.use(p_way = 'old');
        v_ids := array(select pepsi.workqueue_inject_batch((select b from batch)));
        perform pg_temp.use(false);
    end if;
    insert into run values (p_way, v_ids, pg_temp.stored(v_ids),
                            pg_temp.calls('pepsi.workqueue_item_check(pepsi.workqueue_item, text)') - v_checks);
    delete from pepsi.workqueue w where w.workqueue_id = any (v_ids) and w.workqueue_id <> (select id from held);
end
$$;
select pg_temp.run('new');
select pg_temp.run('old');
select pg_temp.run('single');

select is((select cardinality(ids) from run where way = 'new'), 40, 'issue 19: one id per element');
select is((select pg_temp.shape(ids, (select id from held)) from run where way = 'new'),
          (select pg_temp.shape(ids, (select id from held)) from run where way = 'old'),
          'issue 19: the same ids in input order as before: new rows numbered in input order, a key held in the batch or by a live row gives that row''s id');
select is((select array[ids[6] = ids[5], ids[7] = (select id from held), ids[1] < ids[2] and ids[2] < ids[40]]
             from run where way = 'new'), array[true, true, true],
          'issue 19: element 6 gets element 5''s id (same key), element 7 the live row''s, the others ascend');
select is((select rows from run where way = 'new'), (select rows from run where way = 'old'),
          'issue 19: every column of every row (but the ids) and every body as the previous definitions stored them');
select is((select rows from run where way = 'new'), (select rows from run where way = 'single'),
          'issue 19: ... and as workqueue_inject stores each element alone');
select is((select array[r.rows[2]->>'sender_key', r.rows[3]->>'sender_key', r.rows[4]->>'sender_key',
                        r.rows[8]->>'status', r.rows[9]->>'sender_key']
             from run r where r.way = 'new'),
          array['ip:2001:db8:1:2::/64', 'ip:192.0.2.7', 'user:Ünïcödé', 'paused', 'from:y'],
          'issue 19: the rows are what they should be (sender keys, a delayed row paused)');
select is((select item_checks from run where way = 'new'), 0::bigint,
          'issue 19: a valid batch is checked in one statement: workqueue_item_check is not called');
select is((select item_checks from run where way = 'old'), 40::bigint,
          'issue 19: the previous definition called workqueue_item_check once per element');

-- Refusals ------------------------------------------------------------------------

-- Each case: a batch whose element 3 (or the one named) is bad, run
-- through the new and the previous definitions; the expected SQLSTATE and
-- message. Elements 1, 2 and 4 are good.
create temp table refusal (n int primary key, what text, bad jsonb, expected text, new text, old text,
                           new_checks bigint) on commit drop;
insert into refusal (n, what, bad, expected) values
 (1, 'bad stage name', '{"stage": "-one"}', 'PX001: message 3: invalid stage name "-one"'),
 (2, 'no stage', '{"body": "x"}', 'PX001: message 3: invalid stage name "<null>"'),
 (3, 'stage name of 64 bytes', jsonb_build_object('stage', repeat('s', 64)),
     'PX001: message 3: invalid stage name "' || repeat('s', 64) || '"'),
 (4, 'bad tube name', '{"stage": "one", "tube": "a b"}', 'PX006: message 3: invalid tube name "a b"'),
 (5, 'tube of 201 bytes', jsonb_build_object('stage', 'one', 'tube', repeat('t', 201)),
     'PX006: message 3: invalid tube name "' || repeat('t', 61) || '...": 201 bytes; the limit is 200'),
 (6, 'subject too big', jsonb_build_object('stage', 'one', 'subject', repeat('s', 999)),
     'PX003: message 3: subject is 999 bytes; the limit is 998'),
 (7, 'header_from too big', jsonb_build_object('stage', 'one', 'header_from', repeat('f', 999)),
     'PX003: message 3: header_from is 999 bytes; the limit is 998'),
 (8, 'headers too big', jsonb_build_object('stage', 'one', 'headers', repeat('h', 1048577)),
     'PX003: message 3: headers is 1048577 bytes; the limit is 1048576'),
 (9, 'body too big', jsonb_build_object('stage', 'one', 'body', repeat('b', 67108865)),
     'PX003: message 3: body is 67108865 bytes; the limit is 67108864'),
 (10, 'origin_user too big', jsonb_build_object('stage', 'one', 'origin_user', repeat('u', 257)),
     'PX003: message 3: origin_user is 257 bytes; the limit is 256'),
 (11, 'state too big', jsonb_build_object('stage', 'one', 'state', jsonb_build_object('x', repeat('a', 1048576 - 8))),
     'PX003: message 3: state is 1048577 bytes; the limit is 1048576'),
 (12, '1001 recipients', jsonb_build_object('stage', 'one', 'recipients',
                                            (select jsonb_agg('r' || i || '@x') from generate_series(1, 1001) i)),
     'PX003: message 3: recipients has 1001 entries; the limit is 1000'),
 (13, 'a recipient that is no address', '{"stage": "one", "recipients": ["a@b", "noat"]}',
     'PX002: message 3: recipient 2 "noat" is not an address'),
 (14, 'a NULL recipient', '{"stage": "one", "recipients": ["a@b", null]}',
     'PX002: message 3: recipient 2 "<null>" is not an address'),
 (15, 'a recipient with two @', '{"stage": "one", "recipients": ["a@b@c"]}',
     'PX002: message 3: recipient 1 "a@b@c" is not an address'),
 (16, 'a recipient local part of 65 bytes', jsonb_build_object('stage', 'one', 'recipients',
                                                               jsonb_build_array(repeat('l', 65) || '@d')),
     'PX003: message 3: recipient 1 local part is 65 bytes; the limit is 64'),
 (17, 'an envelope sender that is no address', '{"stage": "one", "envelope_sender": "a b@c"}',
     'PX002: message 3: envelope sender "a b@c" is not an address'),
 (18, 'an envelope sender of 255 bytes', jsonb_build_object('stage', 'one', 'envelope_sender',
                                                            repeat('l', 60) || '@' || repeat('d', 194)),
     'PX003: message 3: envelope sender is 255 bytes; the limit is 254'),
 (19, 'priority 1001', '{"stage": "one", "priority": 1001}',
     'PX052: message 3: priority 1001 is outside -1000..1000'),
 (20, 'priority "-1001"', '{"stage": "one", "priority": "-1001"}',
     'PX052: message 3: priority -1001 is outside -1000..1000'),
 (21, 'priority not an integer', '{"stage": "one", "priority": "high"}',
     'PX052: message 3: priority "high" is not an integer'),
 (22, 'run_at infinity', '{"stage": "one", "run_at": "infinity"}',
     'PX053: message 3: run_at infinity is more than a year ahead or not a time'),
 (23, 'run_at two years ahead', jsonb_build_object('stage', 'one', 'run_at', '2100-01-01 00:00:00+00'),
     'PX053: message 3: run_at 2100-01-01 00:00:00+00 is more than a year ahead or not a time'),
 (24, 'run_at not a time', '{"stage": "one", "run_at": "soon"}', 'PX003: message 3: run_at "soon" is not a time'),
 (25, 'empty dedupe_key', '{"stage": "one", "dedupe_key": ""}',
     'PX054: message 3: dedupe_key is 0 bytes; it must have 1 to 255'),
 (26, 'dedupe_key of 256 bytes', jsonb_build_object('stage', 'one', 'dedupe_key', repeat('k', 256)),
     'PX054: message 3: dedupe_key is 256 bytes; it must have 1 to 255'),
 (27, 'origin_addr not an address', '{"stage": "one", "origin_addr": "host"}',
     'PX003: message 3: origin_addr "host" is not an IP address'),
 (28, 'a malformed element', '{"stage": "one", "stage2": "x"}', 'PX003: message 3 of the batch is malformed'),
 (29, 'bad stage and bad recipient: the stage is named', '{"stage": "-", "recipients": ["noat"]}',
     'PX001: message 3: invalid stage name "-"'),
 (30, 'bad tube and bad stage: the stage is named', '{"stage": "-", "tube": "-"}',
     'PX001: message 3: invalid stage name "-"'),
 (31, 'bad priority and big subject: the subject is named',
     jsonb_build_object('stage', 'one', 'priority', 5000, 'subject', repeat('s', 999)),
     'PX003: message 3: subject is 999 bytes; the limit is 998');

-- the batch of case p_n: good elements around the bad one
create function pg_temp.refusal_batch(p_n int) returns jsonb
language sql as $$
    select jsonb_build_array(jsonb_build_object('stage', 'one', 'body', 'x'),
                             jsonb_build_object('stage', 'one', 'recipients', jsonb_build_array('a@b.c'),
                                                'priority', 3, 'dedupe_key', 'r' || p_n),
                             r.bad,
                             jsonb_build_object('stage', 'two', 'envelope_sender', 'x@y'))
      from refusal r where r.n = p_n
$$;

create function pg_temp.refuse_all(p_old boolean) returns void
language plpgsql as $$
declare
    v_n int;
    v_checks bigint;
    v_outcome text;
begin
    perform pg_temp.use(p_old);
    for v_n in select r.n from refusal r order by r.n loop
        v_checks := pg_temp.calls('pepsi.workqueue_item_check(pepsi.workqueue_item, text)');
        v_outcome := pg_temp.outcome('select pepsi.workqueue_inject_batch($1)', pg_temp.refusal_batch(v_n));
        if p_old then
            update refusal set old = v_outcome where n = v_n;
        else
            update refusal set new = v_outcome,
                               new_checks = pg_temp.calls('pepsi.workqueue_item_check(pepsi.workqueue_item, text)') - v_checks
             where n = v_n;
        end if;
    end loop;
    perform pg_temp.use(false);
end
$$;
select pg_temp.refuse_all(false);
select pg_temp.refuse_all(true);

select is(r.new, r.expected, format('issue 19: %s in element 3 refuses the batch, naming it, with its SQLSTATE', r.what))
  from refusal r order by r.n;
select is_empty($$select n, what, new, old from refusal where new is distinct from old$$,
                'issue 19: every refusal is the previous definition''s, SQLSTATE and message');
select is((select new_checks from refusal where n = 1), 2::bigint,
          'issue 19: a batch with a bad element is checked element by element: the two before it pass workqueue_item_check, the third raises');
-- An element whose options are bad comes before a later bad element.
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "one"}, {"stage": "one", "priority": -5000},
                                                                   {"stage": "-"}]')$$),
          'PX052: message 2: priority -5000 is outside -1000..1000',
          'issue 19: the first bad element is named, whether its item or its options are bad');
select is((select count(*) from pepsi.workqueue where workqueue_id <> (select id from held)), 0::bigint,
          'issue 19: no refused batch wrote a row');

-- Sender keys ---------------------------------------------------------------------

create temp table sk on commit drop as
select u.v as origin_user, a.v::inet as origin_addr, e.v as envelope_sender, r.v::text[] as recipients,
       null::text as new_key, null::text as old_key, null::text as stored_key
  from unnest(array[null, '', 'alice', 'Alice@Example.COM', 'Ünïcödé', ' x y ']) u(v)
 cross join unnest(array[null, '192.0.2.1', '192.0.2.1/24', '10.0.0.0/8', '::1', '2001:db8:1:2:3:4:5:6',
                         '2001:DB8::/32', '::ffff:192.0.2.7', '::ffff:0:0/96']) a(v)
 cross join unnest(array[null, '', 'a@Example.COM', 'noat', 'a@b@C.d', '"q@x"@dOmain', 'üser@ÄÖ.De', '@',
                         'x@']) e(v)
 cross join unnest(array[null, '{}', '{x@Y.org}', '{NULL}', '{noat,a@B}', '{Ünï@ĞÜ.TR,z@z}', '{@İ}']) r(v);

update sk set new_key = pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients);
-- the generated column, written through the new definition
create temp table sk_rows on commit drop as
with ins as (
    insert into pepsi.workqueue (stage, origin_user, origin_addr, envelope_sender, recipients)
    select 'skey', s.origin_user, s.origin_addr, s.envelope_sender, coalesce(s.recipients, '{}') from sk s
    returning origin_user, origin_addr, envelope_sender, recipients, sender_key)
select * from ins;
select pg_temp.use(true);
update sk set old_key = pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients);
select pg_temp.use(false);

select is((select count(*) from sk), 3402::bigint, 'issue 19: 3,402 sender-key inputs');
select is((select count(distinct new_key) from sk), (select count(distinct old_key) from sk),
          'issue 19: as many distinct sender keys as before');
select is_empty($$select origin_user, origin_addr, envelope_sender, recipients, new_key, old_key
                    from sk where new_key is distinct from old_key$$,
                'issue 19: sender_key_of gives the previous definition''s key for every input (NULLs, case, unicode, IPv4, IPv6 /64, IPv4-mapped, masks, the null sender)');
select is_empty($$select r.origin_user, r.origin_addr, r.envelope_sender, r.recipients, r.sender_key,
                         pepsi.sender_key_of(r.origin_user, r.origin_addr, r.envelope_sender, r.recipients)
                    from sk_rows r where r.sender_key is distinct from (
                        select s.old_key from sk s
                         where s.origin_user is not distinct from r.origin_user
                           and s.origin_addr is not distinct from r.origin_addr
                           and s.envelope_sender is not distinct from r.envelope_sender
                           and coalesce(s.recipients, '{}') = r.recipients
                         limit 1)$$,
                'issue 19: the stored column workqueue.sender_key is the previous definition''s key');
select is((select array[pepsi.sender_key_of(null, null, null, null), pepsi.sender_key_of('', '::ffff:10.1.2.3', '', '{}'),
                        pepsi.sender_key_of(null, null, '', '{Z@ÄB.Example}'), pepsi.sender_key_of(null, null, 'a@b@C', null)]),
          array['from:', 'ip:10.1.2.3', 'null:äb.example', 'from:c'],
          'issue 19: sender keys spelled out');

-- the plan: the key is an expression, no function call
create function pg_temp.plan_of(p_sql text) returns text
language plpgsql as $$
declare
    v_line text;
    v_plan text := '';
begin
    for v_line in execute 'explain (verbose, costs off) ' || p_sql loop
        v_plan := v_plan || v_line || E'\n';
    end loop;
    return v_plan;
end
$$;
select ok(pg_temp.plan_of('select pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients) from sk')
              !~ '(sender_key_of|peer_key_of|domain_of)'
          and pg_temp.plan_of('select pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients) from sk')
              ~ 'split_part',
          'issue 19: sender_key_of, peer_key_of and domain_of are inlined: the plan computes the key without calling them');
select pg_temp.use(true);
select ok(pg_temp.plan_of('select pepsi.sender_key_of(origin_user, origin_addr, envelope_sender, recipients) from sk')
              ~ 'sender_key_of',
          'issue 19: with SET search_path (the previous definition) the plan calls sender_key_of: the check above can fail');
select pg_temp.use(false);

-- workqueue_batch_valid alone -----------------------------------------------------

create function pg_temp.item(p_stage text, p_tube text default 'default', p_sender text default null,
                             p_recipients text[] default '{}', p_state jsonb default '{}',
                             p_arrived timestamptz default now())
returns pepsi.workqueue_item
language sql as $$
    select row(p_stage, p_tube, null, null, p_sender, p_recipients, null, null, p_state, null, null, p_arrived,
               null)::pepsi.workqueue_item
$$;
select is(array[pepsi.workqueue_batch_valid(array[pg_temp.item('one'), pg_temp.item('two', 'x', '', '{a@b}')], null, null, null),
                pepsi.workqueue_batch_valid('{}', null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one')], array[now()], array[0], array['k'])],
          array[true, true, true],
          'issue 19: workqueue_batch_valid passes good items and options');
select is(array[pepsi.workqueue_batch_valid(array[pg_temp.item('one'), pg_temp.item(null)], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', null)], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', p_state => null)], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', p_state => '[]')], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', p_arrived => null)], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', p_sender => 'x')], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one', p_recipients => '{NULL}')], null, null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one'), pg_temp.item('one')], array[null, now()],
                                            array[null, 1001], array[null, 'k']),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one')], array['infinity'::timestamptz], null, null),
                pepsi.workqueue_batch_valid(array[pg_temp.item('one')], null, null, array[''])],
          array[false, false, false, false, false, false, false, false, false, false],
          'issue 19: workqueue_batch_valid refuses what inject cannot reach through a batch: NULL stage or tube, NULL or non-object state, NULL arrived_at, a bad sender, a NULL recipient, bad options');
select is(pg_temp.outcome($$select pepsi.workqueue_batch_valid('{}', null, null, null)$$) || ' '
          || has_function_privilege('public', 'pepsi.workqueue_batch_valid(pepsi.workqueue_item[], timestamptz[], int[], text[])', 'execute')::text,
          'ok false', 'issue 19: workqueue_batch_valid is not granted to PUBLIC');

select * from finish();
rollback;
