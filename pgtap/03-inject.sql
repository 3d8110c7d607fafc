-- workqueue_inject and workqueue_inject_batch (D-30, D-32, D-33, D-43).

begin;
select plan(68);

select has_function('pepsi', 'workqueue_inject',
                    array['text', 'bytea', 'text', 'text', 'text[]', 'text', 'inet', 'jsonb', 'text', 'text', 'text', 'timestamp with time zone',
                          'timestamp with time zone', 'integer', 'text'],
                    'workqueue_inject(stage, body, headers, sender, recipients, user, addr, state, tube, subject, from, arrived_at, run_at, priority, dedupe_key) exists');
select has_function('pepsi', 'workqueue_inject_batch', array['jsonb'], 'workqueue_inject_batch(jsonb) exists');
select function_returns('pepsi', 'workqueue_inject_batch', array['jsonb'], 'setof bigint',
                        'workqueue_inject_batch returns setof bigint');

select count(*) as bodies0 from pepsi.workqueue_body \gset

-- workqueue_inject: defaults ----------------------------------------------------

select pepsi.workqueue_inject('in-min') as id_min \gset
select ok(:id_min > 0, 'workqueue_inject returns the new workqueue_id');
select is((select tube from pepsi.workqueue where workqueue_id = :id_min), 'default', 'inject: tube defaults to default');
select is((select status::text from pepsi.workqueue where workqueue_id = :id_min), 'pending', 'inject: the row is pending');
select is((select state from pepsi.workqueue where workqueue_id = :id_min), '{}'::jsonb, 'inject: state defaults to {}');
select is((select recipients from pepsi.workqueue where workqueue_id = :id_min), '{}'::text[], 'inject: recipients default to {}');
select is((select envelope_sender from pepsi.workqueue where workqueue_id = :id_min), null, 'inject: no envelope sender by default (NULL)');
select is((select arrived_at from pepsi.workqueue where workqueue_id = :id_min), now(), 'inject: arrived_at defaults to now()');
select ok((select claimed_at is null and timeout is null from pepsi.workqueue where workqueue_id = :id_min),
          'inject: claimed_at and timeout are NULL');
select is((select body_id from pepsi.workqueue where workqueue_id = :id_min), null, 'inject: no body_id when neither body nor headers is given');
select is((select count(*) from pepsi.workqueue_body), :bodies0::bigint, 'inject: no workqueue_body row when neither body nor headers is given');

-- workqueue_inject: every argument ------------------------------------------------

select pepsi.workqueue_inject('in-full', p_body => '\x00ff0a'::bytea, p_headers => E'Subject: hi\r\n',
                              p_envelope_sender => 'sender@example.org',
                              p_recipients => '{rcpt1@example.net,rcpt2@example.net}',
                              p_origin_user => 'alice', p_origin_addr => '192.0.2.1',
                              p_state => '{"local_origin": true, "n": 1}', p_tube => 'orders(1)',
                              p_subject => 'hi', p_header_from => 'Alice <alice@example.org>',
                              p_arrived_at => '2026-01-01 00:00:00+00') as id_full \gset
select ok(:id_full > :id_min, 'inject: ids increase');
select row_eq($$select stage, tube, status::text, envelope_sender, recipients, origin_user, origin_addr,
                      state, subject, header_from, arrived_at
                 from pepsi.workqueue where workqueue_id = $$ || :id_full,
              row('in-full'::text, 'orders(1)'::text, 'pending'::text, 'sender@example.org'::text,
                  '{rcpt1@example.net,rcpt2@example.net}'::text[], 'alice'::text, '192.0.2.1'::inet,
                  '{"local_origin": true, "n": 1}'::jsonb, 'hi'::text, 'Alice <alice@example.org>'::text,
                  '2026-01-01 00:00:00+00'::timestamptz),
              'inject: every column is stored as given');
select row_eq($$select b.headers, b.body from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
                 where w.workqueue_id = $$ || :id_full,
              row(E'Subject: hi\r\n'::text, '\x00ff0a'::bytea),
              'inject: body and headers are stored in workqueue_body and referenced by body_id');

select pepsi.workqueue_inject('in-hdr', p_headers => 'X: y') as id_hdr \gset
select row_eq($$select b.headers, b.body from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
                 where w.workqueue_id = $$ || :id_hdr,
              row('X: y'::text, null::bytea), 'inject: headers alone make a body row with body NULL');
select pepsi.workqueue_inject('in-body', p_body => ''::bytea) as id_body \gset
select row_eq($$select b.headers, b.body from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
                 where w.workqueue_id = $$ || :id_body,
              row(null::text, ''::bytea), 'inject: an empty body is still a body');
select isnt((select body_id from pepsi.workqueue where workqueue_id = :id_hdr),
            (select body_id from pepsi.workqueue where workqueue_id = :id_body),
            'inject: each message gets its own body row');

select pepsi.workqueue_inject('in-null', p_envelope_sender => '', p_recipients => null) as id_null \gset
select row_eq($$select envelope_sender, recipients, arrived_at from pepsi.workqueue where workqueue_id = $$ || :id_null,
              row(''::text, '{}'::text[], now()),
              'inject: the null sender '''' is accepted; NULL recipients become {}');

-- workqueue_inject: bad input ------------------------------------------------------

select count(*) as rows1 from pepsi.workqueue \gset
select count(*) as bodies1 from pepsi.workqueue_body \gset

select throws_ok($$select pepsi.workqueue_inject('bad name!', p_body => 'x')$$, 'PX001', null,
                 'PX001: inject refuses a bad stage name');
select throws_ok($$select pepsi.workqueue_inject(null)$$, 'PX001', null, 'PX001: inject refuses a NULL stage');
select throws_ok($$select pepsi.workqueue_inject('in', p_envelope_sender => 'no-at-sign')$$, 'PX002', null,
                 'PX002: inject refuses a bad envelope sender');
select throws_ok($$select pepsi.workqueue_inject('in', p_recipients => '{ok@example.org,bad}')$$, 'PX002', null,
                 'PX002: inject refuses a bad recipient (second of two)');
select throws_ok($$select pepsi.workqueue_inject('in', p_recipients => array[null::text])$$, 'PX002', null,
                 'PX002: inject refuses a NULL recipient');
select throws_ok($$select pepsi.workqueue_inject('in', p_tube => '-tube')$$, 'PX006', null,
                 'PX006: inject refuses a bad tube name');
select throws_ok($$select pepsi.workqueue_inject('in', p_tube => null)$$, 'PX006', null,
                 'PX006: inject refuses a NULL tube');
select throws_ok($$select pepsi.workqueue_inject('in', p_state => '[1, 2]')$$, 'PX003', null,
                 'PX003: inject refuses a state that is an array');
select throws_ok($$select pepsi.workqueue_inject('in', p_state => '"text"')$$, 'PX003', null,
                 'PX003: inject refuses a state that is a string');
select throws_ok($$select pepsi.workqueue_inject('in', p_state => null)$$, 'PX003', null,
                 'PX003: inject refuses a NULL state');
select throws_ok($$select pepsi.workqueue_inject('in', p_arrived_at => null)$$, 'PX003', null,
                 'issue 11: PX003: inject refuses a NULL arrived_at (a NULL time is PX003 everywhere)');
select throws_ok($$select pepsi.workqueue_inject('in', p_body => 'x', p_headers => 'H: v', p_state => '1')$$, 'PX003', null,
                 'PX003: inject with a body refuses a bad state');

select is((select count(*) from pepsi.workqueue), :rows1::bigint, 'a rejected inject queued no row');
select is((select count(*) from pepsi.workqueue_body), :bodies1::bigint, 'a rejected inject stored no body');

-- workqueue_inject_batch ------------------------------------------------------------

create temp table batch1 as
select id, ord from pepsi.workqueue_inject_batch($$[
    {"stage": "b-one", "body": "héllo €", "headers": "Subject: one", "recipients": ["r1@example.org", "r2@example.org"],
     "envelope_sender": "s@example.org", "tube": "t2", "subject": "one", "header_from": "S <s@example.org>",
     "state": {"k": "v"}, "origin_user": "bob"},
    {"stage": "b-two"},
    {"stage": "b-three", "body_base64": "AGhpAP8=", "origin_addr": "198.51.100.7"},
    {"stage": "b-four", "headers": "X: only"}
]$$) with ordinality as b(id, ord);

select is((select count(*) from batch1), 4::bigint, 'batch: one id per element');
select is((select array_agg(w.stage order by b.ord) from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id),
          '{b-one,b-two,b-three,b-four}'::text[], 'batch: ids are returned in input order');
select is((select array_agg(id order by ord) from batch1),
          (select array_agg(id order by id) from batch1), 'batch: ids increase in input order');
select row_eq($$select w.tube, w.status::text, w.envelope_sender, w.recipients, w.subject, w.header_from, w.state,
                      w.origin_user, w.sender_key, w.arrived_at
                 from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id where b.ord = 1$$,
              row('t2'::text, 'pending'::text, 's@example.org'::text, '{r1@example.org,r2@example.org}'::text[],
                  'one'::text, 'S <s@example.org>'::text, '{"k": "v"}'::jsonb, 'bob'::text, 'user:bob'::text, now()),
              'batch: the columns of a full element are stored (recipients in order)');
select row_eq($$select b2.headers, b2.body from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id
                 join pepsi.workqueue_body b2 on b2.body_id = w.body_id where b.ord = 1$$,
              row('Subject: one'::text, convert_to('héllo €', 'UTF8')),
              'batch: "body" is stored as its UTF-8 bytes, with the headers');
select row_eq($$select w.tube, w.state, w.recipients, w.body_id, w.envelope_sender, w.sender_key
                 from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id where b.ord = 2$$,
              row('default'::text, '{}'::jsonb, '{}'::text[], null::bigint, null::text, 'from:'::text),
              'batch: defaults (tube default, state {}, no recipients, no body, no sender)');
select is((select b2.body from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id
             join pepsi.workqueue_body b2 on b2.body_id = w.body_id where b.ord = 3),
          '\x00686900ff'::bytea, 'batch: "body_base64" is decoded to bytes, zero byte included');
select is((select w.sender_key from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id where b.ord = 3),
          'ip:198.51.100.7', 'batch: origin_addr is stored (D-45 key)');
select row_eq($$select b2.headers, b2.body from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id
                 join pepsi.workqueue_body b2 on b2.body_id = w.body_id where b.ord = 4$$,
              row('X: only'::text, null::bytea), 'batch: headers alone make a body row with body NULL');
select is((select count(distinct w.body_id) from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id),
          3::bigint, 'batch: each element with a body or headers gets its own body row');
select is((select count(*) from pepsi.workqueue_body b2
            where b2.body_id in (select w.body_id from batch1 b join pepsi.workqueue w on w.workqueue_id = b.id)),
          3::bigint, 'batch: the referenced body rows exist');

select is_empty($$select * from pepsi.workqueue_inject_batch('[]')$$, 'batch: an empty array queues nothing and returns no rows');
select is((select count(*) from pepsi.workqueue_inject_batch('[{"stage": "b-one-more"}]')), 1::bigint,
          'batch: a one-element batch returns one id');
select is((select count(*) from pepsi.workqueue_inject_batch('[{"stage": "b-null", "envelope_sender": null, "recipients": []}]')),
          1::bigint, 'batch: JSON null envelope sender and empty recipients are accepted');

-- workqueue_inject_batch: one bad element rejects the batch ----------------------------

select count(*) as rows2 from pepsi.workqueue \gset
select count(*) as bodies2 from pepsi.workqueue_body \gset

select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"stage": "bad name!"}]')$$,
                 'PX001', null, 'PX001: batch with one bad stage');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"body": "no stage"}]')$$,
                 'PX001', null, 'PX001: batch with one element without a stage');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"stage": "ok", "recipients": ["good@example.org", "bad"]}]')$$,
                 'PX002', null, 'PX002: batch with one bad recipient');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "recipients": [null]}]')$$,
                 'PX002', null, 'PX002: batch with a JSON null recipient');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"stage": "ok", "envelope_sender": "nope"}]')$$,
                 'PX002', null, 'PX002: batch with one bad envelope sender');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"stage": "ok", "tube": "-t"}]')$$,
                 'PX006', null, 'PX006: batch with one bad tube');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, {"stage": "ok", "state": [1]}]')$$,
                 'PX003', null, 'PX003: batch with one state that is not an object');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "state": null}]')$$,
                 'PX003', null, 'PX003: batch with a JSON null state');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body": "x"}, "not an object"]')$$,
                 'PX003', null, 'PX003: batch with one element that is not an object');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok"}, null]')$$,
                 'PX003', null, 'PX003: batch with a JSON null element');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "recipients": "a@example.org"}]')$$,
                 'PX003', null, 'PX003: batch with recipients that is not an array');
select throws_ok($$select pepsi.workqueue_inject_batch('{"stage": "ok"}')$$,
                 'PX003', null, 'PX003: batch that is an object, not an array');
select throws_ok($$select pepsi.workqueue_inject_batch('"ok"')$$,
                 'PX003', null, 'PX003: batch that is a string');
select throws_ok($$select pepsi.workqueue_inject_batch(null)$$,
                 'PX003', null, 'PX003: NULL batch');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "origin_addr": "not-an-ip"}]')$$,
                 null, null, 'batch with an origin_addr that is not an address is refused');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "ok", "body_base64": "!!!"}]')$$,
                 null, null, 'batch with body_base64 that is not base64 is refused');

select is((select count(*) from pepsi.workqueue), :rows2::bigint, 'a rejected batch queued no row');
select is((select count(*) from pepsi.workqueue_body), :bodies2::bigint, 'a rejected batch stored no body');
select is((select count(*) from pepsi.workqueue where stage = 'ok'), 0::bigint,
          'a rejected batch queued none of its good elements either');

select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "a", "recipient": ["x@example.com"]}]')$$, 'PX003', null,
                 'PX003: a batch element with an unknown key (a typo of recipients) is refused');

select * from finish();
rollback;
