-- Enqueue options (issue 16): workqueue_inject's and workqueue_inject_batch's
-- p_run_at (a delay: paused until then, released by the paused sweep),
-- p_priority (lower first within a stage, on every claim path) and
-- p_dedupe_key (insert once while live); each refusal by its code; who may
-- call; and at 100,000 rows the plain claim reads cap index entries, no
-- sort. The clock is p_now / now(), never slept.

begin;
select plan(56);

create function pg_temp.outcome(p_sql text) returns text
language plpgsql as $$
begin
    execute p_sql;
    return 'ok';
exception when others then
    return sqlstate;
end
$$;
grant execute on function pg_temp.outcome(text) to public;

-- the ids of a claim, in the order it returned them
create function pg_temp.claim(p_stage text, p_cap int) returns bigint[]
language sql as $$
    select array_agg(c.workqueue_id) from pepsi.workqueue_claim(array[p_stage], array[p_cap]) c
$$;
-- the ids of p_rows claims of p_stage with cap 1: the claim order (one
-- UPDATE ... RETURNING returns its rows in no defined order)
create function pg_temp.claim_one_by_one(p_stage text, p_rows int) returns bigint[]
language plpgsql as $$
declare
    v bigint[] := '{}';
begin
    for i in 1 .. p_rows loop
        v := v || pg_temp.claim(p_stage, 1);
    end loop;
    return v;
end
$$;
-- the ids p_rows rows of p_stage would be claimed in by the fair claim with
-- cap 1 each time (FIFO share p_fifo percent)
create function pg_temp.fair_one_by_one(p_stage text, p_rows int, p_fifo int) returns bigint[]
language plpgsql as $$
declare
    v bigint[] := '{}';
    v_id bigint;
begin
    for i in 1 .. p_rows loop
        select c.workqueue_id into v_id
          from pepsi.workqueue_claim_fair(array[p_stage], '{1}', '{1000}', null, null, null, p_fifo) c;
        v := v || v_id;
    end loop;
    return v;
end
$$;
create temp table m (name text primary key, id bigint) on commit drop;
create function pg_temp.ids(variadic p_names text[]) returns bigint[] language sql stable as
$$ select array_agg(m.id order by n.ord) from unnest(p_names) with ordinality n(name, ord) join m using (name) $$;

-- Priority ------------------------------------------------------------------------

insert into m values
    ('p0a', pepsi.workqueue_inject('pri', p_origin_user => 'u1')),
    ('p5',  pepsi.workqueue_inject('pri', p_origin_user => 'u1', p_priority => 5)),
    ('pm1', pepsi.workqueue_inject('pri', p_origin_user => 'u1', p_priority => -1)),
    ('p0b', pepsi.workqueue_inject('pri', p_origin_user => 'u1')),
    ('pm9', pepsi.workqueue_inject('pri', p_origin_user => 'u1', p_priority => -9));
select is((select array_agg(w.priority order by w.workqueue_id) from pepsi.workqueue w where w.stage = 'pri'),
          '{0,5,-1,0,-9}'::smallint[], 'issue 16: p_priority is stored (default 0)');
select is((select array_agg(u order by u) from unnest(pg_temp.claim('pri', 2)) u),
          (select array_agg(u order by u) from unnest(pg_temp.ids('pm9', 'pm1')) u),
          'issue 16: a plain claim of two takes the two lowest priorities');
update pepsi.workqueue set status = 'pending' where stage = 'pri';
select is(pg_temp.claim_one_by_one('pri', 5), pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: the plain claim takes the lowest priority first, then by id within a priority (FIFO)');

-- the same rows for the fair claim, one sender: by rank (FIFO share 0) ...
update pepsi.workqueue set stage = 'prf', status = 'pending' where stage = 'pri';
select is(pg_temp.fair_one_by_one('prf', 5, 0), pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: the fair claim ranks a sender''s rows in priority order, then by id');
update pepsi.workqueue set status = 'pending' where stage = 'prf';
-- ... and by the FIFO share only
select is(pg_temp.fair_one_by_one('prf', 5, 100), pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: the fair claim''s FIFO share takes the stage''s lowest priority first');
update pepsi.workqueue set status = 'pending' where stage = 'prf';
-- the whole set in one fair claim: the order of the answer is the claim order
select is((select array_agg(c.workqueue_id)
             from pepsi.workqueue_claim_fair('{prf}', '{5}', '{1000}', null, null, null, 0) c),
          pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: one fair claim of five returns them in priority order');
update pepsi.workqueue set status = 'pending' where stage = 'prf';
-- the sender probe: a sender's ids in (priority, id) order and the last one's priority
select is((select f.ids from pepsi.workqueue_sender_probe('prf', '', null, 16) f),
          pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: workqueue_sender_probe yields a sender''s rows in priority order, then by id');
select is((select f.last_priority from pepsi.workqueue_sender_probe('prf', '', null, 3) f), 0::smallint,
          'issue 16: and the priority of the last row it read (where a deeper read resumes)');
-- a deeper read than the probe's: the window reads 4 of a one-sender batch,
-- the rest is read after (sender, priority, id) of the last one
select is(pg_temp.fair_one_by_one('prf', 1, 0) || (select array_agg(c.workqueue_id)
             from pepsi.workqueue_claim_fair('{prf}', '{4}', '{1000}', null, null, null, 0, p_window_size => 1) c),
          pg_temp.ids('pm9', 'pm1', 'p0a', 'p0b', 'p5'),
          'issue 16: a fair claim that reads a sender deeper than its probe goes on in priority order');

-- two senders: fairness between them stays, priority orders each one's rows
delete from pepsi.workqueue where stage = 'prf';
insert into m values
    ('a1', pepsi.workqueue_inject('two', p_origin_user => 'a')),
    ('a2', pepsi.workqueue_inject('two', p_origin_user => 'a', p_priority => -5)),
    ('b1', pepsi.workqueue_inject('two', p_origin_user => 'b')),
    ('b2', pepsi.workqueue_inject('two', p_origin_user => 'b', p_priority => -5));
select is((select array_agg(c.workqueue_id order by c.workqueue_id)
             from pepsi.workqueue_claim_fair('{two}', '{2}', '{1000}', null, null, null, 0) c),
          pg_temp.ids('a2', 'b2'),
          'issue 16: fair claim of 2 from two level senders: each sender''s priority row, one each');

-- priority does not cross stages
insert into m values
    ('x0', pepsi.workqueue_inject('sx')),
    ('y-', pepsi.workqueue_inject('sy', p_priority => -1000));
select is(pg_temp.claim('sx', 1), pg_temp.ids('x0'),
          'issue 16: a stage''s claim is not taken by another stage''s lower priority');
select is((select array_agg(c.workqueue_id order by c.workqueue_id) from pepsi.workqueue_claim('{sx,sy}', '{1,1}') c),
          pg_temp.ids('y-'), 'issue 16: each stage claims its own rows');

-- Delay --------------------------------------------------------------------------

insert into m values
    ('late', pepsi.workqueue_inject('dly', p_run_at => now() + interval '1 hour')),
    ('past', pepsi.workqueue_inject('dly', p_run_at => now() - interval '1 minute')),
    ('nul',  pepsi.workqueue_inject('dly', p_run_at => null));
select is((select w.status || ' ' || (w.timeout = now() + interval '1 hour') from pepsi.workqueue w
            where w.workqueue_id = (pg_temp.ids('late'))[1]), 'paused true',
          'issue 16: a message with p_run_at ahead waits paused, timeout = run_at');
select is((select array_agg(w.status::text order by w.workqueue_id) from pepsi.workqueue w
            where w.workqueue_id = any (pg_temp.ids('past', 'nul'))), '{pending,pending}',
          'issue 16: p_run_at in the past or NULL is now: pending');
select is((select array_agg(c.workqueue_id order by c.workqueue_id)
             from pepsi.workqueue_claim('{dly}', '{10}', now() + interval '59 minutes', true) c),
          pg_temp.ids('past', 'nul'),
          'issue 16: a claim (and its paused sweep) before run_at does not take the delayed message');
select is((select next_timeout from pepsi.workqueue_release_paused(now() + interval '59 minutes')),
          now() + interval '1 hour', 'issue 16: the paused sweep names run_at as its next time (the dispatcher''s timer)');
select is(pg_temp.claim('dly', 10), null, 'issue 16: nor does a plain claim without the sweep');
select is((select array_agg(c.workqueue_id)
             from pepsi.workqueue_claim('{dly}', '{10}', now() + interval '1 hour', true) c),
          pg_temp.ids('late'), 'issue 16: at run_at the claim''s sweep releases it and the claim takes it');
insert into m values ('late2', pepsi.workqueue_inject('dly2', p_run_at => now() + interval '1 second'));
select is((select array_agg(c.workqueue_id)
             from pepsi.workqueue_claim_fair('{dly2}', '{5}', '{1000}', null, null, null,
                                             p_now => now() + interval '1 second', p_release_paused => true) c),
          pg_temp.ids('late2'), 'issue 16: the fair claim''s sweep releases it at run_at too');

-- Dedupe --------------------------------------------------------------------------

create temp table bodies0 on commit drop as select count(*) as n from pepsi.workqueue_body;
insert into m values ('k1', pepsi.workqueue_inject('ddp', p_body => 'one', p_dedupe_key => 'invoice-42'));
insert into m values ('k1again', pepsi.workqueue_inject('ddp', p_body => 'two', p_dedupe_key => 'invoice-42',
                                                        p_priority => 3));
select is(pg_temp.ids('k1again'), pg_temp.ids('k1'),
          'issue 16: a second inject with a live dedupe key returns the existing message''s id');
select is((select count(*)::int from pepsi.workqueue where dedupe_key = 'invoice-42'), 1,
          'issue 16: and writes no message');
select is((select count(*) from pepsi.workqueue_body) - (select n from bodies0), 1::bigint,
          'issue 16: nor a body (no orphan)');
select is((select w.priority from pepsi.workqueue w where w.workqueue_id = (pg_temp.ids('k1'))[1]), 0::smallint,
          'issue 16: the live message keeps its own options');
-- still live while running or failed
select is(pg_temp.claim('ddp', 1), pg_temp.ids('k1'), 'setup: the keyed message runs');
select is(pepsi.workqueue_inject('ddp', p_dedupe_key => 'invoice-42'), (pg_temp.ids('k1'))[1],
          'issue 16: while it runs, the key still returns it');
select is(pepsi.workqueue_fail((pg_temp.ids('k1'))[1], 'ddp', 'broken')::text is not null, true, 'setup: it fails');
select is(pepsi.workqueue_inject('ddp', p_dedupe_key => 'invoice-42'), (pg_temp.ids('k1'))[1],
          'issue 16: a failed message is still live (in the workqueue): the key returns it');
select is(pepsi.workqueue_resume(pg_temp.ids('k1')) > 0, true, 'setup: resumed');
select is(pg_temp.claim('ddp', 1), pg_temp.ids('k1'), 'setup: claimed again');
select is(pepsi.workqueue_finish((pg_temp.ids('k1'))[1], 'ddp')::text is not null, true, 'setup: finished');
insert into m values ('k1new', pepsi.workqueue_inject('ddp', p_dedupe_key => 'invoice-42'));
select isnt(pg_temp.ids('k1new'), pg_temp.ids('k1'),
            'issue 16: once the message finished (row deleted), the key makes a new message');
select is((select count(*)::int from pepsi.workqueue where dedupe_key = 'invoice-42'), 1,
          'issue 16: one live row holds the key');
select is((select m.dedupe_key from pepsi.messages m where m.workqueue_id = (pg_temp.ids('k1new'))[1]), 'invoice-42',
          'issue 16: pepsi.messages shows the dedupe key');

-- the batch form
create temp table b on commit drop as
select row_number() over () as n, id
  from pepsi.workqueue_inject_batch(jsonb_build_array(
           '{"stage": "bat", "dedupe_key": "d1"}'::jsonb,
           '{"stage": "bat", "dedupe_key": "d1", "priority": -3}'::jsonb,
           '{"stage": "bat", "dedupe_key": "invoice-42"}'::jsonb,
           '{"stage": "bat", "priority": -7, "run_at": null}'::jsonb,
           jsonb_build_object('stage', 'bat', 'priority', '2', 'run_at', (now() + interval '1 hour')::text,
                              'dedupe_key', null))) id;
select is((select array_agg(id order by n) from b),
          array[(select id from b where n = 1), (select id from b where n = 1), (pg_temp.ids('k1new'))[1],
                (select id from b where n = 4), (select id from b where n = 5)],
          'issue 16: a batch returns the first element''s id for a repeated key, the live message''s for a held one');
select is((select array_agg(w.priority::text || '/' || w.status || '/' || coalesce(w.dedupe_key, '-')
                            order by w.workqueue_id) from pepsi.workqueue w where w.stage = 'bat'),
          '{0/pending/d1,-7/pending/-,2/paused/-}',
          'issue 16: and writes only the messages without a held key, each with its options');
select is(pg_temp.claim_one_by_one('bat', 2) || pg_temp.claim('bat', 10),
          array[(select id from b where n = 4), (select id from b where n = 1)],
          'issue 16: batch options: priority -7 first, the keyed one next, the delayed one not yet');

-- Refusals ------------------------------------------------------------------------

select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_priority => 1001)$$), 'PX052',
          'issue 16: priority 1001: PX052');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_priority => -1001)$$), 'PX052',
          'issue 16: priority -1001: PX052');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_run_at => 'infinity')$$), 'PX053',
          'issue 16: run_at infinity: PX053');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_run_at => now() + interval '2 years')$$), 'PX053',
          'issue 16: run_at two years ahead: PX053');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_dedupe_key => '')$$), 'PX054',
          'issue 16: an empty dedupe key: PX054');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_dedupe_key => repeat('k', 256))$$), 'PX054',
          'issue 16: a dedupe key of 256 bytes: PX054');
select is(pg_temp.outcome($$select pepsi.workqueue_inject('r', p_dedupe_key => repeat('k', 255))$$), 'ok',
          'issue 16: 255 bytes are accepted');
select throws_ok($$select pepsi.workqueue_inject_batch('[{"stage": "r"}, {"stage": "r", "priority": 5000}]')$$,
                 'PX052', 'message 2: priority 5000 is outside -1000..1000',
                 'issue 16: a batch element''s priority out of range: PX052 naming it');
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "r", "priority": "high"}]')$$), 'PX052',
          'issue 16: a batch priority that is not an integer: PX052');
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "r", "priority": 1.5}]')$$), 'PX052',
          'issue 16: a batch priority of 1.5: PX052');
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "r", "run_at": "soon"}]')$$), 'PX003',
          'issue 16: a batch run_at that is not a time: PX003');
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "r", "dedupe_key": ""}]')$$), 'PX054',
          'issue 16: a batch dedupe key of 0 bytes: PX054');
select is((select count(*)::int from pepsi.workqueue where stage = 'r'), 1,
          'the refused calls queued nothing (the 255-byte key''s message only)');

-- Roles ---------------------------------------------------------------------------

set local role pepsi_worker;
select is(pg_temp.outcome($$select pepsi.workqueue_inject('rw', p_priority => -1, p_dedupe_key => 'w',
                                                          p_run_at => now() + interval '1 minute')$$), 'ok',
          'issue 16: pepsi_worker may inject with the options');
reset role;
set local role pepsi_ingress;
select is(pg_temp.outcome($$select pepsi.workqueue_inject_batch('[{"stage": "ri", "priority": 1, "dedupe_key": "i"}]')$$),
          'ok', 'issue 16: pepsi_ingress may inject a batch with the options');
reset role;
set local role pepsi_reader;
select is(pg_temp.outcome($$select pepsi.workqueue_inject('rr', p_priority => 1)$$), '42501',
          'issue 16: pepsi_reader may not inject');
select is(pg_temp.outcome($$select priority, dedupe_key from pepsi.messages$$), 'ok',
          'issue 16: pepsi_reader reads priority and dedupe_key in pepsi.messages');
reset role;

-- The claim's cost at 100,000 rows ----------------------------------------------------

insert into pepsi.workqueue (stage, priority)
select 'big', (g % 2001) - 1000 from generate_series(1, 100000) g;
analyze pepsi.workqueue;
create function pg_temp.explain(p_sql text) returns json language plpgsql as $$
declare v json;
begin
    execute 'explain (format json) ' || p_sql into v;
    return v;
end $$;
select unalike(pg_temp.explain($$select q.workqueue_id from pepsi.workqueue q
                                   where q.stage = 'big' and q.owner_slot = 0 and q.status = 'pending'
                                   order by q.priority, q.workqueue_id limit 10$$)::text, '%"Sort"%',
               'issue 16: the claim''s scan at 100,000 rows has no Sort node');
-- every entry any index of workqueue returned, and every row a sequential
-- scan read: a claim that sorted the stage (or walked the primary key with
-- a filter) would read 100,000
create function pg_temp.reads() returns bigint language sql as $$
    select pg_stat_get_xact_tuples_returned('pepsi.workqueue'::regclass)
           + (select sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) from pg_index i
               where i.indrelid = 'pepsi.workqueue'::regclass)::bigint
$$;
-- the measured claim is the second of a generic plan, so that it is
-- planned before (the planner's own probes of the primary key, which this
-- transaction's 100,000 fresh rows make long, are not the claim's)
set local plan_cache_mode = force_generic_plan;
create temp table big_claim on commit drop as select c.workqueue_id from pepsi.workqueue_claim('{big}', '{10}') c;
create temp table c0 on commit drop as select pg_temp.reads() as n;
insert into big_claim select c.workqueue_id from pepsi.workqueue_claim('{big}', '{10}') c;
create temp table c1 on commit drop as select pg_temp.reads() as n;
select cmp_ok((select n from c1) - (select n from c0), '<=', 100::bigint,
              'issue 16: a claim of 10 at 100,000 rows reads at most 100 entries of workqueue and its indexes, not the stage''s 100,000');
reset plan_cache_mode;
select is((select array_agg(w.priority) from big_claim c join pepsi.workqueue w using (workqueue_id)),
          array_fill(-1000::smallint, array[20]), 'issue 16: the two claims took twenty rows of priority -1000');

select * from finish();
rollback;
