-- The worker API in SQL (issue 16): pepsi.worker_load gives a worker in
-- any language the messages it was handed that run at its stage, in the
-- order it was handed them, with the body, the per-address settings of
-- its stage and its NEXT / BOUNCE_STAGE (the published graph with the
-- overlay over it); never another stage's message. Refusals by code, and
-- who may call it.

begin;
select plan(27);

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

-- the graph a dispatcher published: a -> b, bounce to z
select pepsi.stage_served_publish(0, '[{"stage": "a", "program": "p", "refs": {"NEXT": "b", "BOUNCE_STAGE": "z"}},
                                       {"stage": "b", "program": "p"}, {"stage": "c", "program": "p"},
                                       {"stage": "z", "program": "p"}]');

create temp table m (name text primary key, id bigint) on commit drop;
insert into m values
    ('a1', pepsi.workqueue_inject('a', p_body => 'body one', p_headers => 'Subject: one', p_subject => 'one',
                                  p_envelope_sender => 'ann@x.org', p_recipients => '{bob@y.org,Cy@z.org}',
                                  p_state => '{"k": 1}')),
    ('a2', pepsi.workqueue_inject('a', p_body => 'body two', p_subject => 'two')),
    ('a3', pepsi.workqueue_inject('a', p_subject => 'three')),
    ('a_pending', pepsi.workqueue_inject('a', p_body => 'pending')),
    ('b1', pepsi.workqueue_inject('b', p_body => 'secret of b'));
grant select on m to public;
create function pg_temp.id(p_name text) returns bigint language sql stable as
$$ select id from m where name = p_name $$;
grant execute on function pg_temp.id(text) to public;
update pepsi.workqueue w set status = 'running', claimed_at = now()
 where w.workqueue_id in (pg_temp.id('a1'), pg_temp.id('a2'), pg_temp.id('a3'), pg_temp.id('b1'));
-- settings: bob's for stage a, cy's for a and b, someone else's for a
insert into pepsi.settings (address, stage, option, value) values
    ('bob@y.org', 'a', 'STATE_KEY', 'bobs'), ('cy@z.org', 'a', 'STATE_KEY', 'cys'),
    ('cy@z.org', 'b', 'OTHER', 'no'), ('dan@x.org', 'a', 'STATE_KEY', 'dans');

create function pg_temp.ids(p_names text[]) returns bigint[] language sql stable as
$$ select array_agg(pg_temp.id(n) order by o) from unnest(p_names) with ordinality u(n, o) $$;
grant execute on function pg_temp.ids(text[]) to public;
create function pg_temp.names_of(p_stage text, p_names text[]) returns text language sql stable as
$$ select coalesce(string_agg(m.name, ' ' order by l.ord), '')
     from pepsi.worker_load(p_stage, pg_temp.ids(p_names)) with ordinality l(workqueue_id, t, sk, es, r, hf, s, st, at, h, b, se, n, bo, ord)
     join m on m.id = l.workqueue_id $$;

-- What it returns ----------------------------------------------------------------------

select has_function('pepsi', 'worker_load', array['text', 'bigint[]', 'boolean'],
                    'issue 16: pepsi.worker_load(text, bigint[], boolean) exists');
select isnt(obj_description('pepsi.worker_load(text, bigint[], boolean)'::regprocedure, 'pg_proc'), null,
            'it has a comment');
select is(pg_temp.names_of('a', '{a3,b1,a1,a_pending,a2}'), 'a3 a1 a2',
          'issue 16: only the ids running at p_stage, in the order of p_ids (another stage''s and a pending one left out)');
select is(pg_temp.names_of('a', '{a2,a1}'), 'a2 a1', 'issue 16: another order, the same order back');
select is(pg_temp.names_of('b', '{a1,a2,a3,b1}'), 'b1', 'issue 16: stage b gets only b''s message');
select is(pg_temp.names_of('c', '{a1,a2,a3,b1}'), '', 'issue 16: a stage with no running message gets nothing');
select is((select count(*)::int from pepsi.worker_load('a', array[pg_temp.id('a1'), 999999999, pg_temp.id('a1')])),
          2, 'an unknown id is left out; an id given twice comes twice');
select is((select count(*)::int from pepsi.worker_load('a', '{}')), 0, 'an empty array: no rows');
select is((select row(l.tube, l.sender_key, l.envelope_sender, l.recipients, l.header_from, l.subject, l.state)::text
             from pepsi.worker_load('a', array[pg_temp.id('a1')]) l),
          row('default', 'from:x.org', 'ann@x.org', '{bob@y.org,Cy@z.org}'::text[], null::text, 'one',
              '{"k": 1}'::jsonb)::text,
          'issue 16: the envelope the C SDK loads: tube, sender_key, envelope sender, recipients, From, Subject, state');
select is((select l.arrived_at = w.arrived_at from pepsi.worker_load('a', array[pg_temp.id('a1')]) l
             join pepsi.workqueue w using (workqueue_id)), true, 'and arrived_at');
select is((select l.headers || '|' || convert_from(l.body, 'UTF8')
             from pepsi.worker_load('a', array[pg_temp.id('a1')]) l), 'Subject: one|body one',
          'issue 16: the header block and the body');
select is((select count(*)::int from pepsi.worker_load('a', pg_temp.ids('{a1,a2,a3}'), false) l
            where l.headers is null and l.body is null), 3, 'p_body false: neither header block nor body');
select is((select count(*)::int from pepsi.worker_load('a', array[pg_temp.id('a3')]) l where l.body is null), 1,
          'a message without a body: body NULL');
select is((select l.settings from pepsi.worker_load('a', array[pg_temp.id('a1')]) l),
          '{"bob@y.org": {"STATE_KEY": "bobs"}, "cy@z.org": {"STATE_KEY": "cys"}}'::jsonb,
          'issue 16 (D-122, D-123): the settings of p_stage for the message''s recipients, by address (not b''s, not dan''s)');
select is((select l.settings from pepsi.worker_load('a', array[pg_temp.id('a2')]) l), null,
          'no settings: NULL');
select is((select string_agg(distinct l.next_stage || '/' || l.bounce_stage, ',')
             from pepsi.worker_load('a', pg_temp.ids('{a1,a2}')) l), 'b/z',
          'issue 16: NEXT and BOUNCE_STAGE of the published graph');
select is((select coalesce(l.next_stage, 'none') from pepsi.worker_load('b', array[pg_temp.id('b1')]) l), 'none',
          'a stage without NEXT: next_stage NULL (the message finishes)');

-- the overlay over the file's section, as pepsi.config_graph merges them
insert into pepsi.config_override (section, key, value) values ('stage-a', 'NEXT', 'c');
select is((select l.next_stage from pepsi.worker_load('a', array[pg_temp.id('a1')]) l), 'c',
          'issue 16: the overlay''s NEXT over the published one');
select is((select (select g.refs ->> 'NEXT' from pepsi.config_graph() g where g.stage = 'a') = l.next_stage
                  and (select g.refs ->> 'BOUNCE_STAGE' from pepsi.config_graph() g where g.stage = 'a') = l.bounce_stage
             from pepsi.worker_load('a', array[pg_temp.id('a1')]) l), true,
          'next_stage and bounce_stage agree with pepsi.config_graph');
update pepsi.config_override set value = '' where section = 'stage-a' and key = 'NEXT';
select is((select coalesce(l.next_stage, 'none') from pepsi.worker_load('a', array[pg_temp.id('a1')]) l), 'none',
          'an overlay NEXT of '''' unsets it');
delete from pepsi.config_override;

-- Refusals ------------------------------------------------------------------------------

select is(array[pg_temp.outcome($$select * from pepsi.worker_load(null, '{1}')$$),
                pg_temp.outcome($$select * from pepsi.worker_load('-bad', '{1}')$$),
                pg_temp.outcome($$select * from pepsi.worker_load('a', null)$$),
                pg_temp.outcome($$select * from pepsi.worker_load('a', '{1}', null)$$),
                pg_temp.outcome($$select * from pepsi.worker_load('a', array(select generate_series(1, 10001)::bigint))$$)],
          '{PX001,PX001,PX003,PX003,PX003}',
          'issue 16: refused: stage NULL or invalid (PX001), ids NULL, p_body NULL, more than 10,000 ids (PX003)');

-- Security --------------------------------------------------------------------------------

select is((select p.prosecdef and array_to_string(p.proconfig, ',') like 'search_path=%'
             from pg_proc p where p.oid = 'pepsi.worker_load(text, bigint[], boolean)'::regprocedure), true,
          'security definer with its own search_path');

create temp table calls (i int, sql text) on commit drop;
insert into calls values
    (1, $$select count(*) from pepsi.worker_load('a', pg_temp.ids('{a1,a2}'))$$),
    (2, $$select count(*) from pepsi.worker_load('a', pg_temp.ids('{b1}'))$$);
grant select on calls to public;
create function pg_temp.calls_as() returns text[] language sql as
$$ select array_agg(pg_temp.outcome(sql) order by i) from calls $$;
grant execute on function pg_temp.calls_as() to public;

set local role pepsi_worker;
select is(pg_temp.calls_as(), '{ok,ok}', 'issue 16: pepsi_worker may call worker_load');
select is((select count(*)::int from pepsi.worker_load('a', pg_temp.ids('{b1,a1}'))), 1,
          'issue 16: and gets no other stage''s message through it');
reset role;
set local role pepsi_reader;
select is(pg_temp.calls_as(), '{42501,42501}', 'issue 16: pepsi_reader may not (42501: it never reads a body)');
reset role;
set local role pepsi_ingress;
select is(pg_temp.calls_as(), '{42501,42501}', 'issue 16: pepsi_ingress may not (42501)');
reset role;
set local role pepsi_runner;
select is(pg_temp.calls_as(), '{42501,42501}', 'pepsi_runner may not (42501)');
reset role;

select * from finish();
rollback;
