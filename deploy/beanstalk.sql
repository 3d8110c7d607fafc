-- Deploy pepsi:beanstalk to pg
-- requires: tubes
-- requires: workqueue_enqueue_options
-- requires: workqueue_results
-- requires: workqueue_dispatch_ops
-- requires: workqueue_claim
-- requires: reconcile
-- requires: anomaly_checks
-- requires: comments
--
-- The SQL side of the beanstalkd frontend (issue 17; the contract is
-- docs in README "beanstalkd frontend: the SQL side"). A beanstalkd job is
-- a pepsi.workqueue row at the pull stage 'beanstalk' (no runner claims
-- it) in the tube of the job; its state maps onto the row's status:
--   ready     pending
--   delayed   paused, timeout = when it becomes ready
--   reserved  running, claim_id = the reserving session, claimed_at,
--             timeout = the TTR deadline
--   buried    failed
--   deleted   the row is deleted (its body by workqueue_body_release)
-- beanstalkd's priority (0..4294967295, lower first) is the new nullable
-- column workqueue.bs_priority (added without a default: no rewrite of
-- the table, one scan for its CHECK); TTR, delay and the per-job counters
-- live in state.beanstalk ({"ttr", "delay", "reserves", "timeouts",
-- "releases", "buries", "kicks"}), read only by beanstalk_stats_job.
--
-- State changes: a running row's status changes only through
-- pepsi.workqueue_transition (issue 13): 'requeue' (TTR expiry, release
-- without delay, session close), 'pause' (release with a delay), 'fail'
-- (bury), 'finish' (delete of a reserved job, with its history row). What
-- the state machine has no notion of is a direct UPDATE in the beanstalk
-- function, without a status change (bs_priority, the counters, the TTR
-- deadline of touch, claim_id cleared), or of a row that is not running
-- (reserve: pending, paused or failed -> running, as the claims do; kick:
-- failed or paused -> pending, as workqueue_resume does; due delayed rows
-- of the watched tubes -> pending); scripts/lint-state-machine and
-- scripts/lint-once list these functions.
--
-- Frontends, sessions and references (T-18..T-20, T-39, T-40): a frontend
-- process registers once per start (beanstalk_frontend_start, its id the
-- generation) and holds a session-level advisory lock on its id for its
-- whole life; a frontend whose lock no backend holds is dead and
-- beanstalk_reap deletes it with its sessions and their references. A
-- session (one client connection) uses one tube and watches one or more;
-- its references keep a referenced, empty tube in existence (T-21) and it
-- goes once the last reference does (T-35): pepsi.tubes, tube_stats and
-- tube_pause are replaced to see them, nothing else of theirs changes.
--
-- Sessions and references are UNLOGGED: they describe live client
-- connections, which a crash of the server ends anyway (every frontend
-- loses its connection and its lock), so the truncation of unlogged
-- tables at crash recovery is exactly right, and their writes (one per
-- connect, use, watch) cost no WAL. Frontends stay logged, and session
-- ids come from the logged pepsi.claim_incarnation_seq: an id is never
-- handed out twice, not even after a crash, so a reserved job's claim_id
-- (which outlives its session until the TTR) never names a newer session,
-- and never equals a dispatcher's claim id (workqueue_unclaim).
--
-- The existing schema is kept from touching stage 'beanstalk' rows where
-- it would break the model: workqueue_reset_running (a runner's start-up
-- sweep) and reconcile_stuck's requeue of long-running rows skip them (the
-- TTR governs a reserved job), and the anomaly checks oldest_pending_message,
-- oldest_paused_message, longest_running_message and failed_messages leave
-- stage 'beanstalk' out (a stage no runner serves: its jobs wait for
-- clients, a delay may be a year, a TTR 136 years, a buried job is
-- kept on purpose). The paused sweep (workqueue_release_due) does release
-- due delayed jobs and now sends NOTIFY pepsi_beanstalk with their tube.
--
-- NOTIFY pepsi_beanstalk, payload the tube, in the same transaction when a
-- job of the tube becomes ready now: put and release without delay, kick,
-- TTR expiry, due delayed jobs released, session close, pause ended.
-- New error codes: PX060 (frontend not live: reaped, or its lock is free),
-- PX061 (session gone, or not the frontend's), PX062 (NOT_IGNORED).

begin;

alter table pepsi.workqueue
    add column bs_priority bigint
        constraint workqueue_bs_priority_check check (bs_priority between 0 and 4294967295);

comment on column pepsi.workqueue.bs_priority is
    'beanstalkd''s job priority (issue 17): 0..4294967295, lower is reserved first, then by workqueue_id. NULL for every row that is not at stage ''beanstalk''.';

-- pepsi.messages shows every column of workqueue but body_id (issue 15,
-- pgtap/57): bs_priority joins it at the end.
create or replace view pepsi.messages as
select w.workqueue_id, w.tube, w.stage, w.status, w.origin_user, w.origin_addr,
       w.envelope_sender, w.recipients, w.sender_key, w.header_from, w.subject,
       w.state, w.arrived_at, w.claimed_at, w.claim_id, w.timeout,
       w.webhook_event_id, w.partition, w.owner_slot,
       (select octet_length(b.body) from pepsi.workqueue_body b where b.body_id = w.body_id) as body_bytes,
       w.priority, w.dedupe_key,
       w.bs_priority
  from pepsi.workqueue w;

comment on column pepsi.messages.bs_priority is
    'beanstalkd''s job priority (issue 17): 0..4294967295, lower is reserved first; NULL for every message that is not a beanstalkd job (stage beanstalk).';

-- The index scans of the beanstalk functions, each partial to stage
-- 'beanstalk' (no entry for any other row): reserve and peek-ready read
-- (tube, bs_priority, workqueue_id) of ready jobs; delayed jobs by
-- (tube, timeout) for the due release, next_at and peek-delayed; buried
-- ones by (tube, workqueue_id) for kick and peek-buried; reserved ones by
-- (tube, timeout) for TTR expiry and next_at, and by claim_id for a
-- session's deadline and its close.
create index workqueue_bs_ready_idx on pepsi.workqueue (tube, bs_priority, workqueue_id)
    where stage = 'beanstalk' and status = 'pending';
create index workqueue_bs_delayed_idx on pepsi.workqueue (tube, timeout, workqueue_id)
    where stage = 'beanstalk' and status = 'paused';
create index workqueue_bs_buried_idx on pepsi.workqueue (tube, workqueue_id)
    where stage = 'beanstalk' and status = 'failed';
create index workqueue_bs_ttr_idx on pepsi.workqueue (tube, timeout)
    where stage = 'beanstalk' and status = 'running';
create index workqueue_bs_reserved_idx on pepsi.workqueue (claim_id)
    where stage = 'beanstalk' and status = 'running';

create table pepsi.beanstalk_frontend (
    frontend_id bigint generated always as identity (maxvalue 2147483647)
                constraint beanstalk_frontend_pkey primary key,
    name        text not null
                constraint beanstalk_frontend_name_check check (octet_length(name) between 1 and 200),
    started_at  timestamptz not null default now(),
    backend_pid int not null default pg_backend_pid()
);

comment on table pepsi.beanstalk_frontend is
    'A running beanstalkd frontend process (issue 17), one row per start (its id is the generation). It holds the session-level advisory lock (pepsi.beanstalk_lock_class(), frontend_id) while it lives; pepsi.beanstalk_reap deletes a row whose lock no backend holds, with its sessions and references. Logged: an id is never handed out twice. Ids stay within int4 (the lock''s second key).';

create unlogged table pepsi.beanstalk_session (
    session_id  bigint not null default nextval('pepsi.claim_incarnation_seq')
                constraint beanstalk_session_pkey primary key,
    frontend_id bigint not null
                constraint beanstalk_session_frontend_fkey references pepsi.beanstalk_frontend on delete cascade,
    opened_at   timestamptz not null default now()
);

create index beanstalk_session_frontend_idx on pepsi.beanstalk_session (frontend_id);

comment on table pepsi.beanstalk_session is
    'A client connection of a beanstalkd frontend (issue 17). Its id is the claim_id of the jobs it reserves, drawn from the logged pepsi.claim_incarnation_seq (never reused, never a dispatcher''s claim id). UNLOGGED: it dies with its frontend''s connection anyway, and a crash truncates it as it ends every connection.';

create unlogged table pepsi.beanstalk_ref (
    session_id  bigint not null
                constraint beanstalk_ref_session_fkey references pepsi.beanstalk_session on delete cascade,
    kind        text not null
                constraint beanstalk_ref_kind_check check (kind in ('use', 'watch')),
    tube        pepsi.tube_name not null,
    constraint beanstalk_ref_pkey primary key (session_id, kind, tube)
);

-- one used tube per session; references of a tube, for its existence and
-- the counts of stats-tube
create unique index beanstalk_ref_use_key on pepsi.beanstalk_ref (session_id) where kind = 'use';
create index beanstalk_ref_tube_idx on pepsi.beanstalk_ref (tube, kind);

comment on table pepsi.beanstalk_ref is
    'A beanstalkd session''s references (issue 17, T-18): the tube it uses (one) and those it watches (one or more). A referenced tube exists (T-21) though it holds no job; deleted with the session. UNLOGGED, as beanstalk_session.';
comment on column pepsi.beanstalk_ref.kind is 'use (the tube put writes to) or watch (a tube reserve reads).';

create function pepsi.beanstalk_stage()
returns text
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The pull stage of beanstalkd jobs (issue 17): no runner claims it (the
-- runner refuses a [stage-beanstalk] section).
    select 'beanstalk'::text
$$;

create function pepsi.beanstalk_lock_class()
returns int
language sql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
-- The first key of a frontend's advisory lock, pg_advisory_lock(class,
-- frontend_id): 1885696098 ("pepb" as an int4), a class of its own, since
-- frontend ids would collide with pepsi.lock_key's owner-slot keys.
    select 1885696098
$$;

create function pepsi.beanstalk_frontend_alive(p_frontend bigint)
returns boolean
language sql stable
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- True when p_frontend is registered and some backend of this database
-- holds its advisory lock (pg_locks: classid, objid, objsubid 2).
    select exists (select 1 from pepsi.beanstalk_frontend f where f.frontend_id = p_frontend)
       and exists (select 1 from pg_catalog.pg_locks l
                    where l.locktype = 'advisory' and l.granted and l.objsubid = 2
                      and l.database = (select d.oid from pg_catalog.pg_database d
                                         where d.datname = pg_catalog.current_database())
                      and l.classid = pepsi.beanstalk_lock_class()::oid
                      and l.objid = p_frontend::oid)
$$;

create function pepsi.beanstalk_count(p_state jsonb, p_key text, p_set jsonb default null)
returns jsonb
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
-- p_state with state.beanstalk.<p_key> counted one up (p_key NULL: none)
-- and the keys of p_set merged into state.beanstalk.
    select p_state || jsonb_build_object('beanstalk',
               coalesce(case when jsonb_typeof(p_state->'beanstalk') = 'object' then p_state->'beanstalk' end, '{}')
               || case when p_key is null then '{}'::jsonb
                       else jsonb_build_object(p_key, coalesce((p_state->'beanstalk'->>p_key)::bigint, 0) + 1) end
               || coalesce(p_set, '{}'))
$$;

create function pepsi.beanstalk_reap()
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Deletes every frontend whose advisory lock no backend holds (it died,
-- or lost its connection), with its sessions and their references (T-39);
-- their reserved jobs stay reserved until their TTR. Returns how many
-- frontends. Frontends call it every few seconds.
-- Tables: beanstalk_frontend (delete), beanstalk_session, beanstalk_ref
-- (delete by cascade).
declare
    v_n int;
begin
    delete from pepsi.beanstalk_frontend f where not pepsi.beanstalk_frontend_alive(f.frontend_id);
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

create function pepsi.beanstalk_frontend_start(p_name text)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Registers a frontend process (issue 17): reaps dead frontends, inserts
-- this one and takes the session-level advisory lock
-- (beanstalk_lock_class(), id) on the caller's connection, held until
-- that connection ends (the frontend's life). Returns the id (the
-- generation). p_name: e.g. 'host:11300 pid 1234', 1 to 200 bytes, else
-- PX003. Tables: beanstalk_frontend (insert, delete).
declare
    v_id bigint;
begin
    if p_name is null or octet_length(p_name) not between 1 and 200 then
        raise exception 'frontend name must have 1 to 200 bytes' using errcode = 'PX003';
    end if;
    perform pepsi.beanstalk_reap();
    insert into pepsi.beanstalk_frontend (name) values (p_name) returning frontend_id into v_id;
    perform pg_advisory_lock(pepsi.beanstalk_lock_class(), v_id::int);
    return v_id;
end
$$;

create function pepsi.beanstalk_session_open(p_frontend bigint)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A new client session of frontend p_frontend, using and watching
-- 'default' (beanstalkd's prot_init, T-24). Returns its id. Raises PX060
-- when p_frontend is not a live registered frontend (reaped, or its lock
-- is free: a late call of an old generation, T-40), creating nothing. The
-- frontend row is key-share locked, so a concurrent reap waits for this
-- transaction and then deletes the session with it.
-- Tables: beanstalk_session, beanstalk_ref (insert).
declare
    v_id bigint;
begin
    perform 1 from pepsi.beanstalk_frontend f where f.frontend_id = p_frontend for key share;
    if not found or not pepsi.beanstalk_frontend_alive(p_frontend) then
        raise exception 'beanstalkd frontend % is not live', coalesce(p_frontend::text, '<null>')
            using errcode = 'PX060', hint = 'Its generation was reaped: the frontend must not serve.';
    end if;
    insert into pepsi.beanstalk_session (frontend_id) values (p_frontend) returning session_id into v_id;
    insert into pepsi.beanstalk_ref (session_id, kind, tube) values (v_id, 'use', 'default'), (v_id, 'watch', 'default');
    return v_id;
end
$$;

create function pepsi.beanstalk_session_lock(p_frontend bigint, p_session bigint)
returns void
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Locks session p_session of frontend p_frontend for a change of its
-- references, or raises PX061: no such session, not that frontend's, or
-- the frontend is not live (T-40: a late attach resurrects nothing).
begin
    perform 1 from pepsi.beanstalk_session s
     where s.session_id = p_session and s.frontend_id = p_frontend for update;
    if not found or not pepsi.beanstalk_frontend_alive(p_frontend) then
        raise exception 'beanstalkd session % of frontend % is gone',
            coalesce(p_session::text, '<null>'), coalesce(p_frontend::text, '<null>')
            using errcode = 'PX061';
    end if;
end
$$;

create function pepsi.beanstalk_requeue(p_ids bigint[], p_counter text, p_now timestamptz)
returns int
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Reserved jobs p_ids (running at stage 'beanstalk', locked by the caller)
-- back to ready through the state machine ('requeue'), then claim_id
-- cleared and state.beanstalk.<p_counter> counted (NULL: none) by a
-- direct UPDATE (no status change); NOTIFY pepsi_beanstalk per tube.
-- Returns how many. Tables: workqueue (update).
declare
    v_ok bigint[];
    v_tube text;
begin
    v_ok := array(select t.workqueue_id
                    from pepsi.workqueue_transition(array(
                             select pepsi.transition_of(u, 'beanstalk', 'requeue') from unnest(p_ids) u),
                             1000, p_now) t
                   where t.outcome = 'ok');
    if cardinality(v_ok) = 0 then
        return 0;
    end if;
    for v_tube in
        update pepsi.workqueue w set claim_id = null, state = pepsi.beanstalk_count(w.state, p_counter)
         where w.workqueue_id = any(v_ok)
        returning w.tube
    loop
        perform pg_notify('pepsi_beanstalk', v_tube);
    end loop;
    return cardinality(v_ok);
end
$$;

create function pepsi.beanstalk_session_close(p_frontend bigint, p_session bigint)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- A client disconnected: the session's reserved jobs go back to ready
-- (pri kept, releases not counted, as beanstalkd does), its references
-- and its row are deleted. Returns the number of jobs released; 0 when the
-- session is already gone (no error). Tables: workqueue (update),
-- beanstalk_session, beanstalk_ref (delete).
declare
    v_n int;
begin
    perform 1 from pepsi.beanstalk_session s
     where s.session_id = p_session and s.frontend_id = p_frontend for update;
    if not found then
        return 0;
    end if;
    v_n := pepsi.beanstalk_requeue(array(
               select w.workqueue_id from pepsi.workqueue w
                where w.stage = 'beanstalk' and w.status = 'running' and w.claim_id = p_session
                order by w.workqueue_id for update), null, now());
    delete from pepsi.beanstalk_session s where s.session_id = p_session;
    return v_n;
end
$$;

create function pepsi.beanstalk_use(p_frontend bigint, p_session bigint, p_tube text)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's use: the session's used tube becomes p_tube (its previous
-- one loses that reference). Raises PX006 (invalid name), PX061 (session
-- or frontend gone, or not a pair: nothing is created, T-40). One
-- transaction: a failure leaves the references as they were (T-20).
-- Tables: beanstalk_ref (insert, update).
begin
    perform pepsi.tube_check(p_tube);
    perform pepsi.beanstalk_session_lock(p_frontend, p_session);
    insert into pepsi.beanstalk_ref as r (session_id, kind, tube) values (p_session, 'use', p_tube)
        on conflict (session_id) where kind = 'use' do update set tube = excluded.tube;
end
$$;

create function pepsi.beanstalk_watch(p_frontend bigint, p_session bigint, p_tube text)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's watch: p_tube joins the session's watch list (once).
-- Returns the number of tubes watched afterwards. Raises PX006, PX061 as
-- beanstalk_use. Tables: beanstalk_ref (insert, read).
begin
    perform pepsi.tube_check(p_tube);
    perform pepsi.beanstalk_session_lock(p_frontend, p_session);
    insert into pepsi.beanstalk_ref (session_id, kind, tube) values (p_session, 'watch', p_tube)
        on conflict do nothing;
    return (select count(*) from pepsi.beanstalk_ref r where r.session_id = p_session and r.kind = 'watch');
end
$$;

create function pepsi.beanstalk_ignore(p_frontend bigint, p_session bigint, p_tube text)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's ignore: p_tube leaves the session's watch list. Returns the
-- number watched afterwards; a tube not watched changes nothing. Raises
-- PX062 (NOT_IGNORED) when p_tube is the only tube watched, PX006, PX061
-- as beanstalk_use. Tables: beanstalk_ref (delete, read).
declare
    v_n int;
begin
    perform pepsi.tube_check(p_tube);
    perform pepsi.beanstalk_session_lock(p_frontend, p_session);
    select count(*) into v_n from pepsi.beanstalk_ref r where r.session_id = p_session and r.kind = 'watch';
    if exists (select 1 from pepsi.beanstalk_ref r
                where r.session_id = p_session and r.kind = 'watch' and r.tube = p_tube) then
        if v_n < 2 then
            raise exception 'tube "%" is the only tube watched', p_tube using errcode = 'PX062';
        end if;
        delete from pepsi.beanstalk_ref r where r.session_id = p_session and r.kind = 'watch' and r.tube = p_tube;
        v_n := v_n - 1;
    end if;
    return v_n;
end
$$;

create function pepsi.beanstalk_put(p_tube text, p_pri bigint, p_delay bigint, p_ttr bigint, p_body bytea)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's put: a new job in p_tube, ready (pending) or, with a
-- delay, delayed (paused until now() + p_delay), written by
-- pepsi.workqueue_insert like every other inject (partition and owner slot
-- of the tube, body in workqueue_body), then its bs_priority set. Returns
-- the job id. NOTIFY pepsi_beanstalk when ready now. Raises PX006 (invalid
-- tube), PX003 (pri outside 0..4294967295, delay outside
-- 0..input_limit('pause_seconds'), ttr outside 0..4294967295, body over
-- input_limit('body')). TTR 0 is stored as 1, as beanstalkd does.
-- Tables: workqueue, workqueue_body (insert; workqueue update).
declare
    v_id bigint;
    v_ttr bigint := greatest(p_ttr, 1);
begin
    perform pepsi.tube_check(p_tube);
    if p_pri is null or p_pri not between 0 and 4294967295 then
        raise exception 'priority must be 0 to 4294967295' using errcode = 'PX003';
    end if;
    if p_delay is null or p_delay not between 0 and pepsi.input_limit('pause_seconds') then
        raise exception 'delay must be 0 to % seconds', pepsi.input_limit('pause_seconds') using errcode = 'PX003';
    end if;
    if p_ttr is null or p_ttr not between 0 and 4294967295 then
        raise exception 'ttr must be 0 to 4294967295' using errcode = 'PX003';
    end if;
    if octet_length(p_body) > pepsi.input_limit('body') then
        perform pepsi.size_error(null, 'body', octet_length(p_body), 'job body');
    end if;
    select c into v_id
      from pepsi.workqueue_insert(
               array[row('beanstalk', p_tube, coalesce(p_body, ''::bytea), null, null, '{}', null, null,
                         jsonb_build_object('beanstalk', jsonb_build_object(
                             'ttr', v_ttr, 'delay', p_delay, 'reserves', 0, 'timeouts', 0,
                             'releases', 0, 'buries', 0, 'kicks', 0)),
                         null, null, now(), null)::pepsi.workqueue_item],
               null, null,
               case when p_delay > 0 then array[now() + make_interval(secs => p_delay)] end,
               null) c;
    update pepsi.workqueue w set bs_priority = p_pri where w.workqueue_id = v_id;
    if p_delay = 0 then
        perform pg_notify('pepsi_beanstalk', p_tube);
    end if;
    return v_id;
end
$$;

create function pepsi.beanstalk_take(p_session bigint, p_id bigint, p_now timestamptz)
returns bytea
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Reserves job p_id (locked by the caller, ready, delayed or buried) for
-- session p_session: running, claim_id, claimed_at = p_now, timeout =
-- p_now + ttr, reserves + 1; the failure keys a bury wrote are removed.
-- A direct UPDATE of a row that is not running (as the claims do).
-- Returns its body. Tables: workqueue (update), workqueue_body (read).
declare
    v_body_id bigint;
begin
    update pepsi.workqueue w
       set status = 'running', claim_id = p_session, claimed_at = p_now,
           timeout = p_now + make_interval(secs => greatest(coalesce((w.state->'beanstalk'->>'ttr')::bigint, 1), 1)),
           state = pepsi.beanstalk_count(w.state - 'last_error' - 'failed_stage' - 'failure_class', 'reserves')
     where w.workqueue_id = p_id
    returning w.body_id into v_body_id;
    return coalesce((select b.body from pepsi.workqueue_body b where b.body_id = v_body_id), ''::bytea);
end
$$;

create function pepsi.beanstalk_reserve(p_session bigint, p_tubes text[], p_now timestamptz default now())
returns table (outcome text, job_id bigint, body bytea, next_at timestamptz)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's reserve for session p_session watching p_tubes; one row:
--   first, reserved jobs of p_tubes (and of the session) past their TTR
--   deadline go back to ready (timeouts + 1), and due delayed jobs of
--   p_tubes become ready (NOTIFY pepsi_beanstalk for each tube);
--   DEADLINE_SOON  the session holds a job whose deadline is within 1 s
--                  of p_now (job_id: that job; nothing taken)
--   RESERVED       the ready job of lowest bs_priority, then id, in the
--                  tubes of p_tubes that no pause holds at p_now, taken
--                  FOR UPDATE SKIP LOCKED (two frontends never take one
--                  job), with its body
--   NONE           nothing ready; next_at: the earliest moment something
--                  of p_tubes may become ready (a delayed job's time, a
--                  reserved job's deadline, a pause's end), NULL if none
-- Raises PX006 (an invalid tube), PX003 (p_tubes NULL, p_now NULL).
-- Tables: workqueue (update), workqueue_body, tube_pause (read).
#variable_conflict use_column
declare
    v_ids bigint[];
    v_tube text;
    v_open text[];
    v_id bigint;
    v_cand bigint;
begin
    if p_tubes is null or p_now is null then
        raise exception 'p_tubes and p_now must not be NULL' using errcode = 'PX003';
    end if;
    perform pepsi.tube_check(t) from unnest(p_tubes) t;
    -- TTR expiry: the watched tubes' rows and the session's own
    v_ids := array(select w.workqueue_id from pepsi.workqueue w
                    where w.stage = 'beanstalk' and w.status = 'running'
                      and (w.tube = any(p_tubes) or w.claim_id = p_session) and w.timeout <= p_now
                    order by w.workqueue_id for update skip locked);
    if cardinality(v_ids) > 0 then
        perform pepsi.beanstalk_requeue(v_ids, 'timeouts', p_now);
    end if;
    -- due delayed jobs of the watched tubes become ready
    for v_tube in
        with due as (
            select w.workqueue_id from pepsi.workqueue w
             where w.stage = 'beanstalk' and w.status = 'paused' and w.tube = any(p_tubes)
               and w.timeout <= p_now
               for update skip locked
        ), u as (
            update pepsi.workqueue w set status = 'pending', timeout = null
              from due d where w.workqueue_id = d.workqueue_id
            returning w.tube
        )
        select distinct u.tube from u
    loop
        perform pg_notify('pepsi_beanstalk', v_tube);
    end loop;
    select w.workqueue_id into v_id from pepsi.workqueue w
     where w.stage = 'beanstalk' and w.status = 'running' and w.claim_id = p_session
       and w.timeout <= p_now + interval '1 second'
     order by w.timeout limit 1;
    if found then
        return query select 'DEADLINE_SOON'::text, v_id, null::bytea, null::timestamptz;
        return;
    end if;
    v_open := array(select distinct t from unnest(p_tubes) t
                     where not exists (select 1 from pepsi.tube_pause tp
                                        where tp.tube = t and tp.paused_until > p_now));
    -- the heads of each open tube in (bs_priority, id) order, unlocked,
    -- then each tried FOR UPDATE SKIP LOCKED; a row another session holds
    -- is passed over
    v_id := null;
    for v_cand in
        select h.workqueue_id
          from unnest(v_open) t
         cross join lateral (select w.workqueue_id, w.bs_priority from pepsi.workqueue w
                              where w.stage = 'beanstalk' and w.status = 'pending' and w.tube = t
                              order by w.bs_priority, w.workqueue_id limit 16) h
         order by h.bs_priority, h.workqueue_id limit 16
    loop
        select w.workqueue_id into v_id from pepsi.workqueue w
         where w.workqueue_id = v_cand and w.stage = 'beanstalk' and w.status = 'pending'
           for update skip locked;
        exit when v_id is not null;
    end loop;
    if v_id is null then
        -- more than 16 heads locked by others: the whole ordered range
        select w.workqueue_id into v_id from pepsi.workqueue w
         where w.stage = 'beanstalk' and w.status = 'pending' and w.tube = any(v_open)
         order by w.bs_priority, w.workqueue_id limit 1
           for update skip locked;
    end if;
    if v_id is not null then
        return query select 'RESERVED'::text, v_id, pepsi.beanstalk_take(p_session, v_id, p_now), null::timestamptz;
        return;
    end if;
    return query
    select 'NONE'::text, null::bigint, null::bytea,
           least((select min(w.timeout) from pepsi.workqueue w
                   where w.stage = 'beanstalk' and w.status = 'paused' and w.tube = any(p_tubes)),
                 (select min(w.timeout) from pepsi.workqueue w
                   where w.stage = 'beanstalk' and w.status = 'running' and w.tube = any(p_tubes)),
                 (select min(tp.paused_until) from pepsi.tube_pause tp
                   where tp.tube = any(p_tubes) and tp.paused_until > p_now));
end
$$;

create function pepsi.beanstalk_reserve_job(p_session bigint, p_id bigint, p_now timestamptz default now())
returns table (outcome text, job_id bigint, body bytea)
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's reserve-job: job p_id, ready, delayed or buried, reserved
-- by session p_session as beanstalk_reserve takes a job: RESERVED with its
-- body, or NOT_FOUND (no such beanstalk job, reserved by anyone, or locked
-- by another transaction right now). Tables: workqueue (update),
-- workqueue_body (read).
#variable_conflict use_column
declare
    v_id bigint;
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select w.workqueue_id into v_id from pepsi.workqueue w
     where w.workqueue_id = p_id and w.stage = 'beanstalk' and w.status in ('pending', 'paused', 'failed')
       for update skip locked;
    if v_id is null then
        return query select 'NOT_FOUND'::text, null::bigint, null::bytea;
        return;
    end if;
    return query select 'RESERVED'::text, v_id, pepsi.beanstalk_take(p_session, v_id, p_now);
end
$$;

create function pepsi.beanstalk_delete(p_session bigint, p_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's delete: true when job p_id was deleted (ready, delayed,
-- buried, or reserved by p_session), false (NOT_FOUND) when there is no
-- such job or another session holds it. A reserved job is finished
-- through the state machine ('finish': its history row 'finished'); any
-- other is deleted here with a history row 'deleted'. Its body goes by
-- workqueue_body_release. Tables: workqueue (delete), workqueue_history
-- (insert).
declare
    v record;
begin
    select w.status, w.claim_id into v from pepsi.workqueue w
     where w.workqueue_id = p_id and w.stage = 'beanstalk' for update;
    if not found then
        return false;
    end if;
    if v.status = 'running' then
        if v.claim_id is distinct from p_session then
            return false;
        end if;
        return (select t.outcome = 'ok'
                  from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, 'beanstalk', 'finish',
                                                                            p_claim_id => p_session)]) t);
    end if;
    with d as (
        delete from pepsi.workqueue w where w.workqueue_id = p_id returning w.*
    )
    insert into pepsi.workqueue_history (workqueue_id, tube, stage, outcome, sender_key, origin_user,
                                         arrived_at, ended_at, hops, strikes, failure_class, last_error)
    select d.workqueue_id, d.tube, d.stage, 'deleted', d.sender_key, d.origin_user, d.arrived_at, now(),
           null, null, d.state->>'failure_class', null
      from d
     where pepsi.workqueue_history_on();
    return true;
end
$$;

create function pepsi.beanstalk_release(p_session bigint, p_id bigint, p_pri bigint, p_delay bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's release: job p_id reserved by p_session goes back to ready
-- ('requeue'), or delayed until now() + p_delay ('pause') when p_delay >
-- 0, with priority p_pri and releases + 1. False (NOT_FOUND) when it is
-- not reserved by p_session. NOTIFY pepsi_beanstalk when ready now.
-- Raises PX003 (pri outside 0..4294967295, delay outside
-- 0..input_limit('pause_seconds')). Tables: workqueue (update).
declare
    v_ok boolean;
begin
    if p_pri is null or p_pri not between 0 and 4294967295 then
        raise exception 'priority must be 0 to 4294967295' using errcode = 'PX003';
    end if;
    if p_delay is null or p_delay not between 0 and pepsi.input_limit('pause_seconds') then
        raise exception 'delay must be 0 to % seconds', pepsi.input_limit('pause_seconds') using errcode = 'PX003';
    end if;
    select t.outcome = 'ok' into v_ok
      from pepsi.workqueue_transition(array[
               case when p_delay > 0
                    then pepsi.transition_of(p_id, 'beanstalk', 'pause', p_until => now() + make_interval(secs => p_delay),
                                             p_claim_id => p_session)
                    else pepsi.transition_of(p_id, 'beanstalk', 'requeue', p_claim_id => p_session) end]) t;
    if not v_ok then
        return false;
    end if;
    update pepsi.workqueue w
       set bs_priority = p_pri, claim_id = null,
           state = pepsi.beanstalk_count(w.state, 'releases', jsonb_build_object('delay', p_delay))
     where w.workqueue_id = p_id;
    if p_delay = 0 then
        perform pg_notify('pepsi_beanstalk', (select w.tube from pepsi.workqueue w where w.workqueue_id = p_id));
    end if;
    return true;
end
$$;

create function pepsi.beanstalk_bury(p_session bigint, p_id bigint, p_pri bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's bury: job p_id reserved by p_session becomes buried
-- ('fail': failed, last_error 'buried'), priority p_pri, buries + 1. False
-- (NOT_FOUND) when it is not reserved by p_session. Raises PX003 (pri
-- outside 0..4294967295). Tables: workqueue (update).
declare
    v_ok boolean;
begin
    if p_pri is null or p_pri not between 0 and 4294967295 then
        raise exception 'priority must be 0 to 4294967295' using errcode = 'PX003';
    end if;
    select t.outcome = 'ok' into v_ok
      from pepsi.workqueue_transition(array[pepsi.transition_of(p_id, 'beanstalk', 'fail', p_reason => 'buried',
                                                                p_claim_id => p_session)]) t;
    if not v_ok then
        return false;
    end if;
    update pepsi.workqueue w
       set bs_priority = p_pri, claim_id = null, state = pepsi.beanstalk_count(w.state, 'buries')
     where w.workqueue_id = p_id;
    return true;
end
$$;

create function pepsi.beanstalk_touch(p_session bigint, p_id bigint, p_now timestamptz default now())
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's touch: job p_id reserved by p_session gets a new deadline,
-- p_now + ttr (a direct UPDATE of timeout; no status change). False
-- (NOT_FOUND) when it is not reserved by p_session. Raises PX003 (p_now
-- NULL). Tables: workqueue (update).
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    update pepsi.workqueue w
       set timeout = p_now + make_interval(secs => greatest(coalesce((w.state->'beanstalk'->>'ttr')::bigint, 1), 1))
     where w.workqueue_id = p_id and w.stage = 'beanstalk' and w.status = 'running' and w.claim_id = p_session;
    return found;
end
$$;

create function pepsi.beanstalk_peek(p_id bigint)
returns table (job_id bigint, body bytea)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's peek: job p_id in any state and its body; no row:
-- NOT_FOUND. Tables: workqueue, workqueue_body (read).
    select w.workqueue_id, coalesce(b.body, ''::bytea)
      from pepsi.workqueue w left join pepsi.workqueue_body b on b.body_id = w.body_id
     where w.workqueue_id = p_id and w.stage = 'beanstalk'
$$;

create function pepsi.beanstalk_peek_state(p_tube text, p_state text)
returns table (job_id bigint, body bytea)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's peek-ready, peek-delayed, peek-buried in tube p_tube:
-- p_state 'ready' (the job the next reserve would take: lowest
-- bs_priority, then id), 'delayed' (soonest ready time, then id), 'buried'
-- (lowest id); no row: NOT_FOUND. Raises PX006 (invalid tube), PX003
-- (another p_state). Tables: workqueue, workqueue_body (read).
#variable_conflict use_column
declare
    v_id bigint;
begin
    perform pepsi.tube_check(p_tube);
    if p_state = 'ready' then
        select w.workqueue_id into v_id from pepsi.workqueue w
         where w.stage = 'beanstalk' and w.status = 'pending' and w.tube = p_tube
         order by w.bs_priority, w.workqueue_id limit 1;
    elsif p_state = 'delayed' then
        select w.workqueue_id into v_id from pepsi.workqueue w
         where w.stage = 'beanstalk' and w.status = 'paused' and w.tube = p_tube
         order by w.timeout, w.workqueue_id limit 1;
    elsif p_state = 'buried' then
        select w.workqueue_id into v_id from pepsi.workqueue w
         where w.stage = 'beanstalk' and w.status = 'failed' and w.tube = p_tube
         order by w.workqueue_id limit 1;
    else
        raise exception 'p_state must be ready, delayed or buried' using errcode = 'PX003';
    end if;
    if v_id is not null then
        return query select p.job_id, p.body from pepsi.beanstalk_peek(v_id) p;
    end if;
end
$$;

create function pepsi.beanstalk_kick(p_tube text, p_bound bigint)
returns bigint
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's kick: up to p_bound buried jobs of p_tube (lowest id
-- first) become ready, kicks + 1 and the bury's failure keys removed; when
-- the tube has no buried job, up to p_bound delayed jobs (soonest first)
-- instead. A direct UPDATE of rows that are not running (as
-- workqueue_resume). Returns how many; NOTIFY pepsi_beanstalk when any.
-- Raises PX006 (invalid tube), PX003 (p_bound NULL or negative).
-- Tables: workqueue (update).
declare
    v_n bigint;
begin
    perform pepsi.tube_check(p_tube);
    if p_bound is null or p_bound < 0 then
        raise exception 'kick bound must be 0 or more' using errcode = 'PX003';
    end if;
    with k as (
        select w.workqueue_id from pepsi.workqueue w
         where w.stage = 'beanstalk' and w.status = 'failed' and w.tube = p_tube
         order by w.workqueue_id limit p_bound for update skip locked
    )
    update pepsi.workqueue w
       set status = 'pending', timeout = null,
           state = pepsi.beanstalk_count(w.state - 'last_error' - 'failed_stage' - 'failure_class', 'kicks')
      from k where w.workqueue_id = k.workqueue_id;
    get diagnostics v_n = row_count;
    if v_n = 0 and not exists (select 1 from pepsi.workqueue w
                                where w.stage = 'beanstalk' and w.status = 'failed' and w.tube = p_tube) then
        with k as (
            select w.workqueue_id from pepsi.workqueue w
             where w.stage = 'beanstalk' and w.status = 'paused' and w.tube = p_tube
             order by w.timeout, w.workqueue_id limit p_bound for update skip locked
        )
        update pepsi.workqueue w
           set status = 'pending', timeout = null, state = pepsi.beanstalk_count(w.state, 'kicks')
          from k where w.workqueue_id = k.workqueue_id;
        get diagnostics v_n = row_count;
    end if;
    if v_n > 0 then
        perform pg_notify('pepsi_beanstalk', p_tube);
    end if;
    return v_n;
end
$$;

create function pepsi.beanstalk_kick_job(p_id bigint)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's kick-job: job p_id, buried or delayed, becomes ready
-- (kicks + 1). False (NOT_FOUND): no such job or not in those states.
-- NOTIFY pepsi_beanstalk. Tables: workqueue (update).
declare
    v_tube text;
begin
    update pepsi.workqueue w
       set status = 'pending', timeout = null,
           state = pepsi.beanstalk_count(w.state - 'last_error' - 'failed_stage' - 'failure_class', 'kicks')
     where w.workqueue_id = p_id and w.stage = 'beanstalk' and w.status in ('failed', 'paused')
    returning w.tube into v_tube;
    if v_tube is null then
        return false;
    end if;
    perform pg_notify('pepsi_beanstalk', v_tube);
    return true;
end
$$;

create function pepsi.beanstalk_stats_job(p_id bigint, p_now timestamptz default now())
returns table (id bigint, tube text, state text, pri bigint, age bigint, delay bigint,
               ttr bigint, time_left bigint, file int, reserves bigint, timeouts bigint,
               releases bigint, buries bigint, kicks bigint)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats-job for job p_id: state ready | delayed | reserved |
-- buried; age (since put) and time_left (until a delayed job is ready or
-- a reserved job's deadline; 0 otherwise) in whole seconds; file 0 (no
-- binlog); the counters of state.beanstalk. No row: NOT_FOUND. Raises
-- PX003 (p_now NULL). Tables: workqueue (read).
#variable_conflict use_column
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    return query
    select w.workqueue_id, w.tube,
           case w.status when 'pending' then 'ready' when 'paused' then 'delayed'
                         when 'running' then 'reserved' else 'buried' end,
           w.bs_priority,
           greatest(floor(extract(epoch from p_now - w.arrived_at)), 0)::bigint,
           coalesce((w.state->'beanstalk'->>'delay')::bigint, 0),
           coalesce((w.state->'beanstalk'->>'ttr')::bigint, 1),
           case when w.status in ('paused', 'running')
                then greatest(floor(extract(epoch from w.timeout - p_now)), 0)::bigint else 0 end,
           0,
           coalesce((w.state->'beanstalk'->>'reserves')::bigint, 0),
           coalesce((w.state->'beanstalk'->>'timeouts')::bigint, 0),
           coalesce((w.state->'beanstalk'->>'releases')::bigint, 0),
           coalesce((w.state->'beanstalk'->>'buries')::bigint, 0),
           coalesce((w.state->'beanstalk'->>'kicks')::bigint, 0)
      from pepsi.workqueue w
     where w.workqueue_id = p_id and w.stage = 'beanstalk';
end
$$;

create function pepsi.beanstalk_stats_tube(p_tube text, p_now timestamptz default now())
returns table (name text, current_jobs_urgent bigint, current_jobs_ready bigint,
               current_jobs_reserved bigint, current_jobs_delayed bigint,
               current_jobs_buried bigint, total_jobs bigint, current_using bigint,
               current_watching bigint, current_waiting bigint, cmd_delete bigint,
               cmd_pause_tube bigint, pause bigint, pause_time_left bigint)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats-tube over the tube's beanstalk jobs: urgent = ready
-- with pri < 1024; total_jobs = its jobs now (no counter is kept);
-- current_using / current_watching = live sessions' references;
-- current_waiting, cmd_delete, cmd_pause_tube 0 (no counters are kept);
-- pause and pause_time_left in seconds, 0 when not paused at p_now.
-- Raises PX006 (invalid name), PX043 (NOT_FOUND) when the tube does not
-- exist: no row of any stage, no reference, no pause in force, not
-- default. Nothing is created (T-32). Tables: workqueue, beanstalk_ref,
-- tube_pause (read).
#variable_conflict use_column
declare
    v_pause record;
begin
    perform pepsi.tube_check(p_tube);
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select tp.paused_at, tp.paused_until into v_pause
      from pepsi.tube_pause tp where tp.tube = p_tube and tp.paused_until > p_now;
    if p_tube <> 'default' and v_pause.paused_until is null
       and not exists (select 1 from pepsi.workqueue w where w.tube = p_tube)
       and not exists (select 1 from pepsi.beanstalk_ref r where r.tube = p_tube) then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    return query
    select p_tube,
           count(*) filter (where w.status = 'pending' and w.bs_priority < 1024),
           count(*) filter (where w.status = 'pending'),
           count(*) filter (where w.status = 'running'),
           count(*) filter (where w.status = 'paused'),
           count(*) filter (where w.status in ('failed', 'timeout')),
           count(*),
           (select count(*) from pepsi.beanstalk_ref r where r.tube = p_tube and r.kind = 'use'),
           (select count(*) from pepsi.beanstalk_ref r where r.tube = p_tube and r.kind = 'watch'),
           0::bigint, 0::bigint, 0::bigint,
           coalesce(extract(epoch from v_pause.paused_until - v_pause.paused_at)::bigint, 0),
           coalesce(floor(extract(epoch from v_pause.paused_until - p_now))::bigint, 0)
      from pepsi.workqueue w
     where w.tube = p_tube and w.stage = 'beanstalk';
end
$$;

create function pepsi.beanstalk_list_tubes()
returns setof text
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's list-tubes: every tube that exists (rows of any stage,
-- references of live sessions, pauses in force, default), once each, in
-- order (T-37). A loose index scan of workqueue_tube_idx lists the rows'
-- tubes, as pepsi.tubes does. Tables: workqueue, beanstalk_ref, tube_pause (read).
    with recursive live(tube) as (
        (select w.tube from pepsi.workqueue w order by w.tube limit 1)
        union all
        select (select w.tube from pepsi.workqueue w where w.tube > l.tube order by w.tube limit 1)
          from live l
         where l.tube is not null
    )
    select n.tube from (
        select l.tube from live l where l.tube is not null
        union
        select r.tube::text from pepsi.beanstalk_ref r
        union
        select tp.tube::text from pepsi.tube_pause tp where tp.paused_until > now()
        union
        select 'default'
    ) n order by n.tube
$$;

create function pepsi.beanstalk_stats(p_now timestamptz default now())
returns table (current_jobs_urgent bigint, current_jobs_ready bigint,
               current_jobs_reserved bigint, current_jobs_delayed bigint,
               current_jobs_buried bigint, current_tubes bigint,
               current_connections bigint, current_producers bigint,
               current_workers bigint, total_jobs bigint, frontends bigint)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats over every beanstalk job and live session:
-- current_connections = sessions; current_workers = sessions holding a
-- reserved job; current_producers 0 (which session put is not kept);
-- total_jobs = jobs now; frontends = registered frontends. The frontend
-- adds its process keys (pid, uptime, version, its cmd-* counts). p_now is
-- accepted for symmetry (nothing here depends on it); NULL is PX003.
-- Tables: workqueue, beanstalk_session, beanstalk_frontend, beanstalk_ref,
-- tube_pause (read).
#variable_conflict use_column
begin
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    return query
    select count(*) filter (where w.status = 'pending' and w.bs_priority < 1024),
           count(*) filter (where w.status = 'pending'),
           count(*) filter (where w.status = 'running'),
           count(*) filter (where w.status = 'paused'),
           count(*) filter (where w.status in ('failed', 'timeout')),
           (select count(*) from pepsi.beanstalk_list_tubes()),
           (select count(*) from pepsi.beanstalk_session),
           0::bigint,
           (select count(distinct x.claim_id) from pepsi.workqueue x
             where x.stage = 'beanstalk' and x.status = 'running'
               and x.claim_id in (select s.session_id from pepsi.beanstalk_session s)),
           count(*),
           (select count(*) from pepsi.beanstalk_frontend)
      from pepsi.workqueue w
     where w.stage = 'beanstalk';
end
$$;

-- The anomaly checks that would flag a stage no runner serves leave stage
-- 'beanstalk' out (see the header); revert/beanstalk.sql undoes the same
-- text replacement.
update pepsi.anomaly_check
   set metric = replace(metric, 'on q.status = ', 'on q.stage <> ''beanstalk'' and q.status = '),
       updated_at = now()
 where name in ('oldest_pending_message', 'oldest_paused_message', 'longest_running_message', 'failed_messages')
   and metric like '%left join pepsi.anomaly_queue_mv q on q.status = %';

-- The functions and the view this change replaces: signatures, grants and
-- comments kept; what changed is marked "issue 17" in each.

create or replace view pepsi.tubes as
with recursive live(tube) as (
    -- Loose index scan of workqueue_tube_idx: each step is one probe for
    -- the next tube after the previous one.
    (select w.tube from pepsi.workqueue w order by w.tube limit 1)
    union all
    select (select w.tube from pepsi.workqueue w where w.tube > l.tube order by w.tube limit 1)
      from live l
     where l.tube is not null
),
names(tube) as (
    select l.tube from live l where l.tube is not null
    union
    select tp.tube::text from pepsi.tube_pause tp where tp.paused_until > now()
    union
    -- issue 17: a tube a live beanstalkd session uses or watches (T-21)
    select r.tube::text from pepsi.beanstalk_ref r
    union
    select 'default'
)
select n.tube, loc.partition, loc.owner_slot,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'pending') as pending,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'running') as running,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'paused') as paused,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'failed') as failed,
       (select count(*) from pepsi.workqueue w where w.tube = n.tube and w.status = 'timeout') as timeout,
       (select tp.paused_until from pepsi.tube_pause tp
         where tp.tube = n.tube and tp.paused_until > now()) as paused_until
  from names n
       cross join lateral pepsi.tube_locate(n.tube) loc;

create or replace function pepsi.tube_stats(p_tube text, p_now timestamptz default now())
returns table (name text, current_jobs_urgent bigint, current_jobs_ready bigint,
               current_jobs_reserved bigint, current_jobs_delayed bigint, current_jobs_buried bigint,
               total_jobs bigint, pause bigint, pause_time_left bigint, partition int, owner_slot int)
language plpgsql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's stats-tube for one tube (issue 14, T-15, T-32), one row:
--   current_jobs_urgent    0: pepsi has no job priorities
--   current_jobs_ready     pending rows
--   current_jobs_reserved  running rows
--   current_jobs_delayed   paused rows (a stage's pause, waiting for their
--                          timeout)
--   current_jobs_buried    failed and timed-out rows (kept for an
--                          operator, like buried jobs)
--   total_jobs             the rows the tube holds now (beanstalkd counts
--                          every job ever put; pepsi keeps no counter)
--   pause                  seconds the tube's pause was set for, 0 when
--                          not paused at p_now
--   pause_time_left        whole seconds until it ends, 0 when not paused
--   partition, owner_slot  where it lives (pepsi.tube_locate)
-- Raises PX006 for an invalid name and PX043 (NOT_FOUND) for a valid one
-- that does not exist: no row, no pause in force, no reference of a
-- beanstalkd session (issue 17, T-21), and not default. A
-- look-up never creates a tube (T-15): nothing is written.
-- Tables: workqueue, tube_pause, beanstalk_ref, topology, partition_map (read).
#variable_conflict use_column
declare
    v_counts bigint[];
    v_pause record;
begin
    perform pepsi.tube_check(p_tube);
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    select array[count(*) filter (where w.status = 'pending'), count(*) filter (where w.status = 'running'),
                 count(*) filter (where w.status = 'paused'),
                 count(*) filter (where w.status in ('failed', 'timeout')), count(*)]
      into v_counts
      from pepsi.workqueue w where w.tube = p_tube;
    select tp.paused_at, tp.paused_until into v_pause
      from pepsi.tube_pause tp where tp.tube = p_tube and tp.paused_until > p_now;
    if v_counts[5] = 0 and v_pause.paused_until is null and p_tube <> 'default'
       and not exists (select 1 from pepsi.beanstalk_ref r where r.tube = p_tube) then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    return query
    select p_tube, 0::bigint, v_counts[1], v_counts[2], v_counts[3], v_counts[4], v_counts[5],
           coalesce(extract(epoch from v_pause.paused_until - v_pause.paused_at)::bigint, 0),
           coalesce(floor(extract(epoch from v_pause.paused_until - p_now))::bigint, 0),
           loc.partition, loc.owner_slot
      from pepsi.tube_locate(p_tube) loc;
end
$$;

create or replace function pepsi.tube_pause(p_tube text, p_seconds int, p_now timestamptz default now())
returns timestamptz
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- beanstalkd's pause-tube (issue 14, T-33): no row of p_tube is claimed
-- until p_now + p_seconds; returns that time. 0 ends a pause at once
-- (returns NULL) and notifies the workqueue channel, so the runner claims
-- the waiting rows now. A pause ends by itself when its time comes: the
-- runner's next claim after it takes the rows (at the latest its
-- POLL_INTERVAL heartbeat), and the expired row is swept. Pausing again
-- replaces the pause. Expired pauses of every tube are swept first.
-- Raises PX006 for an invalid name, PX003 for p_seconds NULL, negative or
-- over input_limit('pause_seconds') (a year), and PX043 (NOT_FOUND) for a
-- tube that does not exist (no row, no pause in force, no reference of a
-- beanstalkd session (issue 17), not default),
-- leaving nothing behind: a pause never creates a tube. A tube whose last
-- row finishes while it is paused keeps its pause until it expires.
-- Tables: tube_pause (insert, update, delete); workqueue, beanstalk_ref (read).
#variable_conflict use_column
declare
    v_max bigint := pepsi.input_limit('pause_seconds');
    v_until timestamptz;
begin
    perform pepsi.tube_check(p_tube);
    if p_seconds is null or p_seconds < 0 or p_seconds > v_max then
        raise exception 'pause must be 0 to % seconds, not %', v_max, coalesce(p_seconds::text, 'NULL')
              using errcode = 'PX003';
    end if;
    if p_now is null then
        raise exception 'p_now must not be NULL' using errcode = 'PX003';
    end if;
    delete from pepsi.tube_pause tp where tp.paused_until <= p_now;
    if p_tube <> 'default'
       and not exists (select 1 from pepsi.workqueue w where w.tube = p_tube)
       and not exists (select 1 from pepsi.tube_pause tp where tp.tube = p_tube)
       and not exists (select 1 from pepsi.beanstalk_ref r where r.tube = p_tube) then
        raise exception 'tube "%" not found', p_tube using errcode = 'PX043';
    end if;
    if p_seconds = 0 then
        delete from pepsi.tube_pause tp where tp.tube = p_tube;
        notify workqueue;
        -- issue 17: the tube's ready beanstalkd jobs may be reserved now
        perform pg_notify('pepsi_beanstalk', p_tube);
        return null;
    end if;
    v_until := p_now + make_interval(secs => p_seconds);
    insert into pepsi.tube_pause as tp (tube, paused_at, paused_until)
    values (p_tube, p_now, v_until)
        on conflict (tube) do update set paused_at = excluded.paused_at, paused_until = excluded.paused_until;
    return v_until;
end
$$;

create or replace function pepsi.workqueue_reset_running(p_owner_slot int default 0)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The start-up sweep (D-18): every running row of the caller's owner slot
-- (p_owner_slot) was orphaned by an earlier dispatcher of that slot,
-- since the caller holds the slot's dispatcher lock; other slots' running
-- rows are their runners' (issue 14). Back to pending.
-- Issue 17: never a stage 'beanstalk' row: a reserved beanstalkd job
-- belongs to a client, not to a dispatcher, and its TTR governs it
-- (pepsi.beanstalk_reserve gives it back when the TTR passes).
-- Returns how many. A thin wrapper over workqueue_transition ("do"
-- requeue of every running row, issue 13). Raises PX003 (p_owner_slot
-- NULL). Tables: workqueue (update).
begin
    if p_owner_slot is null then
        raise exception 'p_owner_slot must not be NULL' using errcode = 'PX003';
    end if;
    return (select (count(*) filter (where t.outcome = 'ok'))::int
              from pepsi.workqueue_transition(array(
                       select pepsi.transition_of(w.workqueue_id, w.stage, 'requeue')
                         from pepsi.workqueue w
                        where w.status = 'running' and w.owner_slot = p_owner_slot
                          and w.stage <> 'beanstalk')) t);
end
$$;

create or replace function pepsi.reconcile_stuck(p_run bigint, p_now timestamptz, p_s pepsi.reconcile_settings,
                                      p_limits jsonb)
returns int
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Messages stuck running or paused far past their stage's limits:
--   running longer than MAX_RUNTIME x (QUEUE_LIMIT + 1) + running_margin
--   since claimed (a message waits behind at most QUEUE_LIMIT others in
--   its worker, each killed after MAX_RUNTIME, so no live dispatcher
--   keeps one running that long): requeued, pending again, with
--   state.last_error saying why. p_limits is {"<stage>": {"max_runtime_ms":
--   N, "queue_limit": N}} from the runner's configuration; other stages
--   use default_max_runtime and default_queue_limit.
--   paused with a timeout more than paused_grace ago (the paused sweep
--   did not run): released, pending again.
-- Rows are locked with SKIP LOCKED: a row a worker is finishing right now
-- is left to it. Issue 17: a running stage 'beanstalk' row (a reserved
-- beanstalkd job) is never requeued here: its TTR governs it. NOTIFY workqueue when any moved. Returns how many.
-- Tables: workqueue (update), reconcile_findings (insert).
declare
    v_n int;
    v_m int;
begin
    with stuck as (
        select w.workqueue_id, w.stage, w.claimed_at, a.allowed
          from pepsi.workqueue w
         cross join lateral (
               select coalesce((p_limits->w.stage->>'max_runtime_ms')::bigint * interval '1 millisecond',
                               p_s.default_max_runtime)
                      * (coalesce((p_limits->w.stage->>'queue_limit')::int, p_s.default_queue_limit) + 1)
                      + p_s.running_margin as allowed) a
         where w.status = 'running' and w.stage <> 'beanstalk'
           and coalesce(w.claimed_at, '-infinity') < p_now - a.allowed
         order by w.workqueue_id
         limit p_s.batch_limit
           for update of w skip locked
    ), moved as (
        -- requeued through the state machine (issue 13), rows locked above
        select s.workqueue_id, s.stage, s.claimed_at, s.allowed
          from pepsi.workqueue_transition(array(
                   select pepsi.transition_of(s.workqueue_id, s.stage, 'requeue', p_reason =>
                              format('reconcile: running since %s, past its stage limit of %s', s.claimed_at, s.allowed))
                     from stuck s)) t
          join stuck s on s.workqueue_id = t.workqueue_id
         where t.outcome = 'ok'
    )
    insert into pepsi.reconcile_findings (run_id, kind, object, workqueue_id, action, detail, found_at,
                                          resolved_at, resolution)
    select p_run, 'stuck_running', 'message:' || m.workqueue_id, m.workqueue_id, 'requeued',
           jsonb_build_object('stage', m.stage, 'claimed_at', m.claimed_at, 'allowed', m.allowed::text),
           p_now, p_now, 'repaired'
      from moved m;
    get diagnostics v_n = row_count;

    -- workqueue_paused_idx leads with the owner slot (issue 14), so the
    -- oldest overdue rows are read slot by slot, each a range scan of
    -- (slot, timeout) that stops at batch_limit, then merged: the cost
    -- follows the overdue rows, not every paused row of the queue. The
    -- slots: those of the map, and 0 (every row without a topology).
    with overdue as (
        select o.workqueue_id, o.timeout
          from (select m.owner_slot from pepsi.partition_map m
                union select 0) sl
         cross join lateral (
               select w.workqueue_id, w.timeout from pepsi.workqueue w
                where w.owner_slot = sl.owner_slot and w.status = 'paused'
                  and w.timeout < p_now - p_s.paused_grace
                order by w.timeout
                limit p_s.batch_limit
                  for update skip locked) o
         order by o.timeout
         limit p_s.batch_limit
    ), moved as (
        update pepsi.workqueue w set status = 'pending', timeout = null
          from overdue o
         where w.workqueue_id = o.workqueue_id
        returning w.workqueue_id, w.stage, o.timeout
    )
    insert into pepsi.reconcile_findings (run_id, kind, object, workqueue_id, action, detail, found_at,
                                          resolved_at, resolution)
    select p_run, 'stuck_paused', 'message:' || m.workqueue_id, m.workqueue_id, 'released',
           jsonb_build_object('stage', m.stage, 'timeout', m.timeout), p_now, p_now, 'repaired'
      from moved m;
    get diagnostics v_m = row_count;
    if v_n + v_m > 0 then
        notify workqueue;
    end if;
    return v_n + v_m;
end
$$;

create or replace function pepsi.workqueue_release_due(p_now timestamptz, p_owner_slot int default 0)
returns int
language plpgsql
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Releases due paused rows (D-93): every paused row of owner slot
-- p_owner_slot (a runner's slot, issue 14; 0 by default, every row
-- without a topology) whose timeout is at or before p_now becomes
-- pending, its timeout cleared. Returns how many.
-- The one statement that does it (issue 13), for the paused sweep
-- (workqueue_release_paused) and the claims' p_release_paused; an index
-- range scan on workqueue_paused_idx (owner_slot, timeout) that reads
-- this slot's due rows only and finds nothing when none is due. The
-- caller checks p_now and p_owner_slot. Tables: workqueue (update).
-- Issue 17: a due delayed beanstalkd job (stage 'beanstalk') is released
-- like any paused row, and the same transaction sends NOTIFY
-- pepsi_beanstalk with its tube, once per tube, so that a frontend's
-- waiting reserve takes it at once (the frontend's next_at timer would
-- find it too, later).
declare
    v_n int;
    v_tubes text[];
    v_tube text;
begin
    with u as (
        update pepsi.workqueue w set status = 'pending', timeout = null
         where w.status = 'paused' and w.owner_slot = p_owner_slot and w.timeout <= p_now
        returning w.stage, w.tube
    )
    select count(*), array_agg(distinct u.tube) filter (where u.stage = 'beanstalk')
      into v_n, v_tubes from u;
    foreach v_tube in array coalesce(v_tubes, '{}') loop
        perform pg_notify('pepsi_beanstalk', v_tube);
    end loop;
    return v_n;
end
$$;

comment on function pepsi.beanstalk_stage() is
    'The pull stage of beanstalkd jobs (issue 17): no runner claims it (the runner refuses a [stage-beanstalk] section).';
comment on function pepsi.beanstalk_lock_class() is
    'The first key of a frontend''s advisory lock, pg_advisory_lock(class, frontend_id): 1885696098 ("pepb" as an int4), a class of its own, since frontend ids would collide with pepsi.lock_key''s owner-slot keys.';
comment on function pepsi.beanstalk_frontend_alive(bigint) is
    'True when p_frontend is registered and some backend of this database holds its advisory lock (pg_locks: classid, objid, objsubid 2).';
comment on function pepsi.beanstalk_count(jsonb, text, jsonb) is
    'p_state with state.beanstalk.<p_key> counted one up (p_key NULL: none) and the keys of p_set merged into state.beanstalk.';
comment on function pepsi.beanstalk_reap() is
    'Deletes every frontend whose advisory lock no backend holds (it died, or lost its connection), with its sessions and their references (T-39); their reserved jobs stay reserved until their TTR. Returns how many frontends. Frontends call it every few seconds. Tables: beanstalk_frontend (delete), beanstalk_session, beanstalk_ref (delete by cascade).';
comment on function pepsi.beanstalk_frontend_start(text) is
    'Registers a frontend process (issue 17): reaps dead frontends, inserts this one and takes the session-level advisory lock (beanstalk_lock_class(), id) on the caller''s connection, held until that connection ends (the frontend''s life). Returns the id (the generation). p_name: e.g. ''host:11300 pid 1234'', 1 to 200 bytes, else PX003. Tables: beanstalk_frontend (insert, delete).';
comment on function pepsi.beanstalk_session_open(bigint) is
    'A new client session of frontend p_frontend, using and watching ''default'' (beanstalkd''s prot_init, T-24). Returns its id. Raises PX060 when p_frontend is not a live registered frontend (reaped, or its lock is free: a late call of an old generation, T-40), creating nothing. The frontend row is key-share locked, so a concurrent reap waits for this transaction and then deletes the session with it. Tables: beanstalk_session, beanstalk_ref (insert).';
comment on function pepsi.beanstalk_session_lock(bigint, bigint) is
    'Locks session p_session of frontend p_frontend for a change of its references, or raises PX061: no such session, not that frontend''s, or the frontend is not live (T-40: a late attach resurrects nothing).';
comment on function pepsi.beanstalk_requeue(bigint[], text, timestamptz) is
    'Reserved jobs p_ids (running at stage ''beanstalk'', locked by the caller) back to ready through the state machine (''requeue''), then claim_id cleared and state.beanstalk.<p_counter> counted (NULL: none) by a direct UPDATE (no status change); NOTIFY pepsi_beanstalk per tube. Returns how many. Tables: workqueue (update).';
comment on function pepsi.beanstalk_session_close(bigint, bigint) is
    'A client disconnected: the session''s reserved jobs go back to ready (pri kept, releases not counted, as beanstalkd does), its references and its row are deleted. Returns the number of jobs released; 0 when the session is already gone (no error). Tables: workqueue (update), beanstalk_session, beanstalk_ref (delete).';
comment on function pepsi.beanstalk_use(bigint, bigint, text) is
    'beanstalkd''s use: the session''s used tube becomes p_tube (its previous one loses that reference). Raises PX006 (invalid name), PX061 (session or frontend gone, or not a pair: nothing is created, T-40). One transaction: a failure leaves the references as they were (T-20). Tables: beanstalk_ref (insert, update).';
comment on function pepsi.beanstalk_watch(bigint, bigint, text) is
    'beanstalkd''s watch: p_tube joins the session''s watch list (once). Returns the number of tubes watched afterwards. Raises PX006, PX061 as beanstalk_use. Tables: beanstalk_ref (insert, read).';
comment on function pepsi.beanstalk_ignore(bigint, bigint, text) is
    'beanstalkd''s ignore: p_tube leaves the session''s watch list. Returns the number watched afterwards; a tube not watched changes nothing. Raises PX062 (NOT_IGNORED) when p_tube is the only tube watched, PX006, PX061 as beanstalk_use. Tables: beanstalk_ref (delete, read).';
comment on function pepsi.beanstalk_put(text, bigint, bigint, bigint, bytea) is
    'beanstalkd''s put: a new job in p_tube, ready (pending) or, with a delay, delayed (paused until now() + p_delay), written by pepsi.workqueue_insert like every other inject (partition and owner slot of the tube, body in workqueue_body), then its bs_priority set. Returns the job id. NOTIFY pepsi_beanstalk when ready now. Raises PX006 (invalid tube), PX003 (pri outside 0..4294967295, delay outside 0..input_limit(''pause_seconds''), ttr outside 0..4294967295, body over input_limit(''body'')). TTR 0 is stored as 1, as beanstalkd does. Tables: workqueue, workqueue_body (insert; workqueue update).';
comment on function pepsi.beanstalk_take(bigint, bigint, timestamptz) is
    'Reserves job p_id (locked by the caller, ready, delayed or buried) for session p_session: running, claim_id, claimed_at = p_now, timeout = p_now + ttr, reserves + 1; the failure keys a bury wrote are removed. A direct UPDATE of a row that is not running (as the claims do). Returns its body. Tables: workqueue (update), workqueue_body (read).';
comment on function pepsi.beanstalk_reserve(bigint, text[], timestamptz) is
    'beanstalkd''s reserve for session p_session watching p_tubes; one row: first, reserved jobs of p_tubes (and of the session) past their TTR deadline go back to ready (timeouts + 1), and due delayed jobs of p_tubes become ready (NOTIFY pepsi_beanstalk for each tube); DEADLINE_SOON the session holds a job whose deadline is within 1 s of p_now (job_id: that job; nothing taken) RESERVED the ready job of lowest bs_priority, then id, in the tubes of p_tubes that no pause holds at p_now, taken FOR UPDATE SKIP LOCKED (two frontends never take one job), with its body NONE nothing ready; next_at: the earliest moment something of p_tubes may become ready (a delayed job''s time, a reserved job''s deadline, a pause''s end), NULL if none Raises PX006 (an invalid tube), PX003 (p_tubes NULL, p_now NULL). Tables: workqueue (update), workqueue_body, tube_pause (read).';
comment on function pepsi.beanstalk_reserve_job(bigint, bigint, timestamptz) is
    'beanstalkd''s reserve-job: job p_id, ready, delayed or buried, reserved by session p_session as beanstalk_reserve takes a job: RESERVED with its body, or NOT_FOUND (no such beanstalk job, reserved by anyone, or locked by another transaction right now). Tables: workqueue (update), workqueue_body (read).';
comment on function pepsi.beanstalk_delete(bigint, bigint) is
    'beanstalkd''s delete: true when job p_id was deleted (ready, delayed, buried, or reserved by p_session), false (NOT_FOUND) when there is no such job or another session holds it. A reserved job is finished through the state machine (''finish'': its history row ''finished''); any other is deleted here with a history row ''deleted''. Its body goes by workqueue_body_release. Tables: workqueue (delete), workqueue_history (insert).';
comment on function pepsi.beanstalk_release(bigint, bigint, bigint, bigint) is
    'beanstalkd''s release: job p_id reserved by p_session goes back to ready (''requeue''), or delayed until now() + p_delay (''pause'') when p_delay > 0, with priority p_pri and releases + 1. False (NOT_FOUND) when it is not reserved by p_session. NOTIFY pepsi_beanstalk when ready now. Raises PX003 (pri outside 0..4294967295, delay outside 0..input_limit(''pause_seconds'')). Tables: workqueue (update).';
comment on function pepsi.beanstalk_bury(bigint, bigint, bigint) is
    'beanstalkd''s bury: job p_id reserved by p_session becomes buried (''fail'': failed, last_error ''buried''), priority p_pri, buries + 1. False (NOT_FOUND) when it is not reserved by p_session. Raises PX003 (pri outside 0..4294967295). Tables: workqueue (update).';
comment on function pepsi.beanstalk_touch(bigint, bigint, timestamptz) is
    'beanstalkd''s touch: job p_id reserved by p_session gets a new deadline, p_now + ttr (a direct UPDATE of timeout; no status change). False (NOT_FOUND) when it is not reserved by p_session. Raises PX003 (p_now NULL). Tables: workqueue (update).';
comment on function pepsi.beanstalk_peek(bigint) is
    'beanstalkd''s peek: job p_id in any state and its body; no row: NOT_FOUND. Tables: workqueue, workqueue_body (read).';
comment on function pepsi.beanstalk_peek_state(text, text) is
    'beanstalkd''s peek-ready, peek-delayed, peek-buried in tube p_tube: p_state ''ready'' (the job the next reserve would take: lowest bs_priority, then id), ''delayed'' (soonest ready time, then id), ''buried'' (lowest id); no row: NOT_FOUND. Raises PX006 (invalid tube), PX003 (another p_state). Tables: workqueue, workqueue_body (read).';
comment on function pepsi.beanstalk_kick(text, bigint) is
    'beanstalkd''s kick: up to p_bound buried jobs of p_tube (lowest id first) become ready, kicks + 1 and the bury''s failure keys removed; when the tube has no buried job, up to p_bound delayed jobs (soonest first) instead. A direct UPDATE of rows that are not running (as workqueue_resume). Returns how many; NOTIFY pepsi_beanstalk when any. Raises PX006 (invalid tube), PX003 (p_bound NULL or negative). Tables: workqueue (update).';
comment on function pepsi.beanstalk_kick_job(bigint) is
    'beanstalkd''s kick-job: job p_id, buried or delayed, becomes ready (kicks + 1). False (NOT_FOUND): no such job or not in those states. NOTIFY pepsi_beanstalk. Tables: workqueue (update).';
comment on function pepsi.beanstalk_stats_job(bigint, timestamptz) is
    'beanstalkd''s stats-job for job p_id: state ready | delayed | reserved | buried; age (since put) and time_left (until a delayed job is ready or a reserved job''s deadline; 0 otherwise) in whole seconds; file 0 (no binlog); the counters of state.beanstalk. No row: NOT_FOUND. Raises PX003 (p_now NULL). Tables: workqueue (read).';
comment on function pepsi.beanstalk_stats_tube(text, timestamptz) is
    'beanstalkd''s stats-tube over the tube''s beanstalk jobs: urgent = ready with pri < 1024; total_jobs = its jobs now (no counter is kept); current_using / current_watching = live sessions'' references; current_waiting, cmd_delete, cmd_pause_tube 0 (no counters are kept); pause and pause_time_left in seconds, 0 when not paused at p_now. Raises PX006 (invalid name), PX043 (NOT_FOUND) when the tube does not exist: no row of any stage, no reference, no pause in force, not default. Nothing is created (T-32). Tables: workqueue, beanstalk_ref, tube_pause (read).';
comment on function pepsi.beanstalk_list_tubes() is
    'beanstalkd''s list-tubes: every tube that exists (rows of any stage, references of live sessions, pauses in force, default), once each, in order (T-37). A loose index scan of workqueue_tube_idx lists the rows'' tubes, as pepsi.tubes does. Tables: workqueue, beanstalk_ref, tube_pause (read).';
comment on function pepsi.beanstalk_stats(timestamptz) is
    'beanstalkd''s stats over every beanstalk job and live session: current_connections = sessions; current_workers = sessions holding a reserved job; current_producers 0 (which session put is not kept); total_jobs = jobs now; frontends = registered frontends. The frontend adds its process keys (pid, uptime, version, its cmd-* counts). p_now is accepted for symmetry (nothing here depends on it); NULL is PX003. Tables: workqueue, beanstalk_session, beanstalk_frontend, beanstalk_ref, tube_pause (read).';

revoke all on table pepsi.beanstalk_frontend, pepsi.beanstalk_session, pepsi.beanstalk_ref from public;
revoke all on function
    pepsi.beanstalk_stage(), pepsi.beanstalk_lock_class(), pepsi.beanstalk_frontend_alive(bigint),
    pepsi.beanstalk_count(jsonb, text, jsonb), pepsi.beanstalk_reap(), pepsi.beanstalk_frontend_start(text),
    pepsi.beanstalk_session_open(bigint), pepsi.beanstalk_session_lock(bigint, bigint),
    pepsi.beanstalk_requeue(bigint[], text, timestamptz), pepsi.beanstalk_session_close(bigint, bigint),
    pepsi.beanstalk_use(bigint, bigint, text), pepsi.beanstalk_watch(bigint, bigint, text),
    pepsi.beanstalk_ignore(bigint, bigint, text), pepsi.beanstalk_put(text, bigint, bigint, bigint, bytea),
    pepsi.beanstalk_take(bigint, bigint, timestamptz), pepsi.beanstalk_reserve(bigint, text[], timestamptz),
    pepsi.beanstalk_reserve_job(bigint, bigint, timestamptz), pepsi.beanstalk_delete(bigint, bigint),
    pepsi.beanstalk_release(bigint, bigint, bigint, bigint), pepsi.beanstalk_bury(bigint, bigint, bigint),
    pepsi.beanstalk_touch(bigint, bigint, timestamptz), pepsi.beanstalk_peek(bigint),
    pepsi.beanstalk_peek_state(text, text), pepsi.beanstalk_kick(text, bigint), pepsi.beanstalk_kick_job(bigint),
    pepsi.beanstalk_stats_job(bigint, timestamptz), pepsi.beanstalk_stats_tube(text, timestamptz),
    pepsi.beanstalk_list_tubes(), pepsi.beanstalk_stats(timestamptz)
    from public;
grant execute on function
    pepsi.beanstalk_stage(), pepsi.beanstalk_reap(), pepsi.beanstalk_frontend_start(text),
    pepsi.beanstalk_session_open(bigint), pepsi.beanstalk_session_close(bigint, bigint),
    pepsi.beanstalk_use(bigint, bigint, text), pepsi.beanstalk_watch(bigint, bigint, text),
    pepsi.beanstalk_ignore(bigint, bigint, text), pepsi.beanstalk_put(text, bigint, bigint, bigint, bytea),
    pepsi.beanstalk_reserve(bigint, text[], timestamptz), pepsi.beanstalk_reserve_job(bigint, bigint, timestamptz),
    pepsi.beanstalk_delete(bigint, bigint), pepsi.beanstalk_release(bigint, bigint, bigint, bigint),
    pepsi.beanstalk_bury(bigint, bigint, bigint), pepsi.beanstalk_touch(bigint, bigint, timestamptz),
    pepsi.beanstalk_peek(bigint), pepsi.beanstalk_peek_state(text, text), pepsi.beanstalk_kick(text, bigint),
    pepsi.beanstalk_kick_job(bigint), pepsi.beanstalk_stats_job(bigint, timestamptz),
    pepsi.beanstalk_stats_tube(text, timestamptz), pepsi.beanstalk_list_tubes(), pepsi.beanstalk_stats(timestamptz)
    to pepsi_runner;

commit;
