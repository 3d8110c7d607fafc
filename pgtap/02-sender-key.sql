-- The generated sender_key (D-43..D-47), the helpers behind it, the
-- validators every writer shares (stage_check PX001, address_check PX002,
-- tube_check PX006) and the table's CHECK constraints.

begin;
select plan(88);

-- Helpers: inject one message and return its sender_key. plpgsql, so that
-- the select runs after the insert with a snapshot that sees it.
create function pg_temp.key_of(p_user text, p_addr inet, p_sender text, p_rcpts text[] default '{}')
returns text language plpgsql as $$
declare
    v_id bigint;
begin
    v_id := pepsi.workqueue_inject('sk', p_envelope_sender => p_sender, p_recipients => p_rcpts,
                                   p_origin_user => p_user, p_origin_addr => p_addr);
    return (select w.sender_key from pepsi.workqueue w where w.workqueue_id = v_id);
end $$;

create function pg_temp.batch_key_of(p_message jsonb)
returns text language plpgsql as $$
declare
    v_id bigint;
begin
    select i into v_id from pepsi.workqueue_inject_batch(jsonb_build_array(p_message)) i;
    return (select w.sender_key from pepsi.workqueue w where w.workqueue_id = v_id);
end $$;

-- D-43: generated for every writer -----------------------------------------

select is((select attgenerated::text from pg_attribute
            where attrelid = 'pepsi.workqueue'::regclass and attname = 'sender_key'),
          's', 'D-43: workqueue.sender_key is a stored generated column');
select col_not_null('pepsi', 'workqueue', 'sender_key', 'D-43: sender_key is never null');
select is(pg_temp.key_of(null, null, 'bounce@example.org'), 'from:example.org',
          'D-43: workqueue_inject gets a sender_key without setting it');
select is(pg_temp.batch_key_of('{"stage": "sk", "origin_addr": "198.51.100.9"}'), 'ip:198.51.100.9',
          'D-43: workqueue_inject_batch gets a sender_key without setting it');

insert into pepsi.workqueue (stage, origin_user) values ('sk-direct', 'carol');
select is((select sender_key from pepsi.workqueue where stage = 'sk-direct'), 'user:carol',
          'D-43: a direct insert (split, clone) gets a sender_key without setting it');
update pepsi.workqueue set origin_user = null, origin_addr = '203.0.113.5' where stage = 'sk-direct';
select is((select sender_key from pepsi.workqueue where stage = 'sk-direct'), 'ip:203.0.113.5',
          'D-43: changing the origin columns recomputes sender_key');

select throws_ok($$insert into pepsi.workqueue (stage, sender_key) values ('sk', 'user:mallory')$$,
                 '428C9', null, 'D-43: sender_key cannot be written on insert (428C9)');
select throws_ok($$update pepsi.workqueue set sender_key = 'user:mallory'$$,
                 '428C9', null, 'D-43: sender_key cannot be written on update (428C9)');

-- D-44: user:<login> wins over everything ------------------------------------

select is(pg_temp.key_of('alice', null, 'alice@example.org'), 'user:alice',
          'D-44: an authenticated submission is keyed user:<login>');
select is(pg_temp.key_of('alice', '192.0.2.7', 'someone@elsewhere.example'), 'user:alice',
          'D-44: user:<login> wins over the peer address and the envelope sender');
select is(pg_temp.key_of('alice', '2001:db8::1', '', '{postmaster@example.net}'), 'user:alice',
          'D-44: user:<login> wins over the null sender');
select is(pg_temp.key_of('Alice.Smith', null, null), 'user:Alice.Smith',
          'D-44: the login is kept verbatim (no case folding)');

-- D-45: ip:<peer>, IPv6 folded to its /64 --------------------------------------

select is(pg_temp.key_of(null, '192.0.2.7', 'bob@example.org'), 'ip:192.0.2.7',
          'D-45: SMTP mail from an IPv4 peer is keyed ip:<address>');
select is(pg_temp.key_of(null, '192.0.2.7/24', null), 'ip:192.0.2.7',
          'D-45: an IPv4 peer given with a netmask is keyed by its host address');
select is(pg_temp.key_of(null, '2001:db8:1:2:aaaa:bbbb:cccc:dddd', 'bob@example.org'), 'ip:2001:db8:1:2::/64',
          'D-45: an IPv6 peer is keyed by its /64');
select is(pg_temp.key_of(null, '2001:db8:1:2::1', null), pg_temp.key_of(null, '2001:db8:1:2:ffff::99', null),
          'D-45: two IPv6 peers in the same /64 share one key');
select isnt(pg_temp.key_of(null, '2001:db8:1:2::1', null), pg_temp.key_of(null, '2001:db8:1:3::1', null),
            'D-45: IPv6 peers in different /64s have different keys');
select is(pg_temp.key_of(null, '2001:db8:1:2::1/48', null), 'ip:2001:db8:1:2::/64',
          'D-45: an IPv6 peer given with a shorter netmask is still keyed by its own /64');
select is(pg_temp.key_of(null, '::ffff:192.0.2.7', null), 'ip:192.0.2.7',
          'D-45: an IPv4-mapped IPv6 peer is keyed as its IPv4 address');
select is(pg_temp.key_of(null, '::ffff:192.0.2.7', null), pg_temp.key_of(null, '192.0.2.7', null),
          'D-45: an IPv4-mapped peer and the same IPv4 peer share one key');
select isnt(pg_temp.key_of(null, '::ffff:192.0.2.7', null), pg_temp.key_of(null, '::ffff:192.0.2.8', null),
            'D-45: different IPv4-mapped peers are not folded into one ::/64 key');
select is(pg_temp.key_of(null, '192.0.2.7', 'Bob@Example.ORG'), 'ip:192.0.2.7',
          'D-45: the envelope domain is never used for SMTP mail (ip wins over from)');
select is(pg_temp.key_of(null, '192.0.2.7', '', '{postmaster@example.net}'), 'ip:192.0.2.7',
          'D-45: ip wins over the null sender for SMTP mail');
select is(pg_temp.batch_key_of('{"stage": "sk", "origin_addr": "2001:db8:9:8:7::1", "envelope_sender": "x@example.org"}'),
          'ip:2001:db8:9:8::/64', 'D-45: inject_batch folds an IPv6 peer to its /64');

-- D-47: null:<domain of the first recipient> -------------------------------------

select is(pg_temp.key_of(null, null, '', '{Postmaster@Example.NET,abuse@other.example}'), 'null:example.net',
          'D-47: the null sender is keyed null:<lower-cased domain of the first recipient>');
select is(pg_temp.key_of(null, null, '', '{}'), 'null:',
          'D-47: a null sender without recipients is keyed null:');
select is(pg_temp.batch_key_of('{"stage": "sk", "envelope_sender": "", "recipients": ["a@B.example"]}'), 'null:b.example',
          'D-47: inject_batch keys the null sender by the first recipient');

-- D-46: from:<domain> for generated messages ---------------------------------------

select is(pg_temp.key_of(null, null, 'Bounce@Pepsi.Example', '{x@example.org}'), 'from:pepsi.example',
          'D-46: a generated message (no origin) is keyed from:<lower-cased domain>');
select is(pg_temp.key_of(null, null, null, '{x@example.org}'), 'from:',
          'D-46: a generated message with no envelope sender (NULL) is keyed from:');
select is(pg_temp.key_of(null, null, '"odd@local"@Example.org'), 'from:example.org',
          'D-46: the domain is what follows the last @ (quoted local part with @)');

-- The helpers directly ----------------------------------------------------------

select is(pepsi.domain_of('a@B.C'), 'b.c', 'domain_of lower-cases the domain');
select is(pepsi.domain_of('no-at-sign'), '', 'domain_of is empty for a string without @');
select is(pepsi.domain_of(null), '', 'domain_of(NULL) is empty');
select is(pepsi.peer_key_of('10.1.2.3'), '10.1.2.3', 'peer_key_of keeps an IPv4 address');
select is(pepsi.peer_key_of('2001:db8:a:b:c:d:e:f'), '2001:db8:a:b::/64', 'peer_key_of folds IPv6 to /64');
select is(pepsi.sender_key_of(null, null, 'x@Y.example', '{}'), 'from:y.example', 'sender_key_of: from:');
select is(pepsi.sender_key_of('u', '10.0.0.1', '', '{a@b.example}'), 'user:u', 'sender_key_of: user first');
select is(pepsi.sender_key_of(null, null, '', null), 'null:', 'sender_key_of: null sender with NULL recipients');

-- stage_check (PX001) ------------------------------------------------------------

select is(pepsi.stage_check('a'), 'a', 'stage_check accepts a one-character name');
select is(pepsi.stage_check('Stage_1.x-y'), 'Stage_1.x-y', 'stage_check accepts letters, digits, _ . -');
select is(pepsi.stage_check(repeat('s', 63)), repeat('s', 63), 'stage_check accepts 63 characters');
select is(pepsi.stage_check('9lives'), '9lives', 'stage_check accepts a leading digit');
select throws_ok($$select pepsi.stage_check('')$$, 'PX001', null, 'PX001: empty stage name');
select throws_ok($$select pepsi.stage_check(repeat('s', 64))$$, 'PX001', null, 'PX001: stage name of 64 characters');
select throws_ok($$select pepsi.stage_check('a b')$$, 'PX001', null, 'PX001: stage name with a space');
select throws_ok($$select pepsi.stage_check('-a')$$, 'PX001', null, 'PX001: stage name starting with -');
select throws_ok($$select pepsi.stage_check('_a')$$, 'PX001', null, 'PX001: stage name starting with _');
select throws_ok($$select pepsi.stage_check('.a')$$, 'PX001', null, 'PX001: stage name starting with .');
select throws_ok($$select pepsi.stage_check(null)$$, 'PX001', null, 'PX001: NULL stage name');
select throws_ok($$select pepsi.stage_check('a/b')$$, 'PX001', null, 'PX001: stage name with /');
select throws_ok($$select pepsi.stage_check('café')$$, 'PX001', null, 'PX001: stage name with a non-ASCII letter');
select throws_ok($$select pepsi.stage_check(E'a\n')$$, 'PX001', null, 'PX001: stage name with a trailing newline');
select throws_ok($$select pepsi.stage_check('bad name!')$$, 'PX001', 'invalid stage name "bad name!"',
                 'PX001: the message quotes the bad stage name');

-- address_check (PX002) ------------------------------------------------------------

select is(pepsi.address_check('user@example.org'), 'user@example.org', 'address_check accepts local@domain');
select is(pepsi.address_check('"john doe"@example.org'), '"john doe"@example.org', 'address_check accepts a quoted local part with a space');
select is(pepsi.address_check('"a@b"@example.org'), '"a@b"@example.org', 'address_check accepts a quoted local part with @');
select is(pepsi.address_check('first.last+tag@sub.example.org'), 'first.last+tag@sub.example.org', 'address_check accepts dots and +');
select throws_ok($$select pepsi.address_check('user')$$, 'PX002', null, 'PX002: address without @');
select throws_ok($$select pepsi.address_check('@example.org')$$, 'PX002', null, 'PX002: empty local part');
select throws_ok($$select pepsi.address_check('user@')$$, 'PX002', null, 'PX002: empty domain');
select throws_ok($$select pepsi.address_check('us er@example.org')$$, 'PX002', null, 'PX002: space in the local part');
select throws_ok($$select pepsi.address_check('user@exa mple.org')$$, 'PX002', null, 'PX002: space in the domain');
select throws_ok($$select pepsi.address_check('a@b@example.org')$$, 'PX002', null, 'PX002: two @ outside quotes');
select throws_ok($$select pepsi.address_check('')$$, 'PX002', null, 'PX002: empty address');
select throws_ok($$select pepsi.address_check(null)$$, 'PX002', null, 'PX002: NULL address');
select throws_ok($$select pepsi.address_check(repeat('a', 64) || '@' || repeat('b', 256))$$, 'PX003',
                 'address is 321 bytes; the limit is 254',
                 'issue 11: PX003: an address longer than RFC 5321''s 254 octets, naming the limit');
select throws_ok($$select pepsi.address_check('nope', 'recipient')$$, 'PX002', 'recipient "nope" is not an address',
                 'PX002: the message names the argument (p_what)');

-- tube_check (PX006) -----------------------------------------------------------------

select is(pepsi.tube_check('default'), 'default', 'tube_check accepts default');
select is(pepsi.tube_check('a+b/c;d.e$f_g(h)-i'), 'a+b/c;d.e$f_g(h)-i', 'tube_check accepts beanstalkd''s punctuation');
select is(pepsi.tube_check(repeat('t', 200)), repeat('t', 200), 'tube_check accepts 200 bytes');
select is(pepsi.tube_check('Tube'), 'Tube', 'tube_check keeps case (exact bytes)');
select throws_ok($$select pepsi.tube_check(repeat('t', 201))$$, 'PX006', null, 'PX006: tube name of 201 bytes');
select throws_ok($$select pepsi.tube_check('-tube')$$, 'PX006', null, 'PX006: tube name starting with -');
select throws_ok($$select pepsi.tube_check('a b')$$, 'PX006', null, 'PX006: tube name with a space');
select throws_ok($$select pepsi.tube_check('a*b')$$, 'PX006', null, 'PX006: tube name with *');
select throws_ok($$select pepsi.tube_check('tübe')$$, 'PX006', null, 'PX006: tube name with a non-ASCII letter');
select throws_ok($$select pepsi.tube_check('')$$, 'PX006', null, 'PX006: empty tube name');
select throws_ok($$select pepsi.tube_check(null)$$, 'PX006', null, 'PX006: NULL tube name');

-- The table's rules (a writer that bypasses the functions; CHECKs, then triggers of
-- the same names since workqueue_rules, pgtap/78) ---------------------------------

select throws_ok($$insert into pepsi.workqueue (stage) values ('bad name!')$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_stage_check"',
                 'workqueue_stage_check rejects a bad stage on direct insert');
select throws_ok($$insert into pepsi.workqueue (stage) values (repeat('s', 64))$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_stage_check"',
                 'workqueue_stage_check rejects a 64-character stage');
select throws_ok($$insert into pepsi.workqueue (stage) values (null)$$, '23502', null,
                 'workqueue.stage is not null');
select throws_ok($$insert into pepsi.workqueue (stage, tube) values ('a', '-tube')$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_tube_check"',
                 'workqueue_tube_check rejects a tube starting with -');
select throws_ok($$insert into pepsi.workqueue (stage, tube) values ('a', repeat('t', 201))$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_tube_check"',
                 'workqueue_tube_check rejects a 201-byte tube');
select throws_ok($$insert into pepsi.workqueue (stage, state) values ('a', '[]')$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_state_check"',
                 'workqueue_state_check rejects a state that is not an object');
select throws_ok($$insert into pepsi.workqueue (stage, status) values ('a', 'paused')$$, '23514',
                 'new row for relation "workqueue" violates check constraint "workqueue_paused_timeout_check"',
                 'D-92: workqueue_paused_timeout_check rejects a paused row without timeout');
select throws_ok($$insert into pepsi.workqueue (stage, status) values ('a', 'done')$$, '22P02', null,
                 'status is an enum: an unknown status is rejected');
select lives_ok($$insert into pepsi.workqueue (stage, status, timeout) values ('a', 'paused', now())$$,
                'a paused row with a timeout is accepted');

select is(pepsi.sender_key_of('', null, 'a@Example.org', '{}'), 'from:example.org',
          'D-44: an empty origin user is no authenticated user');

select * from finish();
rollback;
