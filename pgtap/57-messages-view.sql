-- issue 15: pepsi_reader (and so pepsi_operator) reads a message's
-- envelope, state and place in the queue through pepsi.messages, never its
-- body: the view has no column that carries the payload, the reader still
-- cannot select the tables that hold it, and body_bytes tells the size.

begin;
select plan(11);

create temp table ids (name text primary key, id bigint) on commit drop;
grant select on ids to pepsi_reader, pepsi_operator;
insert into ids values
    ('body10', pepsi.workqueue_inject('score', convert_to('0123456789', 'UTF8'),
                                      p_envelope_sender => 'a@example.org', p_recipients => '{b@example.org}',
                                      p_subject => 'hello', p_state => '{"k": 1}', p_tube => 'mail')),
    ('nobody', pepsi.workqueue_inject('score', null));

set local role pepsi_reader;
select results_eq(
    $$select stage, tube, status::text, envelope_sender, recipients, subject, state, body_bytes
        from pepsi.messages where workqueue_id = (select id from ids where name = 'body10')$$,
    $$values ('score'::text, 'mail'::text, 'pending'::text, 'a@example.org'::text, '{b@example.org}'::text[],
              'hello'::text, '{"k": 1}'::jsonb, 10)$$,
    'issue 15: pepsi_reader reads a message''s envelope, state and status, and its body''s size');
select is((select body_bytes from pepsi.messages where workqueue_id = (select id from ids where name = 'nobody')),
          null, 'issue 15: a message without a body shows body_bytes NULL');
select throws_ok($$select 1 from pepsi.workqueue limit 1$$, '42501', null,
                 'issue 15: pepsi_reader still cannot select pepsi.workqueue');
select throws_ok($$select body from pepsi.workqueue_body limit 1$$, '42501', null,
                 'issue 15: pepsi_reader still cannot read a body from pepsi.workqueue_body');
reset role;

set local role pepsi_operator;
select is((select count(*)::int from pepsi.messages where workqueue_id in (select id from ids)), 2,
          'issue 15: pepsi_operator (a member of pepsi_reader) reads pepsi.messages');
reset role;

-- No column of the view carries the payload: neither a bytea nor one
-- named like the body or its headers.
select is((select array_agg(a.attname::text order by a.attnum) from pg_attribute a
            where a.attrelid = 'pepsi.messages'::regclass and a.attnum > 0
              and (a.atttypid = 'bytea'::regtype or a.attname in ('body', 'headers', 'body_id'))),
          null, 'issue 15: pepsi.messages has no body, headers or body_id column');
-- Every column of workqueue but body_id is in the view, so a column added
-- to workqueue (an envelope field) is not silently missing from it.
select is((select array_agg(a.attname::text order by a.attname) from pg_attribute a
            where a.attrelid = 'pepsi.workqueue'::regclass and a.attnum > 0 and not a.attisdropped
              and a.attname <> 'body_id'
              and not exists (select 1 from pg_attribute v where v.attrelid = 'pepsi.messages'::regclass
                                 and v.attname = a.attname)),
          null, 'issue 15: every column of pepsi.workqueue except body_id is in pepsi.messages');

-- The view follows the queue: a claimed message shows running with its claim.
select is((select count(*)::int from pepsi.workqueue_claim('{score}', '{10}', p_claim_id => 4242, p_owner_slot => 0)), 2,
          'setup: claim both messages');
select is((select status::text from pepsi.messages where workqueue_id = (select id from ids where name = 'body10')),
          'running', 'issue 15: pepsi.messages shows a claimed message as running');
select is((select claim_id from pepsi.messages where workqueue_id = (select id from ids where name = 'body10')),
          4242::bigint, 'issue 15: pepsi.messages shows the claim that holds a running message');
select is((select count(*)::int from pepsi.messages m join ids on ids.id = m.workqueue_id where m.claimed_at is not null), 2,
          'issue 15: pepsi.messages shows when each message was claimed');

select * from finish();
rollback;
