-- issue 13 (SQL clean-up): the helpers that replaced repeated code, each
-- called for real: pepsi.lock_key (every advisory lock), the stage and
-- tube name domains, pepsi.workqueue_create (every message row) and
-- pepsi.workqueue_release_due (every release of due paused rows). The
-- public functions built on them keep their own tests (04, 07, 13, 17,
-- 33, 37, 38, 42); these pin the helpers' contracts.

begin;
select plan(32);

-- lock_key -------------------------------------------------------------------

select row_eq($$select * from pepsi.lock_key('dispatcher', 3)$$, row(1885696115, 3),
              'issue 13: lock_key(dispatcher, slot) is (1885696115, slot), the class the runner takes (conn.h DISPATCH_LOCK_CLASS_SQL)');
select row_eq($$select * from pepsi.lock_key('reconcile')$$, row(1885696115, -1),
              'issue 13: lock_key(reconcile) is the pass''s lock (1885696115, -1) (W-26)');
select row_eq($$select * from pepsi.lock_key('anomaly_evaluate')$$, row(1885696115, -2),
              'issue 13: lock_key(anomaly_evaluate) is the run''s lock (1885696115, -2)');
select row_eq($$select * from pepsi.lock_key('anomaly_refresh', 2)$$, row(1885696115, -12),
              'issue 13: lock_key(anomaly_refresh, n) is (1885696115, -10 - n)');
select throws_ok($$select pepsi.lock_key('nonesuch')$$, 'XX000', 'unknown advisory lock "nonesuch"',
                 'issue 13: lock_key refuses a name it does not know (XX000), never a silent key');

-- A pass really takes the key lock_key names: held until the transaction ends.
select ok((select r.ran from pepsi.reconcile() r), 'a reconciliation pass runs');
select is((select count(*)::int from pg_locks l, pepsi.lock_key('reconcile') k
            where l.locktype = 'advisory' and l.pid = pg_backend_pid() and l.granted
              and l.classid = k.class_id::oid and l.objid = k.object_id::oid and l.objsubid = 2),
          1, 'issue 13: reconcile holds the advisory lock lock_key(reconcile) names');

-- workqueue_create -----------------------------------------------------------------

create temp table made (ord int, id bigint) on commit drop;
insert into made
select c.ord, c.id
  from pepsi.workqueue_create(array[
           row('h1', 'default', 'body one'::bytea, 'Subject: a', '', '{a@example.org}', 'u1', null, '{"k": 1}',
               'a', null, '2026-03-01 12:00:00+00', null)::pepsi.workqueue_item,
           row('h1', 'tb', null, null, null, '{}', null, '10.0.0.1', '{}', null, null,
               '2026-03-01 12:00:01+00', 424242)::pepsi.workqueue_item]) with ordinality as c(id, ord);

select is((select array_agg(w.stage || '/' || w.tube || '/' || w.status order by m.ord)
             from made m join pepsi.workqueue w on w.workqueue_id = m.id),
          '{h1/default/pending,h1/tb/pending}'::text[],
          'issue 13: workqueue_create writes each item, pending at its stage and tube, ids in input order');
select is((select array_agg(coalesce(w.webhook_event_id, -1) order by m.ord)
             from made m join pepsi.workqueue w on w.workqueue_id = m.id),
          '{-1,424242}'::bigint[],
          'issue 13: workqueue_create writes each item''s webhook_event_id (the event link of slice C; NULL: none)');
select ok((select (array_agg(id order by ord))[1] < (array_agg(id order by ord))[2] from made),
          'issue 13: workqueue_create returns the ids in input order');
select row_eq($$select b.headers, b.body from made m join pepsi.workqueue w on w.workqueue_id = m.id
                 join pepsi.workqueue_body b on b.body_id = w.body_id where m.ord = 1$$,
              row('Subject: a'::text, 'body one'::bytea),
              'issue 13: an item with a body gets a workqueue_body row of its own');
select is((select w.body_id from made m join pepsi.workqueue w on w.workqueue_id = m.id where m.ord = 2), null,
          'issue 13: an item without body or headers gets no body row');

select (select w.body_id from made m join pepsi.workqueue w on w.workqueue_id = m.id where m.ord = 1) as shared \gset
select count(*) as bodies_before from pepsi.workqueue_body \gset
select array_agg(c) as copies from pepsi.workqueue_create(
    array[row('h2', 'default', 'ignored'::bytea, null, null, '{}', null, null, '{}', null, null, now(), null)::pepsi.workqueue_item,
          row('h2', 'default', null, null, null, '{}', null, null, '{}', null, null, now(), null)::pepsi.workqueue_item],
    array[:shared, null]::bigint[]) c \gset
select is((select array_agg(coalesce(w.body_id, -1) order by w.workqueue_id) from pepsi.workqueue w
            where w.workqueue_id = any (:'copies'::bigint[])),
          array[:shared, -1]::bigint[],
          'issue 13: with p_body_ids, item n shares body n (body sharing, as a split does)');
select is((select count(*) from pepsi.workqueue_body), :bodies_before::bigint,
          'issue 13: shared bodies are not copied: no new workqueue_body row');

-- webhook_event_item ------------------------------------------------------------------

select row_eq($$select (i).stage, (i).tube, (i).body, (i).headers, (i).origin_user, (i).state, (i).arrived_at,
                     (i).webhook_event_id
                from (select pepsi.webhook_event_item(7, 'acme', 'ev_1', 'x'::bytea, '{"B": "2", "A": "1"}',
                                                      '2026-03-01 12:00:00+00', 'in', 't1', '{"reinjected_by_run": 3}') i) x$$,
              row('in'::text, 't1'::text, 'x'::bytea, E'A: 1\r\nB: 2\r\n'::text, 'webhook:acme'::text,
                  '{"webhook_event": 7, "webhook_provider": "acme", "external_id": "ev_1", "reinjected_by_run": 3}'::jsonb,
                  '2026-03-01 12:00:00+00'::timestamptz, 7::bigint),
              'issue 13: webhook_event_item is the message of an event (payload, header block in key order, origin, state, webhook_event_id)');

-- workqueue_release_due ---------------------------------------------------------------

select pepsi.workqueue_inject('rd') as due \gset
select pepsi.workqueue_inject('rd') as ahead \gset
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 12:00:00+00' where workqueue_id = :due;
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 12:00:01+00' where workqueue_id = :ahead;
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 11:00:00+00'
 where workqueue_id <> all (array[:due, :ahead]::bigint[]) and status = 'paused';

select is(pepsi.workqueue_release_due('2026-03-01 12:00:00+00'),
          (select count(*)::int from pepsi.workqueue where status = 'paused' and timeout <= '2026-03-01 12:00:00+00'),
          'issue 13: workqueue_release_due returns how many rows it released');
select row_eq(format('select status::text, timeout from pepsi.workqueue where workqueue_id = %s', :due),
              row('pending'::text, null::timestamptz),
              'issue 13: a row due at p_now is pending again, its timeout cleared (D-93)');
select row_eq(format('select status::text, timeout from pepsi.workqueue where workqueue_id = %s', :ahead),
              row('paused'::text, '2026-03-01 12:00:01+00'::timestamptz),
              'issue 13: a row due after p_now stays paused');

-- workqueue_sender_probe ------------------------------------------------------------

insert into pepsi.workqueue (stage, origin_user)
select 'sp', u from unnest('{a,a,a,b,c,c,c,c,c}'::text[]) with ordinality as x(u, n) order by n;
create temp table sp_ids as
select sender_key, array_agg(workqueue_id order by workqueue_id) as ids
  from pepsi.workqueue where stage = 'sp' group by sender_key;

select results_eq($$select i, sender_key, ids, last, batch from pepsi.workqueue_sender_probe('sp', '', null, 16)$$,
                  $$select row_number() over (order by sender_key), sender_key, ids, sender_key = 'user:c', 32
                      from sp_ids order by sender_key$$,
                  'issue 13, D-59: a probe yields every sender among the entries read, numbered, its ids oldest first, last on the last');
select results_eq($$select sender_key, cardinality(ids), last from pepsi.workqueue_sender_probe('sp', 'user:a', null, 3)$$,
                  $$values ('user:b'::text, 1, false), ('user:c', 2, true)$$,
                  'issue 13, D-59: a probe starts after p_after and reads p_limit entries (the last sender may have more)');
select results_eq($$select sender_key, last from pepsi.workqueue_sender_probe('sp', '', 'user:b', 16)$$,
                  $$values ('user:a'::text, false), ('user:b', true)$$,
                  'issue 13, D-59: p_upto bounds the senders (inclusive), as the wrapped window needs');
select results_eq($$select sender_key, batch from pepsi.workqueue_sender_probe('sp', 'user:b', null, 2)$$,
                  $$values ('user:c'::text, 4)$$,
                  'issue 13, D-59: after a batch of one sender the next probe reads 4 entries');
select is((select count(*)::int from pepsi.workqueue_sender_probe('sp', 'user:c', null, 16)), 0,
          'issue 13: a probe after the last sender yields nothing');

-- Inlined: the probe is an index scan of the caller's plan, not a function call.
-- (A few rows here: the planner is steered off a sequential scan, which
-- is not what this checks; 14-claim-fair-plan checks the claim at 1M rows.)
-- Sorts too: on a few rows, the narrower workqueue_pending_idx plus a
-- sort can cost the same as the sender index, and which one wins then
-- depends on the statistics the earlier files left (it flipped once in a
-- full run after issue 16 put priority into both indexes).
set local enable_seqscan = off;
set local enable_bitmapscan = off;
set local enable_sort = off;
create function pg_temp.plan_lines(p_sql text)
returns setof text language plpgsql as $$
begin
    return query execute 'explain ' || p_sql;
end $$;
create temp table probe_plan as
select l from pg_temp.plan_lines($$select f.* from (values ('sp'::text, 'user:a'::text)) s(stage, sender)
                                     cross join lateral pepsi.workqueue_sender_probe(s.stage, s.sender, null, 4) f$$) l;
select is((select array[count(*) filter (where l ~ 'Function Scan'),
                        count(*) filter (where l ~ 'Index (Only )?Scan using workqueue_pending_sender_idx'),
                        count(*) filter (where l ~ 'Scan')]::int[] from probe_plan),
          '{0,1,1}'::int[],
          'issue 13: workqueue_sender_probe is inlined: one scan of workqueue_pending_sender_idx, no function scan');
reset enable_seqscan;
reset enable_bitmapscan;
reset enable_sort;

-- Name domains -------------------------------------------------------------------

select is(array[pepsi.stage_name_valid('a'), pepsi.stage_name_valid('9lives'), pepsi.stage_name_valid(repeat('s', 63)),
                pepsi.stage_name_valid('-a'), pepsi.stage_name_valid(''), pepsi.stage_name_valid(repeat('s', 64)),
                pepsi.stage_name_valid('café'), pepsi.stage_name_valid(E'a\n')],
          '{t,t,t,f,f,f,f,f}'::boolean[], 'issue 13: stage_name_valid is the stage-name rule (1 to 63 of A-Za-z0-9_.-, first alphanumeric)');
select is(array[pepsi.tube_name_valid('default'), pepsi.tube_name_valid('a+b/c;d.e$f_g(h)-i'), pepsi.tube_name_valid(repeat('t', 200)),
                pepsi.tube_name_valid('-t'), pepsi.tube_name_valid(''), pepsi.tube_name_valid(repeat('t', 201)),
                pepsi.tube_name_valid('a b')],
          '{t,t,t,f,f,f,f}'::boolean[], 'issue 13: tube_name_valid is beanstalkd''s tube-name rule (1 to 200 bytes, not starting with -)');
select throws_ok($$select 'bad name!'::pepsi.stage_name$$, '23514', null,
                 'issue 13: the domain stage_name refuses a bad stage name');
select throws_ok($$select '-tube'::pepsi.tube_name$$, '23514', null,
                 'issue 13: the domain tube_name refuses a bad tube name');
select is(('Stage_1.x-y'::pepsi.stage_name)::text || '/' || ('a+b'::pepsi.tube_name)::text, 'Stage_1.x-y/a+b',
          'issue 13: the domains accept good names');
select is((select array_agg(format('%s.%s', c.relname, a.attname) order by c.relname, a.attname)
             from pg_attribute a join pg_class c on c.oid = a.attrelid
            where c.relnamespace = 'pepsi'::regnamespace and c.relkind = 'r'
              and a.atttypid in ('pepsi.stage_name'::regtype, 'pepsi.tube_name'::regtype)),
          '{beanstalk_ref.tube,settings.stage,tube_pause.tube,webhook_id_sequence.backfill_stage,webhook_id_sequence.backfill_tube}'::text[],
          'issue 13: the tables whose names are only written after a validator are typed by the domains');
select throws_ok($$insert into pepsi.settings (address, stage, option, value) values ('a@example.org', 'bad name!', 'X', '1')$$,
                 '23514', null, 'issue 13: a settings row with a bad stage is refused by its domain');

-- The workqueue table writes both rules out (for speed): they must agree.
create function pg_temp.row_accepts(p_stage text, p_tube text)
returns boolean language plpgsql as $$
begin
    insert into pepsi.workqueue (stage, tube) values (p_stage, p_tube);
    return true;
exception when check_violation then
    return false;
end $$;
select is((select array_agg(n order by n) from unnest(array['a', '9lives', repeat('s', 63), repeat('s', 64), '-a', '_a', '.a',
                                                         'a b', 'a/b', 'café', E'a\n', 'Stage_1.x-y', '']) n
            where pg_temp.row_accepts(n, 'default') is distinct from pepsi.stage_name_valid(n))
          || (select array_agg(t order by t) from unnest(array['default', 'a+b/c;d.e$f_g(h)-i', repeat('t', 200),
                                                              repeat('t', 201), '-t', 'a b', 'a*b', 'tübe', '']) t
               where pg_temp.row_accepts('a', t) is distinct from pepsi.tube_name_valid(t)),
          null, 'issue 13: the workqueue CHECKs and stage_name_valid / tube_name_valid accept and refuse the same names');

select * from finish();
rollback;
