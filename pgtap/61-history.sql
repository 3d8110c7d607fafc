-- The message history (issue 16): pepsi.workqueue_history gets one row per
-- message that leaves the queue, written by the statement that deletes
-- it (finish, workqueue_delete, workqueue_purge), partitioned by UTC day,
-- kept for history_retention (old days detached and dropped), off with
-- retention 0; pepsi.message_history tells what happened to message N.

begin;
select plan(32);

create function pg_temp.outcome(p_sql text) returns text
language plpgsql as $$
begin
    execute p_sql;
    return 'ok';
exception when others then
    return sqlstate;
end
$$;
create function pg_temp.days() returns text[] language sql stable as $$
select array_agg(c.relname::text order by c.relname)
  from pg_inherits i join pg_class c on c.oid = i.inhrelid
 where i.inhparent = 'pepsi.workqueue_history'::regclass
$$;
create function pg_temp.day(p_t timestamptz) returns text language sql stable as
$$ select 'workqueue_history_p' || to_char(p_t at time zone 'UTC', 'YYYYMMDD') $$;

-- Yesterday's partition may be there too: a suite started before midnight
-- UTC deployed then (CI ran across midnight once); only today and tomorrow
-- are owed.
select is(array(select d from unnest(pg_temp.days()) d
                 where d = 'workqueue_history_default' or d >= pg_temp.day(now()) order by d),
          array['workqueue_history_default', pg_temp.day(now()), pg_temp.day(now() + interval '1 day')],
          'issue 16: deploy made today''s and tomorrow''s partitions (UTC) beside the DEFAULT one');

-- Finishing writes the history, in the same statement ----------------------------------

select pepsi.workqueue_inject('a', p_origin_user => 'alice@example.org') as m1 \gset
select pepsi.workqueue_inject('a') as m2 \gset
select pepsi.workqueue_inject('a') as m3 \gset
select count(*) from pepsi.workqueue_claim('{a}', '{10}');
update pepsi.workqueue set state = '{"hops": 3, "strikes": 1, "last_error": "slow"}' where workqueue_id = :m1;
select pepsi.workqueue_finish(:m1, 'a');
select is((select concat_ws('|', workqueue_id, tube, stage, outcome, sender_key, origin_user, hops, strikes,
                            coalesce(failure_class, '-'), last_error, ended_at = now(), tableoid::regclass::text)
             from pepsi.workqueue_history),
          concat_ws('|', :m1, 'default', 'a', 'finished', 'user:alice@example.org', 'alice@example.org', 3, 1, '-', 'slow',
                    true, 'pepsi.' || pg_temp.day(now())),
          'issue 16: a finished message has its history row in the same transaction, in today''s partition');
select is((select count(*)::int from pepsi.workqueue where workqueue_id = :m1), 0, 'and its queue row is gone');

-- the batch paths of workqueue_transition: the hot one (finishes only) and
-- the general one (a finish beside a pause)
select is((select array_agg(t.outcome order by t.workqueue_id)
             from pepsi.workqueue_transition(array[pepsi.transition_of(:m2, 'a', 'finish'),
                                                   pepsi.transition_of(:m3, 'a', 'advance', p_next => 'b')]) t),
          '{ok,ok}', 'a batch of a finish and an advance');
select is((select array_agg(outcome) from pepsi.workqueue_history where workqueue_id = :m2), '{finished}',
          'issue 16: the batch finish (hot path) wrote its history row');
select count(*) from pepsi.workqueue_claim('{b}', '{10}');
select pepsi.workqueue_inject('a') as m4 \gset
select count(*) from pepsi.workqueue_claim('{a}', '{10}');
select is((select array_agg(t.outcome order by t.workqueue_id)
             from pepsi.workqueue_transition(array[pepsi.transition_of(:m3, 'b', 'finish'),
                                                   pepsi.transition_of(:m4, 'a', 'pause', p_until => now() + interval '1 hour')]) t),
          '{ok,ok}', 'a batch of a finish and a pause');
select is((select array_agg(outcome || '/' || stage) from pepsi.workqueue_history where workqueue_id = :m3), '{finished/b}',
          'issue 16: the general batch path wrote the history row too, with the last stage');
select is((select count(*)::int from pepsi.workqueue_history where workqueue_id = :m4), 0,
          'issue 16: a paused message has no history row');

-- outcome deleted (workqueue_delete) and purged (workqueue_purge)
select pepsi.workqueue_delete(array[:m4], 'not wanted');
select is((select array_agg(outcome) from pepsi.workqueue_history where workqueue_id = :m4), '{deleted}',
          'issue 16: a deleted (cancelled) message: outcome deleted');
select pepsi.workqueue_inject('a') as m5 \gset
update pepsi.workqueue set status = 'failed', claimed_at = now() - interval '2 hours',
       state = '{"failure_class": "permanent", "last_error": "bad address"}' where workqueue_id = :m5;
select is(pepsi.workqueue_purge(interval '1 hour'), 1::bigint, 'purge one failed message');
select is((select outcome || '|' || failure_class || '|' || last_error from pepsi.workqueue_history where workqueue_id = :m5),
          'purged|permanent|bad address', 'issue 16: a purged message: outcome purged, its failure kept');

-- a purged message that carried a webhook event leaves a tombstone:
-- reconciliation must not re-inject its event as lost
select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}', 'deliver', 'hooks');
select webhook_event_id as ev, workqueue_id as m6
  from pepsi.webhook_event_ingest('acme', 'ev_1', 'x'::bytea, '{}', now() - interval '3 hours') \gset
update pepsi.workqueue set status = 'failed', claimed_at = now() - interval '2 hours' where workqueue_id = :m6;
select pepsi.workqueue_purge(interval '1 hour');
select is((select status || '|' || (reason like 'purged: failed for more than%') from pepsi.workqueue_tombstones
            where webhook_event_id = :ev), 'failed|true', 'issue 16: a purged message with an event leaves a tombstone');
select is((select count(*)::int from pepsi.reconcile(now() + interval '1 day') r
             join pepsi.reconcile_findings f on f.run_id = r.run_id and f.webhook_event_id = :ev), 0,
          'issue 16: and reconciliation does not re-inject its event');

-- message_history -------------------------------------------------------------------------

select pepsi.workqueue_inject('q') as m7 \gset
select is((select array_agg(source || '/' || status || '/' || stage) from pepsi.message_history(:m7)), '{queue/pending/q}',
          'issue 16: message_history of a queued message: its queue row');
select is((select array_agg(source || '/' || status || '/' || (detail->>'hops')) from pepsi.message_history(:m1)),
          '{history/finished/3}', 'issue 16: of a finished one: its history row');
select is((select array_agg(source || '/' || status order by source) from pepsi.message_history(:m4)),
          '{history/deleted,tombstone/paused}', 'issue 16: of a deleted one: its history row and its tombstone');
select is((select array_agg(source || '/' || status) from pepsi.message_history(:m5)), '{history/purged}',
          'issue 16: of a purged one: its history row');
select is((select count(*)::int from pepsi.message_history(999999999)), 0, 'issue 16: an unknown id: no row');

-- Partitions: the DEFAULT catches a day without one, maintenance moves it in -----------------

select pepsi.workqueue_inject('a') as m8 \gset
select count(*) from pepsi.workqueue_claim('{a}', '{10}');
select count(*) from pepsi.workqueue_transition(array[pepsi.transition_of(:m8, 'a', 'finish')], 1000, now() + interval '4 days');
select is((select tableoid::regclass::text from pepsi.workqueue_history where workqueue_id = :m8),
          'pepsi.workqueue_history_default', 'issue 16: a finish on a day without a partition goes to the DEFAULT one');
select is(pepsi.workqueue_history_maintain(now() + interval '4 days'), 2,
          'maintenance on that day makes its two partitions (and, at 7 days, drops none)');
select is((select tableoid::regclass::text from pepsi.workqueue_history where workqueue_id = :m8),
          'pepsi.' || pg_temp.day(now() + interval '4 days'), 'issue 16: and moves the DEFAULT''s rows of that day in');

-- Retention: old days detached and dropped ------------------------------------------------

select is(pg_temp.outcome($$select pepsi.reconcile_configure('{"history_retention": "2 hours"}')$$), 'PX051',
          'issue 16: a history_retention under 1 day: PX051');
select is(pg_temp.outcome($$select pepsi.reconcile_configure('{"history_retention": "400 days"}')$$), 'PX051',
          'issue 16: over 366 days: PX051');
select is(pg_temp.outcome($$select pepsi.reconcile_configure('{"history_retention": "soon"}')$$), 'PX051',
          'issue 16: not an interval: PX051');
select pepsi.reconcile_configure('{"history_retention": "2 days"}');
select pepsi.reconcile(now() + interval '3 days');
select is(pg_temp.days(), array['workqueue_history_default'] || array(
              select pg_temp.day(now() + make_interval(days => d)) from generate_series(1, 5) d),
          'issue 16: a reconciliation pass 3 days on drops the days that ended before 2 days'' retention (today''s) and keeps the rest');
select is(to_regclass('pepsi.' || pg_temp.day(now())), null, 'issue 16: the old day''s table is dropped, not emptied');
select is((select array_agg(workqueue_id) from pepsi.workqueue_history), array[:m8::bigint],
          'issue 16: what is left is the row of a day still kept');

-- History off: nothing written ------------------------------------------------------------

select pepsi.reconcile_configure('{"history_retention": "0"}');
select pepsi.workqueue_inject('a') as m9 \gset
select count(*) from pepsi.workqueue_claim('{a}', '{10}');
select pepsi.workqueue_finish(:m9, 'a');
select is((select count(*)::int from pepsi.workqueue_history where workqueue_id = :m9), 0,
          'issue 16: with history_retention 0 a finish writes no history row');
select is(pepsi.workqueue_history_maintain(now()), 5, 'issue 16: and maintenance drops every day partition (5)');
select is(pg_temp.days(), '{workqueue_history_default}', 'issue 16: leaving the DEFAULT one, emptied');

-- The history row is part of the statement: when it cannot be written, the
-- finish fails and the message stays queued.
select pepsi.reconcile_configure('{"history_retention": "7 days"}');
select pepsi.workqueue_inject('a') as m10 \gset
select count(*) from pepsi.workqueue_claim('{a}', '{10}');
drop table pepsi.workqueue_history_default;
select is(pg_temp.outcome(format('select pepsi.workqueue_finish(%s, ''a'')', :m10)), '23514',
          'issue 16: with no partition to take it, the finish fails (no partition for the row: 23514)');
select is((select status::text from pepsi.workqueue where workqueue_id = :m10), 'running',
          'issue 16: and the message is still queued: the delete was rolled back with the insert');

select * from finish();
rollback;
