-- Bodies: deleted with their last record by the statement trigger
-- workqueue_body_release (D-144); workqueue_body_gc collects the rare
-- orphan (D-143).

begin;
select plan(39);

select has_trigger('pepsi', 'workqueue', 'workqueue_body_release', 'D-144: workqueue has the trigger workqueue_body_release');
select trigger_is('pepsi', 'workqueue', 'workqueue_body_release', 'pepsi', 'workqueue_body_release',
                  'D-144: the trigger runs pepsi.workqueue_body_release()');
select ok((select tgtype & 1 = 0 and tgtype & 2 = 0 and tgtype & 8 = 8 and tgoldtable is not null
             from pg_trigger where tgrelid = 'pepsi.workqueue'::regclass and tgname = 'workqueue_body_release'),
          'D-144: it is an AFTER DELETE statement trigger with a transition table (one statement per batch)');
select has_function('pepsi', 'workqueue_body_gc', array['integer', 'timestamp with time zone'], 'D-143: workqueue_body_gc(limit, now) exists');
select function_returns('pepsi', 'workqueue_body_gc', array['integer', 'timestamp with time zone'], 'integer',
                        'D-143: workqueue_body_gc returns a count');

-- D-144: a body shared by split records ---------------------------------------------------------

select pepsi.workqueue_inject('split', p_body => 'shared body', p_headers => 'H: 1') as sib1 \gset
select body_id as shared from pepsi.workqueue where workqueue_id = :sib1 \gset
insert into pepsi.workqueue (stage, body_id) values ('split', :shared) returning workqueue_id as sib2 \gset
insert into pepsi.workqueue (stage, body_id) values ('split', :shared) returning workqueue_id as sib3 \gset

update pepsi.workqueue set status = 'running' where workqueue_id = :sib1;
select pepsi.workqueue_finish(:sib1, 'split') is null as x \gset
select is((select count(*) from pepsi.workqueue_body where body_id = :shared), 1::bigint,
          'D-144: finishing one of three siblings keeps the shared body');
delete from pepsi.workqueue where workqueue_id = :sib2;
select is((select count(*) from pepsi.workqueue_body where body_id = :shared), 1::bigint,
          'D-144: deleting the second sibling keeps the body for the third');
select throws_ok(format('delete from pepsi.workqueue_body where body_id = %s', :shared), '23503', null,
                 'a body still referenced cannot be deleted (foreign key)');
delete from pepsi.workqueue where workqueue_id = :sib3;
select is((select count(*) from pepsi.workqueue_body where body_id = :shared), 0::bigint,
          'D-144: deleting the last sibling deletes the body');

-- Siblings deleted together, and a sibling that survives a batch ----------------------------------

select pepsi.workqueue_inject('pair', p_body => 'pair body') as pair1 \gset
select body_id as pair_body from pepsi.workqueue where workqueue_id = :pair1 \gset
insert into pepsi.workqueue (stage, body_id) values ('pair', :pair_body);
select pepsi.workqueue_inject('keep', p_body => 'kept body') as keep1 \gset
select body_id as keep_body from pepsi.workqueue where workqueue_id = :keep1 \gset
insert into pepsi.workqueue (stage, body_id) values ('keep-sibling', :keep_body);

delete from pepsi.workqueue where stage in ('pair', 'keep');
select is((select count(*) from pepsi.workqueue_body where body_id = :pair_body), 0::bigint,
          'D-144: two siblings deleted in one statement take their body with them');
select is((select count(*) from pepsi.workqueue_body where body_id = :keep_body), 1::bigint,
          'D-144: a body whose sibling survives the batch delete is kept');

-- workqueue_finish deletes a message's own body ---------------------------------------------------------

select pepsi.workqueue_inject('fin', p_body => 'only mine') as fin \gset
select body_id as fin_body from pepsi.workqueue where workqueue_id = :fin \gset
update pepsi.workqueue set status = 'running' where workqueue_id = :fin;
select pepsi.workqueue_finish(:fin, 'fin') is null as x \gset
select is((select count(*) from pepsi.workqueue_body where body_id = :fin_body), 0::bigint,
          'D-144: finishing a message via workqueue_finish deletes its body');
select is((select count(*) from pepsi.workqueue_body where body_id = :keep_body), 1::bigint,
          'D-144: ... and no other body');

select pepsi.workqueue_inject('fin-hdr', p_headers => 'only headers') as finh \gset
select body_id as finh_body from pepsi.workqueue where workqueue_id = :finh \gset
delete from pepsi.workqueue where workqueue_id = :finh;
select is((select count(*) from pepsi.workqueue_body where body_id = :finh_body), 0::bigint,
          'D-144: a headers-only body row goes with its record too');

select pepsi.workqueue_inject('nobody') as nob \gset
select count(*) as bodies_before_nob from pepsi.workqueue_body \gset
select lives_ok(format('delete from pepsi.workqueue where workqueue_id = %s', :nob),
                'D-144: deleting a record without a body works');
select is((select count(*) from pepsi.workqueue_body), :bodies_before_nob::bigint,
          'D-144: deleting a record without a body deletes no body');

-- A batch DELETE of many rows removes all their bodies ----------------------------------------------------

create temp table many as
select id from pepsi.workqueue_inject_batch(
    (select jsonb_agg(jsonb_build_object('stage', 'many', 'body', 'body ' || i, 'headers', 'N: ' || i))
       from generate_series(1, 200) i)) id;
create temp table many_bodies as
select body_id from pepsi.workqueue where workqueue_id in (select id from many);
select is((select count(distinct body_id) from many_bodies), 200::bigint, 'setup: 200 messages with 200 bodies');
delete from pepsi.workqueue where stage = 'many';
select is((select count(*) from pepsi.workqueue_body where body_id in (select body_id from many_bodies)), 0::bigint,
          'D-144: one DELETE of 200 rows removes all 200 bodies');
select is((select count(*) from pepsi.workqueue_body where body_id = :keep_body), 1::bigint,
          'D-144: the batch delete leaves bodies that are still referenced');

-- D-143: workqueue_body_gc ------------------------------------------------------------------------------------

select is(pepsi.workqueue_body_gc(), 0, 'D-143: with no orphan, GC removes nothing');

insert into pepsi.workqueue_body (headers, created_at)
select 'orphan ' || i, now() - interval '2 minutes' from generate_series(1, 5) i;
insert into pepsi.workqueue_body (headers, created_at) values ('young orphan', now()) returning body_id as young \gset
insert into pepsi.workqueue_body (headers, created_at) values ('one minute old', now() - interval '1 minute') returning body_id as edge \gset
update pepsi.workqueue_body set created_at = now() - interval '1 hour' where body_id = :keep_body;

-- A body orphaned without the trigger: a record pointed elsewhere.
select pepsi.workqueue_inject('moved', p_body => 'moved away') as mv \gset
select body_id as mv_body from pepsi.workqueue where workqueue_id = :mv \gset
update pepsi.workqueue set body_id = null where workqueue_id = :mv;
update pepsi.workqueue_body set created_at = now() - interval '10 minutes' where body_id = :mv_body;

select is(pepsi.workqueue_body_gc(2), 2, 'D-143: GC honours p_limit and returns how many it removed');
select is((select count(*) from pepsi.workqueue_body where headers like 'orphan %' or body_id = :mv_body), 4::bigint,
          'D-143: ... leaving the other old orphans for the next pass');
select is(pepsi.workqueue_body_gc(0), 0, 'D-143: p_limit 0 removes nothing');
select is(pepsi.workqueue_body_gc(), 4, 'D-143: the next pass removes the remaining old orphans');
select is((select count(*) from pepsi.workqueue_body where headers like 'orphan %'), 0::bigint,
          'D-143: every old orphan is gone');
select is((select count(*) from pepsi.workqueue_body where body_id = :mv_body), 0::bigint,
          'D-143: GC collects a body orphaned by an update of body_id');
select is((select count(*) from pepsi.workqueue_body where body_id = :young), 1::bigint,
          'D-143: GC leaves a body younger than a minute (a writer may be about to reference it)');
select is((select count(*) from pepsi.workqueue_body where body_id = :edge), 1::bigint,
          'D-143: GC leaves a body exactly one minute old');
select is((select count(*) from pepsi.workqueue_body where body_id = :keep_body), 1::bigint,
          'D-143: GC leaves an old body that a record refers to');
select is(pepsi.workqueue_body_gc(), 0, 'D-143: a pass with nothing to collect removes nothing');

select is(pepsi.workqueue_body_gc(10000, now() + interval '1 minute 1 second'), 2,
          'D-143: with the clock moved on, the young and the edge orphans are collected');
select is((select count(*) from pepsi.workqueue_body where body_id in (:young, :edge)), 0::bigint,
          'D-143: ... and they are gone');
select is((select count(*) from pepsi.workqueue_body where body_id = :keep_body), 1::bigint,
          'D-143: a referenced body survives any clock');

insert into pepsi.workqueue_body (headers, created_at)
select 'bulk ' || i, now() - interval '1 day' from generate_series(1, 10005) i;
select is(pepsi.workqueue_body_gc(), 10000, 'D-143: one pass removes at most 10 000 bodies by default');
select is(pepsi.workqueue_body_gc(), 5, 'D-143: the next pass removes the rest');

select throws_ok($$select pepsi.workqueue_body_gc(-1)$$, 'PX003', null, 'PX003: GC with a negative limit');
select throws_ok($$select pepsi.workqueue_body_gc(null)$$, 'PX003', null, 'PX003: GC with a NULL limit');

-- workqueue_body_release is a trigger function, not an API.
select ok(not has_function_privilege('pepsi_runner', 'pepsi.workqueue_body_release()', 'execute')
          and not has_function_privilege('pepsi_worker', 'pepsi.workqueue_body_release()', 'execute'),
          'no duty role can call the trigger function directly');
select ok((select prosecdef from pg_proc where oid = 'pepsi.workqueue_body_release()'::regprocedure),
          'D-144: the trigger function is security definer (a worker''s finish needs it to delete bodies it cannot)');

select * from finish();
rollback;
