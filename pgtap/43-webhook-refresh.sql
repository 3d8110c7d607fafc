-- A redelivery that finds its event's row locked (W-10, W-11, W-12,
-- issue 12): answered "busy" at once, recorded, and applied once the row
-- is free, so that the stored payload ends as the article's blocking
-- upsert would have left it: the newest delivery while the event is
-- unprocessed, nothing when it was processed meanwhile.
--
-- A row lock of another transaction cannot be had inside one
-- transaction: a second session (dblink) holds the rows, as a puller
-- does, and this file runs without a surrounding transaction (its
-- provider's rows are removed at the end).

select plan(25);

create extension if not exists dblink;
do $$
begin
    perform dblink_connect('holder', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                            split_part(current_setting('unix_socket_directories'), ',', 1)));
end
$$;
-- holder(SQL): runs a command in the second session (begin, commit,
-- rollback); holder_query(SQL): a query returning one text column there.
create function pg_temp.holder(p_sql text) returns void language plpgsql
as $$ begin perform dblink_exec('holder', p_sql); end $$;
create function pg_temp.holder_query(p_sql text) returns void language plpgsql
as $$ begin perform t.x from dblink('holder', p_sql) as t(x text); end $$;
-- A puller's transaction: it pulls (and so locks) every event of rf.
create function pg_temp.holder_pull() returns void language sql
as $$ select pg_temp.holder('begin');
      select pg_temp.holder_query($q$select count(*)::text from pepsi.webhook_events_pull('rf', 10)$q$) $$;
create function pg_temp.payload(p_id text) returns text language sql
as $$ select convert_from(e.payload, 'UTF8') from pepsi.webhook_events e where e.provider = 'rf' and e.external_id = p_id $$;
create function pg_temp.pending(p_id text) returns int language sql
as $$ select count(*)::int from pepsi.webhook_event_refresh r
        join pepsi.webhook_events e using (webhook_event_id)
       where e.provider = 'rf' and e.external_id = p_id $$;
create function pg_temp.deliver(p_id text, p_body text, p_at timestamptz) returns text language sql
as $$ select i.outcome from pepsi.webhook_event_ingest('rf', p_id, convert_to(p_body, 'UTF8'),
                                                       jsonb_build_object('x-body', p_body), p_at) i $$;

select pepsi.webhook_provider_add('rf', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}');
select is(pg_temp.deliver('e1', 'v1', now() - interval '10 minutes'), 'new', 'an event is stored');

-- A puller holds e1 and gives up (rolls back) ---------------------------------------

select pg_temp.holder_pull();
select is(pg_temp.deliver('e1', 'v2', now() - interval '5 minutes'), 'busy',
          'W-10: a redelivery of a held event is answered busy, without waiting');
select is(pg_temp.payload('e1'), 'v1', 'the row is not written under the puller');
select is(pg_temp.pending('e1'), 1, 'issue 12: the delivery is recorded');
select is(pepsi.webhook_event_refresh_apply(), 0, 'issue 12: it is not applied while the row is held');
select is(pg_temp.pending('e1'), 1, 'and stays recorded');
select pg_temp.holder('rollback');
select is(pepsi.webhook_event_refresh_apply(), 1, 'issue 12: once the row is free, it is applied');
select is((select concat_ws(' ', convert_from(payload, 'UTF8'), headers::text, received_at > now() - interval '6 minutes')
             from pepsi.webhook_events where provider = 'rf' and external_id = 'e1'),
          'v2 {"x-body": "v2"} t',
          'W-11: the stored payload is the redelivery''s, with its headers and received_at');
select is(pg_temp.pending('e1'), 0, 'and it is forgotten');

-- The next pull applies what came while the row was held ------------------------------

select pg_temp.holder_pull();
select is(pg_temp.deliver('e1', 'v3', now() - interval '4 minutes'), 'busy', 'held again: busy');
select is(pg_temp.deliver('e1', 'v4', now() - interval '3 minutes'), 'busy', 'and again: busy');
select pg_temp.holder('rollback');
select is((select convert_from(p.payload, 'UTF8') from pepsi.webhook_events_pull('rf', 10) p where p.external_id = 'e1'),
          'v4', 'issue 12: the next pull hands out the newest delivery, not the one stored under the first puller');
select is(pg_temp.payload('e1') || '/' || pg_temp.pending('e1'), 'v4/0', 'and stored it');

-- Processed meanwhile: nothing changes (W-12) ---------------------------------------------

select pg_temp.holder_pull();
select is(pg_temp.deliver('e1', 'v5', now() - interval '2 minutes'), 'busy', 'held by a puller that will finish it: busy');
select pg_temp.holder_query($$select pepsi.webhook_events_mark_processed(array(select webhook_event_id from pepsi.webhook_events
                                                                               where provider = 'rf' and external_id = 'e1'))::text$$);
select pg_temp.holder('commit');
select is(pepsi.webhook_event_refresh_apply(), 0, 'W-12: a delivery recorded for an event processed meanwhile is not applied');
select is(pg_temp.payload('e1') || '/' || pg_temp.pending('e1'), 'v4/0', 'the payload the puller processed stays; the record is dropped');
select ok((select processed_at is not null from pepsi.webhook_events where provider = 'rf' and external_id = 'e1'),
          'the event is processed');

-- An older delivery does not replace a newer one ---------------------------------------

select is(pg_temp.deliver('e2', 'new', now() - interval '1 minute'), 'new', 'another event');
select pg_temp.holder_pull();
select is(pg_temp.deliver('e2', 'old', now() - interval '9 minutes'), 'busy', 'a late, older delivery while it is held: busy');
select pg_temp.holder('rollback');
select is(pepsi.webhook_event_refresh_apply(), 0, 'W-11: an older delivery than the stored one is not applied');
select is(pg_temp.payload('e2') || '/' || pg_temp.pending('e2'), 'new/0', 'the newer payload stays');

-- Reconciliation applies them too (pipeline providers have no pullers) ----------------

select pg_temp.holder('begin');
select pg_temp.holder_query($$select 1::text from pepsi.webhook_events where provider = 'rf' and external_id = 'e2' for update$$);
select is(pg_temp.deliver('e2', 'newest', now()), 'busy', 'a row locked by any transaction: busy');
select pg_temp.holder('rollback');
select ok(not pepsi.reconcile_unchanged(), 'issue 12: a recorded delivery makes a scheduled pass worth running');
select is((select ran from pepsi.reconcile(now(), 'schedule', null, true)), true, 'so the scheduled pass runs');
select is(pg_temp.payload('e2') || '/' || pg_temp.pending('e2'), 'newest/0', 'issue 12: and applied it');

do $$ begin perform dblink_disconnect('holder'); end $$;
drop extension dblink;
delete from pepsi.webhook_events where provider = 'rf';
delete from pepsi.webhook_provider where provider = 'rf';
delete from pepsi.reconcile_runs r where not exists (select 1 from pepsi.reconcile_findings f where f.run_id = r.run_id);
select * from finish();
