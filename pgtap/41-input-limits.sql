-- issue 11: input limits at the door (pepsi.input_limits). For each limit:
-- a value at the limit is accepted, one byte (or entry) past it is refused
-- with its SQLSTATE and a message naming the field and the limit, and the
-- refusal wrote nothing (rows of workqueue, workqueue_body and
-- webhook_events counted before and after, in the same test).
--
-- An error rolls back what its statement wrote, so the count cannot catch
-- a partial write that raises; it catches the failure that matters here:
-- a writer that stops raising and queues the rest of a batch, or stores a
-- cut value instead of refusing it.

begin;
select plan(60);

-- Helpers -----------------------------------------------------------------------

create function pg_temp.rows_now()
returns bigint
language sql
as $$
    select (select count(*) from pepsi.workqueue) + (select count(*) from pepsi.workqueue_body)
         + (select count(*) from pepsi.webhook_events)
$$;

-- ok() when p_sql raises p_state with message p_msg (NULL: any message)
-- and the rows are as many after as before.
create function pg_temp.refused(p_sql text, p_state text, p_msg text, p_description text)
returns text
language plpgsql
as $$
declare
    v_before bigint := pg_temp.rows_now();
    v_after bigint;
    v_state text := 'none';
    v_msg text := 'no error';
begin
    begin
        execute p_sql;
    exception when others then
        v_state := sqlstate;
        v_msg := sqlerrm;
    end;
    v_after := pg_temp.rows_now();
    if v_state = p_state and (p_msg is null or v_msg = p_msg) and v_after = v_before then
        return ok(true, p_description);
    end if;
    return ok(false, p_description) || E'\n'
        || diag(format('caught %s: %s; wanted %s: %s; rows %s before, %s after',
                       v_state, left(v_msg, 200), p_state, coalesce(p_msg, '(any message)'), v_before, v_after));
end
$$;

-- ok() when p_sql runs and adds p_rows rows.
create function pg_temp.accepted(p_sql text, p_rows bigint, p_description text)
returns text
language plpgsql
as $$
declare
    v_before bigint := pg_temp.rows_now();
    v_after bigint;
begin
    execute p_sql;
    v_after := pg_temp.rows_now();
    return ok(v_after - v_before = p_rows, p_description)
        || case when v_after - v_before = p_rows then ''
                else E'\n' || diag(format('rows %s before, %s after, wanted %s more', v_before, v_after, p_rows)) end;
exception when others then
    return ok(false, p_description) || E'\n' || diag(format('raised %s: %s', sqlstate, left(sqlerrm, 200)));
end
$$;

-- The table of limits -----------------------------------------------------------

select is((select jsonb_object_agg(field, jsonb_build_array(max_value, sqlstate)) from pepsi.input_limits()),
          '{"stage": [63, "PX001"], "tube": [200, "PX006"], "subject": [998, "PX003"], "header_from": [998, "PX003"],
            "headers": [1048576, "PX003"], "body": [67108864, "PX003"], "state": [1048576, "PX003"],
            "origin_user": [256, "PX003"], "address": [254, "PX003"], "address_local_part": [64, "PX003"],
            "recipients": [1000, "PX003"], "batch_messages": [10000, "PX003"], "burst_events": [10000, "PX003"],
            "external_id": [1024, "PX012"], "reason": [4096, "cut"], "pause_seconds": [31536000, "PX003"]}'::jsonb,
          'issue 11: pepsi.input_limits() holds the documented limits and their SQLSTATEs');
select ok((select bool_and(rationale <> '' and unit in ('bytes', 'entries', 'seconds')) from pepsi.input_limits()),
          'issue 11: every limit has a unit and a rationale');
select throws_ok($$select pepsi.input_limit('no_such_field')$$, 'XX000', null,
                 'issue 11: an unknown limit is an error, never "no limit"');

-- workqueue_inject: one field at a time ---------------------------------------------

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_subject => repeat('s', 998))$$, 1,
                        'issue 11: inject accepts a subject of 998 bytes');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_subject => repeat('s', 999))$$, 'PX003',
                       'subject is 999 bytes; the limit is 998',
                       'issue 11: inject refuses a subject of 999 bytes with PX003, naming the limit; nothing written');
select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_subject => repeat('é', 499))$$, 1,
                        'issue 11: the subject limit counts bytes: 499 two-byte characters (998 bytes) pass');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_subject => repeat('é', 500))$$, 'PX003',
                       'subject is 1000 bytes; the limit is 998',
                       'issue 11: 500 two-byte characters (1000 bytes) are refused although they are 500 characters');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_subject => repeat('s', 204800))$$, 'PX003',
                       'subject is 204800 bytes; the limit is 998',
                       'issue 11: the 200 kB subject of the issue is refused; nothing written');

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_header_from => repeat('f', 998))$$, 1,
                        'issue 11: inject accepts a From of 998 bytes');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_header_from => repeat('f', 999))$$, 'PX003',
                       'header_from is 999 bytes; the limit is 998',
                       'issue 11: inject refuses a From of 999 bytes; nothing written');

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_headers => repeat('h', 1048576))$$, 2,
                        'issue 11: inject accepts a header block of 1 MiB (the message and its body row)');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_headers => repeat('h', 1048577))$$, 'PX003',
                       'headers is 1048577 bytes; the limit is 1048576',
                       'issue 11: inject refuses a header block of 1 MiB + 1; nothing written');

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_body => convert_to(repeat('b', 67108864), 'UTF8'))$$, 2,
                        'issue 11: inject accepts a body of 64 MiB');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_body => convert_to(repeat('b', 67108865), 'UTF8'))$$, 'PX003',
                       'body is 67108865 bytes; the limit is 67108864',
                       'issue 11: inject refuses a body of 64 MiB + 1; no message and no body row written');

-- {"x": "aaa..."} is 9 bytes of JSON text around the string.
select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_state => jsonb_build_object('x', repeat('a', 1048576 - 9)))$$, 1,
                        'issue 11: inject accepts a state of 1 MiB of JSON text');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_state => jsonb_build_object('x', repeat('a', 1048576 - 8)))$$, 'PX003',
                       'state is 1048577 bytes; the limit is 1048576',
                       'issue 11: inject refuses a state of 1 MiB + 1; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_state => jsonb_build_object('x', repeat('a', 10000000)))$$, 'PX003',
                       null, 'issue 11: the 10 MB state of the issue is refused; nothing written');

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_origin_user => repeat('u', 256))$$, 1,
                        'issue 11: inject accepts an origin user of 256 bytes');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_origin_user => repeat('u', 257))$$, 'PX003',
                       'origin_user is 257 bytes; the limit is 256',
                       'issue 11: inject refuses an origin user of 257 bytes; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_origin_user => repeat('u', 10000000))$$, 'PX003',
                       'origin_user is 10000000 bytes; the limit is 256',
                       'issue 11: a 10 MB origin user is PX003, not 54000 (index row too large); nothing written');

-- 64 + 1 + 189 = 254 bytes.
select pg_temp.accepted(format($$select pepsi.workqueue_inject('lim', p_envelope_sender => %L)$$,
                               repeat('l', 64) || '@' || repeat('d', 185) || '.org'), 1,
                        'issue 11: inject accepts an envelope sender of 254 bytes with a 64-byte local part');
select pg_temp.refused(format($$select pepsi.workqueue_inject('lim', p_envelope_sender => %L)$$,
                              repeat('l', 64) || '@' || repeat('d', 186) || '.org'), 'PX003',
                       'envelope sender is 255 bytes; the limit is 254',
                       'issue 11: inject refuses an envelope sender of 255 bytes (RFC 5321); nothing written');
select pg_temp.refused(format($$select pepsi.workqueue_inject('lim', p_envelope_sender => %L)$$,
                              repeat('l', 65) || '@example.org'), 'PX003',
                       'envelope sender local part is 65 bytes; the limit is 64',
                       'issue 11: inject refuses a 65-byte local part; nothing written');

select pg_temp.accepted(format($$select pepsi.workqueue_inject('lim', p_recipients => array['a@example.org', %L])$$,
                               repeat('l', 64) || '@' || repeat('d', 185) || '.org'), 1,
                        'issue 11: inject accepts a recipient of 254 bytes');
select pg_temp.refused(format($$select pepsi.workqueue_inject('lim', p_recipients => array['a@example.org', %L])$$,
                              repeat('l', 64) || '@' || repeat('d', 186) || '.org'), 'PX003',
                       'recipient 2 is 255 bytes; the limit is 254',
                       'issue 11: inject refuses a recipient of 255 bytes, naming its position; nothing written');
select pg_temp.refused(format($$select pepsi.workqueue_inject('lim', p_recipients => array[%L])$$,
                              repeat('l', 65) || '@example.org'), 'PX003',
                       'recipient 1 local part is 65 bytes; the limit is 64',
                       'issue 11: inject refuses a recipient with a 65-byte local part; nothing written');

select pg_temp.accepted($$select pepsi.workqueue_inject('lim', p_recipients => array(select 'r' || i || '@example.org'
                                                                                   from generate_series(1, 1000) i))$$, 1,
                        'issue 11: inject accepts 1000 recipients');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_recipients => array(select 'r' || i || '@example.org'
                                                                                  from generate_series(1, 1001) i))$$, 'PX003',
                       'recipients has 1001 entries; the limit is 1000',
                       'issue 11: inject refuses 1001 recipients; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject('lim', p_recipients => array(select 'r' || i || '@example.org'
                                                                                  from generate_series(1, 100000) i))$$, 'PX003',
                       'recipients has 100000 entries; the limit is 1000',
                       'issue 11: the 100,000 recipients of the issue are refused; nothing written');

select pg_temp.accepted(format($$select pepsi.workqueue_inject('lim', p_tube => %L)$$, repeat('t', 200)), 1,
                        'issue 11: inject accepts a tube name of 200 bytes');
select pg_temp.refused(format($$select pepsi.workqueue_inject('lim', p_tube => %L)$$, repeat('t', 201)), 'PX006', null,
                       'issue 11: inject refuses a tube name of 201 bytes with PX006; nothing written');
select pg_temp.accepted(format($$select pepsi.workqueue_inject(%L)$$, repeat('s', 63)), 1,
                        'issue 11: inject accepts a stage name of 63 bytes');
select pg_temp.refused(format($$select pepsi.workqueue_inject(%L)$$, repeat('s', 64)), 'PX001', null,
                       'issue 11: inject refuses a stage name of 64 bytes with PX001; nothing written');

-- workqueue_inject_batch: every element, all or nothing -------------------------------

select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim', 'body', 'first is fine'),
                             jsonb_build_object('stage', 'lim', 'subject', repeat('s', 999))))$$, 'PX003',
                       'message 2: subject is 999 bytes; the limit is 998',
                       'issue 11: batch: an oversized subject in message 2 refuses the batch, naming message 2; message 1 is not written');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'header_from', repeat('f', 999))))$$, 'PX003',
                       'message 2: header_from is 999 bytes; the limit is 998',
                       'issue 11: batch: an oversized From refuses the batch; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'headers', repeat('h', 1048577))))$$, 'PX003',
                       'message 2: headers is 1048577 bytes; the limit is 1048576',
                       'issue 11: batch: an oversized header block refuses the batch; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'body_base64',
                                                encode(convert_to(repeat('b', 67108865), 'UTF8'), 'base64'))))$$, 'PX003',
                       'message 2: body is 67108865 bytes; the limit is 67108864',
                       'issue 11: batch: a base64 body decoding to 64 MiB + 1 refuses the batch; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'state', jsonb_build_object('x', repeat('a', 1048576 - 8)))))$$,
                       'PX003', 'message 2: state is 1048577 bytes; the limit is 1048576',
                       'issue 11: batch: an oversized state refuses the batch; nothing written');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'origin_user', repeat('u', 257))))$$, 'PX003',
                       'message 2: origin_user is 257 bytes; the limit is 256',
                       'issue 11: batch: an oversized origin user refuses the batch; nothing written');
select pg_temp.refused(format($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'envelope_sender', %L)))$$,
                              repeat('l', 64) || '@' || repeat('d', 186) || '.org'), 'PX003',
                       'message 2: envelope sender is 255 bytes; the limit is 254',
                       'issue 11: batch: an envelope sender of 255 bytes refuses the batch; nothing written');
select pg_temp.refused(format($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'recipients', jsonb_build_array('a@example.org', %L))))$$,
                              repeat('l', 65) || '@example.org'), 'PX003',
                       'message 2: recipient 2 local part is 65 bytes; the limit is 64',
                       'issue 11: batch: a recipient with a 65-byte local part refuses the batch, naming message and recipient');
select pg_temp.refused($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'recipients',
                                                (select jsonb_agg('r' || i || '@example.org') from generate_series(1, 1001) i))))$$,
                       'PX003', 'message 2: recipients has 1001 entries; the limit is 1000',
                       'issue 11: batch: 1001 recipients refuse the batch; nothing written');
select pg_temp.refused(format($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                             jsonb_build_object('stage', 'lim'),
                             jsonb_build_object('stage', 'lim', 'tube', %L)))$$, repeat('t', 201)), 'PX006', null,
                       'issue 11: batch: a tube name of 201 bytes refuses the batch with PX006; nothing written');
select pg_temp.accepted($$select pepsi.workqueue_inject_batch(jsonb_build_array(
                              jsonb_build_object('stage', 'lim', 'subject', repeat('s', 998), 'header_from', repeat('f', 998),
                                                 'origin_user', repeat('u', 256), 'tube', repeat('t', 200),
                                                 'recipients', (select jsonb_agg('r' || i || '@example.org')
                                                                  from generate_series(1, 1000) i)),
                              jsonb_build_object('stage', 'lim', 'headers', repeat('h', 1048576),
                                                 'state', jsonb_build_object('x', repeat('a', 1048576 - 9)))))$$, 3,
                        'issue 11: batch: every field at its limit is accepted (two messages, one body row)');

select pg_temp.accepted($$select pepsi.workqueue_inject_batch((select jsonb_agg(jsonb_build_object('stage', 'lim'))
                                                                 from generate_series(1, 10000)))$$, 10000,
                        'issue 11: batch: 10,000 messages in one call are accepted');
select pg_temp.refused($$select pepsi.workqueue_inject_batch((select jsonb_agg(jsonb_build_object('stage', 'lim'))
                                                                from generate_series(1, 10001)))$$, 'PX003',
                       'the batch has 10001 entries; the limit is 10000',
                       'issue 11: batch: 10,001 messages are refused; nothing written');

-- webhook_events_ingest ------------------------------------------------------------

select pepsi.webhook_provider_add('lim-pull', 'github', '{s3cret}');
select pepsi.webhook_provider_add('lim-pipe', 'github', '{s3cret}', p_stage => 'lim');

select pg_temp.accepted($$select count(*) from pepsi.webhook_events_ingest(
                              jsonb_build_array(jsonb_build_object('provider', 'lim-pipe', 'external_id', 'big-1',
                                                                   'payload_length', 67108864)),
                              convert_to(repeat('p', 67108864), 'UTF8'))$$, 3,
                        'issue 11: ingest accepts a payload of 64 MiB (event, message and body rows)');
select pg_temp.refused($$select count(*) from pepsi.webhook_events_ingest(
                             jsonb_build_array(jsonb_build_object('provider', 'lim-pull', 'external_id', 'ok-1', 'payload', 'x'),
                                               jsonb_build_object('provider', 'lim-pipe', 'external_id', 'big-2',
                                                                  'payload_length', 67108865)),
                             convert_to(repeat('p', 67108865), 'UTF8'))$$, 'PX003',
                       'event 2: payload is 67108865 bytes; the limit is 67108864',
                       'issue 11: ingest refuses a burst whose event 2 has a payload of 64 MiB + 1; event 1 is not written either');
select pg_temp.refused($$select count(*) from pepsi.webhook_events_ingest(
                             jsonb_build_array(jsonb_build_object('provider', 'lim-pull', 'external_id', 'big-3',
                                                                  'payload', repeat('p', 67108865))))$$, 'PX003',
                       'event 1: payload is 67108865 bytes; the limit is 67108864',
                       'issue 11: ingest refuses a text payload of 64 MiB + 1; nothing written');
-- A header block line is "name: value" CRLF: 1 + 2 + value + 2 bytes.
select pg_temp.accepted($$select count(*) from pepsi.webhook_events_ingest(
                              jsonb_build_array(jsonb_build_object('provider', 'lim-pipe', 'external_id', 'hdr-1', 'payload', 'x',
                                                                   'headers', jsonb_build_object('h', repeat('v', 1048576 - 5)))))$$, 3,
                        'issue 11: ingest accepts headers whose header block is 1 MiB');
select pg_temp.refused($$select count(*) from pepsi.webhook_events_ingest(
                             jsonb_build_array(jsonb_build_object('provider', 'lim-pipe', 'external_id', 'hdr-2', 'payload', 'x',
                                                                  'headers', jsonb_build_object('h', repeat('v', 1048576 - 4)))))$$,
                       'PX003', 'event 1: headers is 1048577 bytes; the limit is 1048576',
                       'issue 11: ingest refuses headers whose header block is 1 MiB + 1; nothing written');
select pg_temp.refused($$select * from pepsi.webhook_event_ingest('lim-pipe', 'hdr-3', 'x',
                                                                 jsonb_build_object('h', repeat('v', 1048576 - 4)))$$,
                       'PX003', 'event 1: headers is 1048577 bytes; the limit is 1048576',
                       'issue 11: webhook_event_ingest (one event) applies the same limits; nothing written');
select pg_temp.accepted($$select count(*) from pepsi.webhook_events_ingest(
                              (select jsonb_agg(jsonb_build_object('provider', 'lim-pull', 'external_id', 'n' || i, 'payload', 'x'))
                                 from generate_series(1, 10000) i))$$, 10000,
                        'issue 11: ingest accepts a burst of 10,000 events');
select pg_temp.refused($$select count(*) from pepsi.webhook_events_ingest(
                             (select jsonb_agg(jsonb_build_object('provider', 'lim-pull', 'external_id', 'm' || i, 'payload', 'x'))
                                from generate_series(1, 10001) i))$$, 'PX003',
                       'the burst has 10001 entries; the limit is 10000',
                       'issue 11: ingest refuses a burst of 10,001 events; nothing written');
select pg_temp.refused(format($$select count(*) from pepsi.webhook_events_ingest(
                             jsonb_build_array(jsonb_build_object('provider', 'lim-pull', 'external_id', %L, 'payload', 'x')))$$,
                              repeat('e', 1025)), 'PX012', null,
                       'issue 11: ingest refuses an external id of 1025 bytes with PX012; nothing written');

-- Reasons are cut, never refused; state patches are limited ---------------------------

select pepsi.workqueue_inject('lim-r') as r1 \gset
select pepsi.workqueue_inject('lim-r') as r2 \gset
update pepsi.workqueue set status = 'running' where workqueue_id in (:r1, :r2);
select pepsi.workqueue_fail(:r1, 'lim-r', repeat('x', 10000));
select is((select octet_length(state->>'last_error') || ' ' || right(state->>'last_error', 4)
             from pepsi.workqueue where workqueue_id = :r1),
          '4096 x...', 'issue 11: a 10,000-byte failure reason is kept cut to 4096 bytes ending in "..."');
select pepsi.workqueue_fail(:r2, 'lim-r', repeat('€', 5000));
select ok((select octet_length(state->>'last_error') <= 4096 and state->>'last_error' like '€€€%...'
             from pepsi.workqueue where workqueue_id = :r2),
          'issue 11: a long multi-byte reason is cut on a character boundary, within 4096 bytes');
select pepsi.workqueue_inject('lim-p') as p1 \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :p1;
select throws_ok(format($$select pepsi.workqueue_advance(%s, 'lim-p', 'next', jsonb_build_object('x', repeat('a', 1048576 - 8)))$$, :p1),
                 'PX003', 'state patch is 1048577 bytes; the limit is 1048576',
                 'issue 11: a stage''s state patch over 1 MiB is refused (advance)');
select is((select stage from pepsi.workqueue where workqueue_id = :p1), 'lim-p',
          'issue 11: the refused advance left the message where it was');
select throws_ok(format($$select * from pepsi.workqueue_commit('lim-p', jsonb_build_array(jsonb_build_object(
                              'id', %s, 'do', 'advance', 'next', 'n', 'state', jsonb_build_object('x', repeat('a', 1048576 - 8)))))$$, :p1),
                 'PX003', 'a state patch is 1048577 bytes; the limit is 1048576',
                 'issue 11: a state patch over 1 MiB is refused in a batch commit too');

select * from finish();
rollback;
