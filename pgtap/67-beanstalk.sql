-- Issue 17: the SQL side of the beanstalkd frontend (deploy/beanstalk.sql,
-- the contract in README "beanstalkd frontend: the SQL side"). Every
-- function of the contract: put and reserve (priority, then id, across
-- tubes; delayed jobs ready at their time; TTR expiry; DEADLINE_SOON),
-- release, bury, touch, kick, kick-job, peek, delete, the statistics,
-- frontends, sessions and references (T-21, T-32..T-35, T-37, T-39, T-40),
-- and the existing sweeps that must leave reserved jobs alone. The clock is
-- p_now, never slept. FOR UPDATE SKIP LOCKED is tested with a second real
-- session (dblink) holding a reserved row, as pgtap/65 does; its rows are
-- committed by that session and deleted again at the end.

begin;
select plan(113);

create function pg_temp.outcome(p_sql text) returns text
language plpgsql as $$
begin
    execute p_sql;
    return 'ok';
exception when others then
    return sqlstate;
end
$$;
create temp table j (name text primary key, id bigint) on commit drop;
create function pg_temp.id(p_name text) returns bigint language sql stable as
$$ select j.id from j where j.name = p_name $$;
create function pg_temp.put(p_name text, p_tube text, p_pri bigint, p_delay bigint default 0, p_ttr bigint default 60)
returns bigint language sql as $$
    insert into j values (p_name, pepsi.beanstalk_put(p_tube, p_pri, p_delay, p_ttr, convert_to(p_name, 'UTF8')))
    returning id $$;
-- a reserve as "OUTCOME name" (the job's name in j), or "NONE next_at"
create function pg_temp.res(p_session bigint, p_tubes text[], p_now timestamptz default now()) returns text
language sql as $$
    select r.outcome || coalesce(' ' || (select j.name from j where j.id = r.job_id and j.name ~ '^[a-z]'), '')
           || coalesce(' +' || extract(epoch from r.next_at - now())::int, '')
      from pepsi.beanstalk_reserve(p_session, p_tubes, p_now) r $$;
create function pg_temp.st(p_name text, p_now timestamptz default now()) returns text language sql as $$
    select s.state || ' pri ' || s.pri || ' r' || s.reserves || ' t' || s.timeouts || ' l' || s.releases
           || ' b' || s.buries || ' k' || s.kicks
      from pepsi.beanstalk_stats_job(pg_temp.id(p_name), p_now) s $$;

-- Frontends and sessions ---------------------------------------------------------
select is(pepsi.beanstalk_stage(), 'beanstalk', 'issue 17: beanstalk_stage() is the pull stage beanstalk');
insert into j values ('F', pepsi.beanstalk_frontend_start('test:11300 pid 1'));
select ok(pepsi.beanstalk_frontend_alive(pg_temp.id('F')),
          'issue 17: frontend_start registers the frontend and holds its advisory lock on this connection');
insert into j values ('S1', pepsi.beanstalk_session_open(pg_temp.id('F'))),
                     ('S2', pepsi.beanstalk_session_open(pg_temp.id('F'))),
                     ('S3', pepsi.beanstalk_session_open(pg_temp.id('F')));
select results_eq($$select r.kind, r.tube::text from pepsi.beanstalk_ref r where r.session_id = pg_temp.id('S1')
                    order by 1$$,
                  $$values ('use', 'default'), ('watch', 'default')$$,
                  'T-24: a new session uses and watches default');

-- put and reserve ----------------------------------------------------------------
select null as x from (select pg_temp.put('a', 't67a', 10), pg_temp.put('b', 't67b', 5), pg_temp.put('c', 't67a', 5),
       pg_temp.put('d', 't67b', 5), pg_temp.put('z', 't67z', 0)) q \gset quiet_
select is((select w.bs_priority from pepsi.workqueue w where w.workqueue_id = pg_temp.id('a')), 10::bigint,
          'issue 17: put stores its priority in bs_priority');
select is((select w.stage || ' ' || w.status from pepsi.workqueue w where w.workqueue_id = pg_temp.id('a')),
          'beanstalk pending', 'issue 17: a put without delay is a pending row at stage beanstalk (ready)');
select is((select b.body from pepsi.workqueue w join pepsi.workqueue_body b using (body_id)
            where w.workqueue_id = pg_temp.id('a')), convert_to('a', 'UTF8'),
          'issue 17: the body is stored in workqueue_body');
select is(array[pg_temp.res(pg_temp.id('S1'), '{t67a,t67b}'), pg_temp.res(pg_temp.id('S1'), '{t67a,t67b}'),
                pg_temp.res(pg_temp.id('S1'), '{t67a,t67b}'), pg_temp.res(pg_temp.id('S1'), '{t67a,t67b}')],
          array['RESERVED b', 'RESERVED c', 'RESERVED d', 'RESERVED a'],
          'issue 17: reserve takes the lowest priority, then the lowest id, across the watched tubes');
select is((select r.body from pepsi.beanstalk_reserve(pg_temp.id('S2'), '{t67z}') r), convert_to('z', 'UTF8'),
          'issue 17: RESERVED returns the body');
select is(pg_temp.res(pg_temp.id('S2'), '{t67a,t67b}'), 'NONE +60',
          'issue 17: NONE when nothing is ready; next_at the earliest TTR deadline in the watched tubes');
select is(pg_temp.res(pg_temp.id('S2'), '{t67empty}'), 'NONE', 'issue 17: NONE with next_at NULL when nothing may come');
select is((select w.status || ' ' || w.claim_id from pepsi.workqueue w where w.workqueue_id = pg_temp.id('b')),
          'running ' || pg_temp.id('S1'), 'issue 17: a reserved job is running with claim_id = the session');
select is((select extract(epoch from w.timeout - now())::int from pepsi.workqueue w
            where w.workqueue_id = pg_temp.id('b')), 60, 'issue 17: its timeout is the TTR deadline, p_now + ttr');

select is(pg_temp.outcome($$select pepsi.beanstalk_put('t67a', 4294967296, 0, 1, 'x')$$), 'PX003',
          'issue 17: put refuses a priority over 4294967295 (PX003)');
select is(pg_temp.outcome($$select pepsi.beanstalk_put('t67a', -1, 0, 1, 'x')$$), 'PX003',
          'issue 17: put refuses a negative priority (PX003)');
select is(pg_temp.outcome($$select pepsi.beanstalk_put('t67a', 1, 31536001, 1, 'x')$$), 'PX003',
          'issue 17: put refuses a delay over a year (PX003)');
select is(pg_temp.outcome($$select pepsi.beanstalk_put('-bad', 1, 0, 1, 'x')$$), 'PX006',
          'issue 17: put refuses an invalid tube name (PX006)');
select null as x from (select pg_temp.put('ttr0', 't67ttr0', 1, 0, 0)) q \gset quiet_
select is((select s.ttr from pepsi.beanstalk_stats_job(pg_temp.id('ttr0')) s), 1::bigint,
          'issue 17: a TTR of 0 is stored as 1, as beanstalkd does');

-- delayed jobs -------------------------------------------------------------------
select null as x from (select pg_temp.put('e', 't67e', 1, 30)) q \gset quiet_
select is(pg_temp.st('e'), 'delayed pri 1 r0 t0 l0 b0 k0', 'issue 17: a put with a delay is delayed');
select is((select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('e')), 'paused',
          'issue 17: a delayed job is a paused row');
select is(pg_temp.res(pg_temp.id('S2'), '{t67e}', now() + interval '10 s'), 'NONE +30',
          'issue 17: before its time a delayed job is not reserved; next_at is its time');
select is(pg_temp.res(pg_temp.id('S2'), '{t67e}', now() + interval '31 s'), 'RESERVED e',
          'issue 17: at its time a delayed job becomes ready and is reserved');

-- TTR expiry and DEADLINE_SOON ---------------------------------------------------
select null as x from (select pg_temp.put('f', 't67f', 1, 0, 5)) q \gset quiet_
select is(pg_temp.res(pg_temp.id('S1'), '{t67f}'), 'RESERVED f', 'issue 17: a job with TTR 5 is reserved');
select is(pg_temp.res(pg_temp.id('S3'), '{t67f}', now() + interval '4 s'), 'NONE +5',
          'issue 17: before its deadline another session cannot reserve it');
select is(pg_temp.res(pg_temp.id('S3'), '{t67f}', now() + interval '6 s'), 'RESERVED f',
          'issue 17: past its TTR the job goes back to ready and another session reserves it');
select is(pg_temp.st('f', now() + interval '6 s'), 'reserved pri 1 r2 t1 l0 b0 k0',
          'issue 17: the TTR expiry counted a timeout, the reserves two');
select is(pg_temp.res(pg_temp.id('S3'), '{t67empty}', now() + interval '10.5 s'), 'DEADLINE_SOON f',
          'issue 17: DEADLINE_SOON when the session''s job is within 1 s of its deadline');
select is(pg_temp.res(pg_temp.id('S3'), '{t67empty}', now() + interval '9 s'), 'NONE',
          'issue 17: no DEADLINE_SOON two seconds before it');

-- touch --------------------------------------------------------------------------
select ok(pepsi.beanstalk_touch(pg_temp.id('S3'), pg_temp.id('f'), now() + interval '10 s'),
          'issue 17: touch of a job the session holds');
select is((select s.time_left from pepsi.beanstalk_stats_job(pg_temp.id('f'), now() + interval '10 s') s), 5::bigint,
          'issue 17: touch sets the deadline to p_now + ttr');
select ok(not pepsi.beanstalk_touch(pg_temp.id('S1'), pg_temp.id('f')),
          'issue 17: touch of another session''s job is NOT_FOUND');

-- release ------------------------------------------------------------------------
select ok(not pepsi.beanstalk_release(pg_temp.id('S2'), pg_temp.id('b'), 3, 0),
          'issue 17: release of another session''s job is NOT_FOUND');
select ok(pepsi.beanstalk_release(pg_temp.id('S1'), pg_temp.id('b'), 3, 0), 'issue 17: release of the session''s job');
select is(pg_temp.st('b'), 'ready pri 3 r1 t0 l1 b0 k0', 'issue 17: a release makes it ready with its new priority');
select ok(not pepsi.beanstalk_release(pg_temp.id('S1'), pg_temp.id('b'), 3, 0),
          'issue 17: release of a job no longer reserved is NOT_FOUND');
select ok(pepsi.beanstalk_release(pg_temp.id('S1'), pg_temp.id('c'), 8, 20), 'issue 17: release with a delay');
select is(pg_temp.st('c'), 'delayed pri 8 r1 t0 l1 b0 k0', 'issue 17: a release with a delay makes it delayed');
select is((select s.delay || ' ' || s.time_left from pepsi.beanstalk_stats_job(pg_temp.id('c')) s), '20 20',
          'issue 17: stats-job shows the delay and the time left');

-- bury, kick, kick-job -----------------------------------------------------------
select ok(not pepsi.beanstalk_bury(pg_temp.id('S2'), pg_temp.id('d'), 2),
          'issue 17: bury of another session''s job is NOT_FOUND');
select ok(pepsi.beanstalk_bury(pg_temp.id('S1'), pg_temp.id('d'), 2), 'issue 17: bury of the session''s job');
select is(pg_temp.st('d'), 'buried pri 2 r1 t0 l0 b1 k0', 'issue 17: a buried job is buried with its new priority');
select is((select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('d')), 'failed',
          'issue 17: a buried job is a failed row');
select null as x from (select pg_temp.put('g', 't67b', 1, 100)) q \gset quiet_
select is(pepsi.beanstalk_kick('t67b', 10), 1::bigint, 'issue 17: kick takes the buried jobs first (d, not g)');
select is(pg_temp.st('d') || ', ' || pg_temp.st('g'), 'ready pri 2 r1 t0 l0 b1 k1, delayed pri 1 r0 t0 l0 b0 k0',
          'issue 17: the buried job is ready, kicked once; the delayed one untouched');
select is(pepsi.beanstalk_kick('t67b', 10), 1::bigint, 'issue 17: with no buried job, kick takes the delayed ones');
select is(pg_temp.st('g'), 'ready pri 1 r0 t0 l0 b0 k1', 'issue 17: the delayed job is ready');
select ok(pepsi.beanstalk_kick_job(pg_temp.id('c')), 'issue 17: kick-job of a delayed job');
select ok(not pepsi.beanstalk_kick_job(pg_temp.id('c')), 'issue 17: kick-job of a ready job is NOT_FOUND');
select ok(not pepsi.beanstalk_kick_job(-1), 'issue 17: kick-job of no job is NOT_FOUND');

-- peek ---------------------------------------------------------------------------
select null as x from (select pg_temp.put('h', 't67h', 9, 50), pg_temp.put('i', 't67h', 9, 40), pg_temp.put('k', 't67h', 7),
       pg_temp.put('l', 't67h', 6)) q \gset quiet_
select is(pg_temp.res(pg_temp.id('S2'), '{t67h}'), 'RESERVED l', 'issue 17: reserve l (to bury it)');
select ok(pepsi.beanstalk_bury(pg_temp.id('S2'), pg_temp.id('l'), 6), 'issue 17: l buried');
select results_eq($$select p.job_id, p.body from pepsi.beanstalk_peek(pg_temp.id('h')) p$$,
                  $$values (pg_temp.id('h'), convert_to('h', 'UTF8'))$$, 'issue 17: peek returns the job and its body');
select is((select count(*) from pepsi.beanstalk_peek(-1)), 0::bigint, 'issue 17: peek of no job: no row (NOT_FOUND)');
select is(array[(select p.job_id from pepsi.beanstalk_peek_state('t67h', 'ready') p),
                (select p.job_id from pepsi.beanstalk_peek_state('t67h', 'delayed') p),
                (select p.job_id from pepsi.beanstalk_peek_state('t67h', 'buried') p)],
          array[pg_temp.id('k'), pg_temp.id('i'), pg_temp.id('l')],
          'issue 17: peek-ready (next reserve), peek-delayed (soonest), peek-buried (lowest id)');
select is((select count(*) from pepsi.beanstalk_peek_state('t67e', 'buried')), 0::bigint,
          'issue 17: peek-buried of a tube without one: no row (NOT_FOUND)');

-- stats-job, stats-tube, stats ---------------------------------------------------
select results_eq($$select s.id, s.tube, s.state, s.pri, s.age, s.delay, s.ttr, s.time_left, s.file,
                           s.reserves, s.timeouts, s.releases, s.buries, s.kicks
                      from pepsi.beanstalk_stats_job(pg_temp.id('f'), now() + interval '7 s') s$$,
                  $$values (pg_temp.id('f'), 't67f'::text, 'reserved'::text, 1::bigint, 7::bigint, 0::bigint,
                            5::bigint, 8::bigint, 0, 2::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'issue 17: stats-job: every key and its value');
select is((select count(*) from pepsi.beanstalk_stats_job(-1)), 0::bigint, 'issue 17: stats-job of no job: NOT_FOUND');
select results_eq($$select s.name, s.current_jobs_urgent, s.current_jobs_ready, s.current_jobs_reserved,
                           s.current_jobs_delayed, s.current_jobs_buried, s.total_jobs, s.current_using,
                           s.current_watching, s.current_waiting, s.cmd_delete, s.cmd_pause_tube, s.pause,
                           s.pause_time_left
                      from pepsi.beanstalk_stats_tube('t67h') s$$,
                  $$values ('t67h'::text, 1::bigint, 1::bigint, 0::bigint, 2::bigint, 1::bigint, 4::bigint,
                            0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
                  'issue 17: stats-tube counts the tube''s jobs by state');
select is(pg_temp.outcome($$select * from pepsi.beanstalk_stats_tube('t67nosuch')$$), 'PX043',
          'T-32: stats-tube of a tube that does not exist is NOT_FOUND (PX043)');
select ok(not exists (select 1 from pepsi.tubes t where t.tube = 't67nosuch')
          and not exists (select 1 from pepsi.beanstalk_list_tubes() t where t = 't67nosuch'),
          'T-32: and leaves no tube behind');
select is((select s.current_connections || ' ' || s.frontends from pepsi.beanstalk_stats() s),
          '3 1', 'issue 17: stats counts the live sessions and frontends');

-- delete -------------------------------------------------------------------------
select ok(not pepsi.beanstalk_delete(pg_temp.id('S1'), pg_temp.id('f')),
          'issue 17: delete of a job another session holds is NOT_FOUND');
select ok(pepsi.beanstalk_delete(pg_temp.id('S3'), pg_temp.id('f')), 'issue 17: delete of the session''s own job');
select ok(pepsi.beanstalk_delete(pg_temp.id('S1'), pg_temp.id('h')), 'issue 17: delete of a delayed job');
select ok(pepsi.beanstalk_delete(pg_temp.id('S1'), pg_temp.id('l')), 'issue 17: delete of a buried job');
select is((select count(*) from pepsi.workqueue w where w.workqueue_id in (pg_temp.id('f'), pg_temp.id('h'),
                                                                              pg_temp.id('l'))), 0::bigint,
          'issue 17: deleted jobs are gone');
select ok(not pepsi.beanstalk_delete(pg_temp.id('S1'), pg_temp.id('f')), 'issue 17: delete of no job is NOT_FOUND');

-- references ---------------------------------------------------------------------
select is(pepsi.beanstalk_watch(pg_temp.id('F'), pg_temp.id('S1'), 't67w'), 2, 'T-18: watch returns the count');
select is(pepsi.beanstalk_watch(pg_temp.id('F'), pg_temp.id('S1'), 't67w'), 2, 'T-18: watching twice counts once');
select null as x from (select pepsi.beanstalk_use(pg_temp.id('F'), pg_temp.id('S2'), 't67w')) q \gset quiet_
select is((select s.current_using || ' ' || s.current_watching from pepsi.beanstalk_stats_tube('t67w') s), '1 1',
          'T-31: stats-tube counts the sessions using and watching the tube');
select ok(exists (select 1 from pepsi.tubes t where t.tube = 't67w'),
          'T-21: a referenced, empty tube exists (pepsi.tubes)');
select is(pepsi.tube_pause('t67w', 0), null, 'T-21: tube_pause knows a referenced tube');
select is((select t.current_jobs_ready from pepsi.tube_stats('t67w') t), 0::bigint,
          'T-21: tube_stats knows a referenced tube');
select is(pepsi.beanstalk_ignore(pg_temp.id('F'), pg_temp.id('S1'), 't67never'), 2,
          'T-18: ignore of a tube not watched changes nothing');
select is(pepsi.beanstalk_ignore(pg_temp.id('F'), pg_temp.id('S1'), 'default'), 1, 'T-18: ignore returns the count');
select is(pg_temp.outcome(format('select pepsi.beanstalk_ignore(%s, %s, %L)', pg_temp.id('F'), pg_temp.id('S1'), 't67w')),
          'PX062', 'issue 17: ignoring the only tube watched is NOT_IGNORED (PX062)');
select null as x from (select pepsi.beanstalk_use(pg_temp.id('F'), pg_temp.id('S2'), 'default')) q \gset quiet_
select is(pepsi.beanstalk_watch(pg_temp.id('F'), pg_temp.id('S1'), 'default'), 2, 'T-18: watch default again');
select is(pepsi.beanstalk_ignore(pg_temp.id('F'), pg_temp.id('S1'), 't67w'), 1, 'T-22: the last reference of t67w goes');
select ok(not exists (select 1 from pepsi.tubes t where t.tube = 't67w')
          and not exists (select 1 from pepsi.beanstalk_list_tubes() t where t = 't67w'),
          'T-35: an empty tube is gone after its last reference');
select is(pg_temp.outcome($$select pepsi.tube_pause('t67w', 10)$$), 'PX043',
          'T-33: pause-tube of a tube that does not exist is NOT_FOUND (PX043)');
select ok(not exists (select 1 from pepsi.tube_pause t where t.tube = 't67w'), 'T-33: and leaves nothing behind');
select is((select count(*) from pepsi.beanstalk_list_tubes() t where t = 'default'), 1::bigint,
          'T-37: list-tubes shows default once');
select is(pg_temp.outcome(format('select pepsi.beanstalk_use(%s, %s, %L)', pg_temp.id('F'), pg_temp.id('S1'), '-x')),
          'PX006', 'issue 17: use of an invalid name is PX006');

-- pause honoured by reserve ------------------------------------------------------
select null as x from (select pg_temp.put('p', 't67p', 0)) q \gset quiet_
select isnt(pepsi.tube_pause('t67p', 30), null, 'T-33: an existing tube is paused');
select is(pg_temp.res(pg_temp.id('S2'), '{t67p}'), 'NONE +30',
          'issue 17: reserve never takes a job of a paused tube; next_at is the end of the pause');
select is(pg_temp.res(pg_temp.id('S2'), '{t67p}', now() + interval '31 s'), 'RESERVED p',
          'issue 17: after the pause the job is reserved');

-- T-34, session close ------------------------------------------------------------
select null as x from (select pg_temp.put('q', 't67q', 0)) q \gset quiet_
select is(pg_temp.res(pg_temp.id('S3'), '{t67q}'), 'RESERVED q', 'T-34: S3 reserves a job of t67q');
select is(pepsi.beanstalk_watch(pg_temp.id('F'), pg_temp.id('S2'), 't67q'), 2, 'T-34: S2 watches t67q');
select is(pepsi.beanstalk_session_close(pg_temp.id('F'), pg_temp.id('S2')), 3,
          'issue 17: session close releases the session''s reserved jobs (z, e, p) and returns how many');
select ok(exists (select 1 from pepsi.beanstalk_list_tubes() t where t = 't67q'),
          'T-34: a tube with a reserved job stays after the other clients leave');
select is(pg_temp.st('p'), 'ready pri 0 r1 t0 l0 b0 k0',
          'issue 17: a job released by session close is ready, its releases not counted');
select is(pepsi.beanstalk_session_close(pg_temp.id('F'), pg_temp.id('S2')), 0,
          'issue 17: closing a session already gone is 0, no error');

-- FOR UPDATE SKIP LOCKED: a second session holds a reserved row ------------------
create extension if not exists dblink;
create function pg_temp.conn() returns text language sql as $$
    select format('dbname=%s port=%s host=%s application_name=%s', current_database(), current_setting('port'),
                  split_part(current_setting('unix_socket_directories'), ',', 1), 'beanstalk-67') $$;
select null as x from (select dblink_connect('b1', pg_temp.conn())) q \gset quiet_
select v1 as skip1, v2 as skip2 from dblink('b1',
    $$select pepsi.beanstalk_put('t67skip', 0, 0, 60, 'one'), pepsi.beanstalk_put('t67skip', 0, 0, 60, 'two')$$)
    as d(v1 bigint, v2 bigint) \gset
select null as x from (select dblink_exec('b1', 'begin')) q \gset quiet_
select is((select v from dblink('b1', $$select job_id from pepsi.beanstalk_reserve(-671, '{t67skip}')$$) as d(v bigint)),
          :skip1::bigint, 'issue 17: (second session) reserves the first job and holds its row');
-- in a savepoint, rolled back, so that this session holds no row the
-- second one must delete at the end; a reserve that waited for the held
-- row instead of skipping it fails after lock_timeout (55P03)
create function pg_temp.try_res(p_session bigint) returns text language plpgsql as $$
begin
    return (select coalesce(r.job_id::text, r.outcome) from pepsi.beanstalk_reserve(p_session, '{t67skip}') r);
exception when others then
    return sqlstate;
end
$$;
savepoint skip;
set local lock_timeout = '2s';
select pg_temp.try_res(-672) as got1 \gset
select pg_temp.try_res(-672) as got2 \gset
rollback to savepoint skip;
select is(:'got1'::text, :'skip2'::text,
          'issue 17: FOR UPDATE SKIP LOCKED: this session skips the row the other holds and takes the next');
select is(:'got2'::text, 'NONE'::text, 'issue 17: and never the same job: the held one is not reserved twice');
select null as x from (select dblink_exec('b1', 'rollback')) q \gset quiet_
select null as x from (select dblink_exec('b1', format('select pepsi.beanstalk_delete(0, %s), pepsi.beanstalk_delete(0, %s); '
                                'delete from pepsi.workqueue_history where workqueue_id in (%1$s, %2$s)',
                                :skip1, :skip2))) q \gset quiet_
select null as x from (select dblink_disconnect('b1')) q \gset quiet_

-- the sweeps of the rest of pepsi leave reserved jobs alone ----------------------
insert into j values ('m', pepsi.workqueue_inject('s67', 'x'::bytea));
select is((select count(*) from pepsi.workqueue_claim(array['s67'], array[1]) c), 1::bigint,
          'control: a message of a runner stage is claimed (running)');
select is(pepsi.workqueue_reset_running((select w.owner_slot from pepsi.workqueue w
                                          where w.workqueue_id = pg_temp.id('q'))), 1,
          'issue 17: workqueue_reset_running requeues the runner''s row only');
select is((select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('q')), 'running',
          'issue 17: workqueue_reset_running leaves a reserved beanstalk job running (its TTR governs it)');
select is((select count(*) from pepsi.workqueue_claim(array['s67'], array[1]) c), 1::bigint,
          'control: the runner''s message claimed again');
select ok((select r.ran from pepsi.reconcile(now() + interval '3 days') r), 'a reconciliation pass three days on');
select is((select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('m')) || ' '
          || (select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('q')), 'pending running',
          'issue 17: the reconciliation requeues the stuck runner row but not the reserved beanstalk job');

-- T-39, T-40: reaped frontends ---------------------------------------------------
insert into pepsi.beanstalk_frontend (name) values ('dead pid 2') returning frontend_id as dead \gset
insert into pepsi.beanstalk_session (frontend_id) values (:dead) returning session_id as dead_session \gset
insert into pepsi.beanstalk_ref values (:dead_session, 'watch', 't67dead');
select is(pg_temp.res(:dead_session, '{t67q}'), 'NONE +60', 'T-39: (setup) the dead frontend''s session');
select null as x from (select pg_temp.put('r', 't67dead', 0)) q \gset quiet_
select is(pg_temp.res(:dead_session, '{t67dead}'), 'RESERVED r', 'T-39: the dead frontend''s session holds a job');
select is(pepsi.beanstalk_reap(), 1, 'T-39: reap deletes the frontend whose advisory lock nobody holds');
select ok(not exists (select 1 from pepsi.beanstalk_session s where s.frontend_id = :dead)
          and not exists (select 1 from pepsi.beanstalk_ref r where r.session_id = :dead_session),
          'T-39: with its sessions and references');
select is((select w.status::text from pepsi.workqueue w where w.workqueue_id = pg_temp.id('r')), 'running',
          'T-39: its reserved job stays reserved until its TTR');
select ok(pepsi.beanstalk_frontend_alive(pg_temp.id('F')), 'T-39: the live frontend is not reaped');

insert into j values ('F2', pepsi.beanstalk_frontend_start('test:11301 pid 3'));
insert into j values ('S9', pepsi.beanstalk_session_open(pg_temp.id('F2')));
select null as x from (select pg_advisory_unlock(pepsi.beanstalk_lock_class(), pg_temp.id('F2')::int)) q \gset quiet_
select is(pg_temp.outcome(format('select pepsi.beanstalk_session_open(%s)', pg_temp.id('F2'))), 'PX060',
          'T-40: a frontend whose lock is free opens no session, even before the reap (PX060)');
select is(pepsi.beanstalk_reap(), 1, 'T-40: the frontend is reaped');
select is(pg_temp.outcome(format('select pepsi.beanstalk_session_open(%s)', pg_temp.id('F2'))), 'PX060',
          'T-40: a late session_open of the reaped generation is PX060');
select is(pg_temp.outcome(format('select pepsi.beanstalk_watch(%s, %s, %L)', pg_temp.id('F2'), pg_temp.id('S9'), 't67late')),
          'PX061', 'T-40: a late watch of its session is PX061');
select is(pg_temp.outcome(format('select pepsi.beanstalk_use(%s, %s, %L)', pg_temp.id('F'), pg_temp.id('S9'), 't67late')),
          'PX061', 'T-40: a session named with another frontend is PX061');
select ok(not exists (select 1 from pepsi.beanstalk_session s where s.session_id = pg_temp.id('S9'))
          and not exists (select 1 from pepsi.beanstalk_list_tubes() t where t = 't67late'),
          'T-40: nothing is created or resurrected');

-- grants -------------------------------------------------------------------------
select is((select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'pepsi' and p.proname like 'beanstalk%'
              and has_function_privilege('pepsi_runner', p.oid, 'execute')), 23,
          'issue 17: the runner may run the 22 functions of the contract and beanstalk_stage()');

select null as x from (select pg_advisory_unlock(pepsi.beanstalk_lock_class(), pg_temp.id('F')::int)) q \gset quiet_
select * from finish();
rollback;
