-- The DBA views: queue_overview, stuck, failed (stage_totals is in
-- 10-stats.sql). The views read now(), the transaction's start, so rows are
-- placed relative to it.

begin;
select plan(29);

select has_view('pepsi', 'queue_overview', 'queue_overview exists');
select has_view('pepsi', 'stuck', 'stuck exists');
select has_view('pepsi', 'failed', 'failed exists');
select columns_are('pepsi', 'queue_overview', array['tube', 'stage', 'status', 'messages', 'oldest_age', 'next_retry'],
                   'queue_overview: tube, stage, status, messages, oldest_age, next_retry');
select columns_are('pepsi', 'stuck', array['workqueue_id', 'tube', 'stage', 'sender_key', 'claimed_at', 'running_for', 'arrived_at', 'state'],
                   'stuck: the row, its claim time and how long it has run');
select columns_are('pepsi', 'failed', array['workqueue_id', 'tube', 'stage', 'status', 'failed_stage', 'failure_class',
                                            'last_error', 'strikes', 'sender_key', 'arrived_at'],
                   'failed: the row and why and where it failed');
select col_type_is('pepsi', 'queue_overview', 'messages', 'bigint', 'queue_overview.messages is a bigint count');
select col_type_is('pepsi', 'queue_overview', 'oldest_age', 'interval', 'queue_overview.oldest_age is an interval');
select col_type_is('pepsi', 'stuck', 'running_for', 'interval', 'stuck.running_for is an interval');
select col_type_is('pepsi', 'failed', 'strikes', 'integer', 'failed.strikes is an integer');

select is_empty($$select * from pepsi.queue_overview$$, 'queue_overview of an empty queue has no rows');

-- queue_overview --------------------------------------------------------------------------------

select pepsi.workqueue_inject('v1', p_arrived_at => now() - interval '1 hour') is not null as x \gset
select pepsi.workqueue_inject('v1', p_arrived_at => now() - interval '10 minutes') is not null as x \gset
select pepsi.workqueue_inject('v1') is not null as x \gset
select pepsi.workqueue_inject('v1', p_arrived_at => now() - interval '30 minutes') as vp1 \gset
select pepsi.workqueue_inject('v1', p_arrived_at => now() - interval '20 minutes') as vp2 \gset
update pepsi.workqueue set status = 'paused', timeout = now() + interval '5 minutes' where workqueue_id = :vp1;
update pepsi.workqueue set status = 'paused', timeout = now() + interval '2 minutes' where workqueue_id = :vp2;
select pepsi.workqueue_inject('v1', p_tube => 't2', p_arrived_at => now() - interval '5 seconds') is not null as x \gset
select pepsi.workqueue_inject('v2') as vr \gset
update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = :vr;

select set_eq($$select tube, stage, status::text, messages, oldest_age, next_retry from pepsi.queue_overview$$,
              $$values ('default', 'v1', 'pending', 3::bigint, interval '1 hour', null::timestamptz),
                       ('default', 'v1', 'paused', 2::bigint, interval '30 minutes', now() + interval '2 minutes'),
                       ('t2', 'v1', 'pending', 1::bigint, interval '5 seconds', null::timestamptz),
                       ('default', 'v2', 'running', 1::bigint, interval '0', null::timestamptz)$$,
              'queue_overview: one row per tube, stage and status with count, age of the oldest arrival and next retry');
select is((select next_retry from pepsi.queue_overview where stage = 'v1' and status = 'paused'), now() + interval '2 minutes',
          'D-92: queue_overview.next_retry is the earliest timeout of the paused rows');
select is((select sum(messages)::bigint from pepsi.queue_overview), (select count(*) from pepsi.workqueue),
          'queue_overview counts every row exactly once');
select is((select count(*) from pepsi.queue_overview where stage = 'v1'), 3::bigint,
          'queue_overview separates tubes and statuses of one stage');

-- stuck -------------------------------------------------------------------------------------------

select pepsi.workqueue_inject('st', p_origin_user => 'u') as st_old \gset
select pepsi.workqueue_inject('st') as st_young \gset
select pepsi.workqueue_inject('st') as st_secs \gset
select pepsi.workqueue_inject('st') as st_pending \gset
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '11 minutes' where workqueue_id = :st_old;
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '9 minutes' where workqueue_id = :st_young;
update pepsi.workqueue set status = 'running', claimed_at = now() - interval '2 seconds' where workqueue_id = :st_secs;
update pepsi.workqueue set claimed_at = now() - interval '1 hour' where workqueue_id = :st_pending;  -- requeued long ago

select set_eq($$select workqueue_id from pepsi.stuck$$, array[:st_old]::bigint[],
              'stuck: by default only rows running longer than 10 minutes');
select row_eq(format('select tube, stage, sender_key, claimed_at, running_for, state from pepsi.stuck where workqueue_id = %s', :st_old),
              row('default'::text, 'st'::text, 'user:u'::text, now() - interval '11 minutes', interval '11 minutes', '{}'::jsonb),
              'stuck: the row''s tube, stage, sender, claimed_at and running_for = now() - claimed_at');

set local pepsi.stuck_after = '1 second';
select set_eq($$select workqueue_id from pepsi.stuck$$, array[:st_old, :st_young, :st_secs]::bigint[],
              'stuck: pepsi.stuck_after = 1 second shows rows running longer than a second');
select ok(not exists (select 1 from pepsi.stuck where workqueue_id in (:vr, :st_pending)),
          'stuck: a row claimed just now, and a pending row with an old claimed_at, are not stuck');
set local pepsi.stuck_after = '5 minutes';
select set_eq($$select workqueue_id from pepsi.stuck$$, array[:st_old, :st_young]::bigint[],
              'stuck: pepsi.stuck_after = 5 minutes moves the threshold');
set local pepsi.stuck_after = '';
select set_eq($$select workqueue_id from pepsi.stuck$$, array[:st_old]::bigint[],
              'stuck: an empty pepsi.stuck_after means the default 10 minutes');
reset pepsi.stuck_after;

-- failed ----------------------------------------------------------------------------------------------

create function pg_temp.running(p_stage text, p_tube text default 'default')
returns bigint language plpgsql as $$
declare
    v_id bigint;
begin
    v_id := pepsi.workqueue_inject(p_stage, p_tube => p_tube, p_envelope_sender => 'x@example.org');
    update pepsi.workqueue set status = 'running', claimed_at = now() where workqueue_id = v_id;
    return v_id;
end $$;

select pg_temp.running('fx', 'tf') as fl_perm \gset
select pepsi.workqueue_fail(:fl_perm, 'fx', 'no such user') is null as x \gset
select pg_temp.running('fh') as fl_hang \gset
update pepsi.workqueue set state = '{"strikes": 2}' where workqueue_id = :fl_hang;
select pepsi.workqueue_strike(:fl_hang, 'fh', 'hang', 'no answer') is not null as x \gset
select pg_temp.running('fp') as fl_paused \gset
select pepsi.workqueue_pause(:fl_paused, 'fp', now() + interval '1 minute', 'later') is null as x \gset
select pg_temp.running('fc') as fl_crash1 \gset
select pepsi.workqueue_strike(:fl_crash1, 'fc', 'crash', 'segfault') is not null as x \gset

select set_eq($$select workqueue_id from pepsi.failed$$, array[:fl_perm, :fl_hang]::bigint[],
              'failed: failed and timed-out rows only (not paused, pending or running)');
select row_eq(format($$select tube, stage, status::text, failed_stage, failure_class, last_error, strikes, sender_key
                        from pepsi.failed where workqueue_id = %s$$, :fl_perm),
              row('tf'::text, 'fx'::text, 'failed'::text, 'fx'::text, 'permanent'::text, 'no such user'::text, 0, 'from:example.org'::text),
              'D-111: failed shows failed_stage, failure_class, last_error; strikes 0 when none');
select row_eq(format($$select status::text, failed_stage, failure_class, last_error, strikes
                        from pepsi.failed where workqueue_id = %s$$, :fl_hang),
              row('timeout'::text, 'fh'::text, 'timed-out'::text, 'no answer'::text, 3),
              'D-88: failed shows a timed-out row with its class and 3 strikes');
select ok(not exists (select 1 from pepsi.failed where workqueue_id = :fl_crash1),
          'D-84: a row paused by its first strike is not in failed');

-- A resumed row leaves failed.
select pepsi.workqueue_resume(p_ids => array[:fl_perm]::bigint[]) as resumed \gset
select set_eq($$select workqueue_id from pepsi.failed$$, array[:fl_hang]::bigint[],
              'failed: a resumed row is no longer listed');

-- The views follow the rows: after a finish, the overview forgets the row.
select pepsi.workqueue_finish(:vr, 'v2') is null as x \gset
select is((select count(*) from pepsi.queue_overview where stage = 'v2'), 0::bigint,
          'queue_overview: a finished message is gone from the overview');

-- The views run with the view owner's rights: a reader sees every row.
set local role pepsi_reader;
select is((select count(*) from pepsi.failed), 1::bigint, 'pepsi_reader sees the failed rows through the view');
select is((select sum(messages) from pepsi.queue_overview), 14::numeric, 'pepsi_reader sees the whole queue through queue_overview');
reset role;

select * from finish();
rollback;
