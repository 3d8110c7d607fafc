-- workqueue_claim_fair (D-53, D-54, D-57..D-61) and the view sender_backlog,
-- on small hand-built queues. The plan and the rows read at 1,000,000
-- pending rows are in 14-claim-fair-plan.sql. A few tests drive the claim
-- the way the dispatcher does (pg_temp.sim_claim below: leads passed in,
-- lead_floor subtracted, each claimed row charged, window_next and
-- fifo_credit passed back), so that rotation and shares show over many
-- calls. The clock is p_now, never slept.

begin;
select plan(117);

select has_function('pepsi', 'workqueue_claim_fair',
                    array['text[]', 'integer[]', 'double precision[]', 'text[]', 'text[]', 'double precision[]',
                          'integer', 'text[]', 'integer[]', 'timestamp with time zone', 'boolean', 'integer', 'bigint',
                          'double precision[]', 'double precision[]', 'boolean[]', 'integer'],
                    'workqueue_claim_fair(stages, caps, avg_usec, lead stages, lead senders, leads, fifo percent, window, credit, now, release_paused, window size, claim id, lead base, lead scale, lead sync, owner slot) exists');
select function_privs_are('pepsi', 'workqueue_claim_fair',
                          array['text[]', 'integer[]', 'double precision[]', 'text[]', 'text[]', 'double precision[]',
                                'integer', 'text[]', 'integer[]', 'timestamp with time zone', 'boolean', 'integer', 'bigint',
                                'double precision[]', 'double precision[]', 'boolean[]', 'integer'],
                          'pepsi_runner', array['EXECUTE'], 'pepsi_runner may call workqueue_claim_fair');
select function_privs_are('pepsi', 'workqueue_claim_fair',
                          array['text[]', 'integer[]', 'double precision[]', 'text[]', 'text[]', 'double precision[]',
                                'integer', 'text[]', 'integer[]', 'timestamp with time zone', 'boolean', 'integer', 'bigint',
                                'double precision[]', 'double precision[]', 'boolean[]', 'integer'],
                          'pepsi_worker', array[]::text[], 'pepsi_worker may not call workqueue_claim_fair (D-39)');

create temp table claimed (call int, workqueue_id bigint, stage text, sender_key text, fifo boolean,
                           window_next text, window_lap boolean, fifo_credit int, lead_floor float8, leads_lost boolean,
                           pos serial);

-- Rows of a sender: n rows at p_stage, sender_key 'user:' || p_user.
create function pg_temp.queue(p_stage text, p_user text, p_n int)
returns int language sql as $$
    with i as (insert into pepsi.workqueue (stage, origin_user)
               select p_stage, p_user from generate_series(1, p_n)
               returning 1)
    select count(*)::int from i
$$;

create function pg_temp.ids(p_stage text, p_user text)
returns bigint[] language sql as $$
    select array_agg(workqueue_id order by workqueue_id) from pepsi.workqueue
     where stage = p_stage and sender_key = 'user:' || p_user
$$;

-- The dispatcher, in SQL, as runner/src/dispatch/fair.c does it: leads per (stage,
-- sender); per stage the window, the FIFO credit and the smallest
-- lead_floor since the last lap (acc); the cost of a message per sender
-- (default: the average). After a claim: lead_floor is subtracted from
-- every lead when the window held every waiting sender, else the smallest
-- lead_floor since the last lap is subtracted at the next lap (and the lap
-- window's own floor carried on); leads under one average are forgotten;
-- each claimed row is charged its cost.
create temp table sim_lead (stage text, sender text, lead float8, primary key (stage, sender));
create temp table sim_state (stage text primary key, after text, credit int, acc float8);
create temp table sim_cost (sender text primary key, usec float8);
create temp table xstats_k (n bigint);

create function pg_temp.sim_claim(p_call int, p_stage text, p_cap int, p_avg float8, p_percent int,
                                  p_rotate boolean default true)
returns int language plpgsql as $$
declare
    v_ls text[]; v_lsend text[]; v_lead float8[];
    v_after text; v_credit int; v_acc float8; v_n int;
    v_floor float8; v_next text; v_lap boolean; v_next_credit int; v_apply float8 := 0;
begin
    select coalesce(array_agg(l.stage order by l.sender), '{}'), coalesce(array_agg(l.sender order by l.sender), '{}'),
           coalesce(array_agg(l.lead order by l.sender), '{}')
      into v_ls, v_lsend, v_lead
      from sim_lead l where l.stage = p_stage;
    select s.after, s.credit, s.acc into v_after, v_credit, v_acc from sim_state s where s.stage = p_stage;
    insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
    select p_call, c.*
      from pepsi.workqueue_claim_fair(array[p_stage], array[p_cap], array[p_avg], v_ls, v_lsend, v_lead, p_percent,
                                      array[v_after], array[v_credit]) c;
    get diagnostics v_n = row_count;
    if v_n = 0 then
        return 0;
    end if;
    select c.lead_floor, c.window_next, c.window_lap, c.fifo_credit into v_floor, v_next, v_lap, v_next_credit
      from claimed c where c.call = p_call limit 1;
    if v_next is null then
        v_apply := v_floor;
        v_acc := null;
    else
        v_acc := least(v_acc, v_floor);
        if v_lap then
            v_apply := v_acc;
            v_acc := v_floor - v_apply;
        end if;
    end if;
    insert into sim_state values (p_stage, case when p_rotate then v_next end, v_next_credit, v_acc)
        on conflict (stage) do update set after = excluded.after, credit = excluded.credit, acc = excluded.acc;
    update sim_lead l set lead = l.lead - v_apply where l.stage = p_stage;
    delete from sim_lead l where l.stage = p_stage and l.lead < p_avg;
    insert into sim_lead
    select p_stage, c.sender_key, sum(coalesce(k.usec, p_avg))
      from claimed c left join sim_cost k on k.sender = c.sender_key
     where c.call = p_call
     group by c.sender_key
        on conflict (stage, sender) do update set lead = sim_lead.lead + excluded.lead;
    return v_n;
end $$;

-- One sender: the fair claim is the plain claim (D-41, D-53) ---------------------------------

select pg_temp.queue('one', 'solo', 20) is not null as x \gset
select pg_temp.queue('two', 'duo', 5) is not null as x \gset
select pg_temp.queue('other', 'x', 3) is not null as x \gset

savepoint plain;
select array_agg(workqueue_id order by stage, workqueue_id) as plain_ids
  from pepsi.workqueue_claim('{one,two}', '{7,3}') \gset
rollback to savepoint plain;

insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 1, * from pepsi.workqueue_claim_fair('{one,two}', '{7,3}', '{1000,1000}', '{}', '{}', '{}');
select is((select array_agg(workqueue_id order by stage, workqueue_id) from claimed where call = 1), :'plain_ids'::bigint[],
          'D-53: with one sender per stage the fair claim takes exactly the rows of the plain claim (oldest first)');
select is((select array_agg(workqueue_id order by pos) from claimed where call = 1),
          (pg_temp.ids('one', 'solo'))[1:7] || (pg_temp.ids('two', 'duo'))[1:3],
          'the rows come grouped by stage in p_stages order, oldest first within a stage');
select ok((select bool_and(w.status = 'running' and w.claimed_at = now()) from claimed c join pepsi.workqueue w using (workqueue_id)
            where c.call = 1),
          'D-38: claimed rows are running with claimed_at = p_now (default now())');
select is((select count(*) from pepsi.workqueue where stage = 'other' and status = 'pending'), 3::bigint,
          'D-38: a stage not in the array is untouched');
select is((select array_agg(distinct sender_key) from claimed where call = 1 and stage = 'one'), '{user:solo}'::text[],
          'the claim returns each row''s sender_key');
select is((select count(*) from claimed where call = 1 and fifo), 2::bigint,
          'D-57: with no credit passed, the FIFO share rounds up: one slot of 7 and one of 3 at 10 %');
select is((select array_agg(distinct fifo_credit) from claimed where call = 1 and stage = 'one'), '{69}'::int[],
          'D-57: fifo_credit carries the remainder: 99 + 7 * 10 = 169, one slot, 69 left');
select ok((select bool_and(window_next is null and lead_floor = 0) from claimed where call = 1),
          'D-60: window_next is NULL when the window held every waiting sender; lead_floor 0 without leads');

savepoint plain2;
select array_agg(workqueue_id order by workqueue_id) as plain_ids2
  from pepsi.workqueue_claim('{one}', '{5}') \gset
rollback to savepoint plain2;
select is((select array_agg(c.workqueue_id order by c.workqueue_id)
             from pepsi.workqueue_claim_fair('{one}', '{5}', '{250}', '{one}', '{user:solo}', '{123456}', 0) c),
          :'plain_ids2'::bigint[], 'D-53: a lone sender with a lead still gets the oldest rows, as the plain claim would');

-- Ranking by L + k * avg (D-53) ---------------------------------------------------------------

-- Stage r: a (lead 0 passed explicitly), b (lead 2500), c (no entry: 0),
-- rows interleaved so that id order differs from rank order.
select count(*) >= 0 as x from (
    select pg_temp.queue('r', u, 1) from unnest('{b,b,a,c,b,a,a,c,b,a,a,b,c}'::text[]) with ordinality u(u, i) order by i) q \gset
select pg_temp.ids('r', 'a') as ra, pg_temp.ids('r', 'b') as rb, pg_temp.ids('r', 'c') as rc \gset

-- Expected by hand, avg 1000, k from 0:
--   a: 0, 1000, 2000, 3000, 4000    b: 2500, 3500, 4500, 5500, 6500    c: 0, 1000, 2000
-- order (ties by workqueue_id): a1 c1 | a2 c2 | a3 c3 | b1 | a4 | b2 | a5
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 2, * from pepsi.workqueue_claim_fair('{r}', '{9}', '{1000}', '{r,r}', '{user:a,user:b}', '{0,2500}', 0);
select is((select array_agg(workqueue_id order by pos) from claimed where call = 2),
          array[(:'ra'::bigint[])[1], (:'rc'::bigint[])[1], (:'ra'::bigint[])[2], (:'rc'::bigint[])[2],
                (:'ra'::bigint[])[3], (:'rc'::bigint[])[3], (:'rb'::bigint[])[1], (:'ra'::bigint[])[4],
                (:'rb'::bigint[])[2]],
          'D-53: rows are claimed by L + k * avg, k from 0, ties by workqueue_id (hand-computed order)');
select is((select count(*) from claimed where call = 2 and fifo), 0::bigint, 'D-57: FIFO percent 0 gives no FIFO slot');
select is((select max(lead_floor) from claimed where call = 2), 0::float8,
          'lead_floor is 0 when a window sender has no lead entry (level with the least served)');
select is((select count(*) from pepsi.workqueue where stage = 'r' and status = 'pending'), 4::bigint,
          'D-38: the rest of the stage stays pending');

-- The same against a reference ranking written from the spec's sentence,
-- with leads for every sender, several averages and caps.
create temp table ref_case (n int, cap int, avg float8, la float8, lb float8, lc float8);
insert into ref_case values (1, 1, 1000, 0, 0, 0), (2, 4, 1000, 3000, 0, 500), (3, 13, 700, 100, 5000, 0),
                            (4, 6, 1, 0, 2, 4), (5, 7, 1e6, 1, 2, 3);
create function pg_temp.ref_check(p_n int)
returns boolean language plpgsql as $$
declare
    v ref_case;
    v_got bigint[];
    v_want bigint[];
begin
    select * into v from ref_case where n = p_n;
    select array_agg(x.workqueue_id order by x.rank, x.workqueue_id) into v_want
      from (select w.workqueue_id,
                   l.lead + (row_number() over (partition by w.sender_key order by w.workqueue_id) - 1) * v.avg as rank
              from pepsi.workqueue w
              join (values ('user:a', v.la), ('user:b', v.lb), ('user:c', v.lc)) l(sender, lead) on l.sender = w.sender_key
             where w.stage = 'r' and w.status = 'pending'
             order by 2, 1 limit v.cap) x;
    select array_agg(c.workqueue_id order by c.workqueue_id) into v_got
      from pepsi.workqueue_claim_fair('{r}', array[v.cap], array[v.avg], '{r,r,r}', '{user:a,user:b,user:c}',
                                      array[v.la, v.lb, v.lc], 0) c;
    select array_agg(u order by u) into v_want from unnest(v_want) u;
    if v_got is distinct from v_want then
        raise notice 'case %: got %, want %', p_n, v_got, v_want;
    end if;
    return v_got is not distinct from v_want;
end $$;
update pepsi.workqueue set status = 'pending', claimed_at = null where stage = 'r';
savepoint ref;
select ok(pg_temp.ref_check(1), 'D-53: reference ranking, cap 1, all level: the oldest row');
rollback to savepoint ref;
select ok(pg_temp.ref_check(2), 'D-53: reference ranking, cap 4, leads 3000/0/500');
rollback to savepoint ref;
select ok(pg_temp.ref_check(3), 'D-53: reference ranking, cap 13 (the whole stage), avg 700, leads 100/5000/0');
rollback to savepoint ref;
select ok(pg_temp.ref_check(4), 'D-53: reference ranking, avg 1 µs, leads of 0/2/4 µs');
rollback to savepoint ref;
select ok(pg_temp.ref_check(5), 'D-53: reference ranking, avg much larger than the leads: strict rotation by k');
rollback to savepoint ref;

-- A repeated (stage, sender) counts with its largest lead; a lead passed
-- for another stage does not apply.
select is((select array_agg(c.sender_key order by c.workqueue_id)
             from pepsi.workqueue_claim_fair('{r}', '{2}', '{1000}', '{r,r,q}', '{user:a,user:a,user:c}', '{10,90000,90000}', 0) c),
          '{user:b,user:c}'::text[],
          'leads: a repeated (stage, sender) takes its largest lead; a lead of another stage does not count');
rollback to savepoint ref;

-- A sender with 1,000 rows takes turns with a sender with one row (D-53) ----------------------------

select pg_temp.queue('t', 'many', 1000) is not null as x \gset
select pg_temp.queue('t', 'single', 1) is not null as x \gset
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3, * from pepsi.workqueue_claim_fair('{t}', '{2}', '{1000}', '{}', '{}', '{}', 0);
select is((select array_agg(sender_key order by sender_key) from claimed where call = 3), '{user:many,user:single}'::text[],
          'D-53: a sender with 1,000 waiting rows and one with a single row are both served in the same claim (cap 2)');
select is((select workqueue_id from claimed where call = 3 and sender_key = 'user:many'), (pg_temp.ids('t', 'many'))[1],
          'D-53: ... the big sender with its oldest row');
update pepsi.workqueue set status = 'pending', claimed_at = null where stage = 't';
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 4, * from pepsi.workqueue_claim_fair('{t}', '{2}', '{1000}', '{}', '{}', '{}');
select is((select array_agg(sender_key || ':' || fifo order by pos) from claimed where call = 4),
          '{user:many:true,user:single:false}'::text[],
          'D-53, D-57: at 10 % with no credit the FIFO slot takes the oldest row, the other slot the single row');
update pepsi.workqueue set status = 'pending', claimed_at = null where stage = 't';
select is((select count(*) from pepsi.workqueue_claim_fair('{t}', '{1}', '{1000}', '{t}', '{user:many}', '{1000}', 0) c
            where c.sender_key = 'user:single'), 1::bigint,
          'D-53: cap 1: the single row goes before the big sender, which has had one message more');
update pepsi.workqueue set status = 'pending', claimed_at = null where stage = 't';
-- Few senders, one cut short: single (1 row, lead 0) and many (lead 100
-- messages) at cap 16: the first read stops many at depth 8 (the bound
-- for c = 2 senders), finds 9 rows < 16, and reads many on to cap.
select is((select array_agg(c.workqueue_id order by c.workqueue_id)
             from pepsi.workqueue_claim_fair('{t}', '{16}', '{1000}', '{t}', '{user:many}', '{100000}', 0) c),
          (pg_temp.ids('t', 'many'))[1:15] || pg_temp.ids('t', 'single'),
          'D-61: when the stage has fewer candidates than cap, a sender cut at its depth is read on (single + 15 of many)');
update pepsi.workqueue set status = 'pending', claimed_at = null where stage = 't';

-- Expensive senders get fewer slots (D-49, D-50, D-53) --------------------------------------------------

-- Sender cheap's messages take 1 ms, dear's 10 ms, the stage average is
-- 1 ms; 330 claims of one slot each, every claimed row charged its cost.
select sum(pg_temp.queue('x', s, 400)) as x from unnest('{dear,cheap}'::text[]) s \gset
insert into sim_cost values ('user:cheap', 1000), ('user:dear', 10000);
select sum(pg_temp.sim_claim(1000 + i, 'x', 1, 1000, 0)) as x_claimed from generate_series(1, 330) i \gset
select is(:x_claimed::int, 330, 'setup: 330 claims of one slot each at stage x');
select is((select count(*) from claimed where call > 1000 and sender_key = 'user:dear'), 30::bigint,
          'D-53: the sender whose messages cost 10x gets 1/11 of the slots (30 of 330)');
select is((select count(*) from claimed where call > 1000 and sender_key = 'user:cheap'), 300::bigint,
          'D-53: ... and the cheap sender 10/11 (300 of 330): an equal share of worker time');
select cmp_ok((select max(lead) from sim_lead where stage = 'x'), '<', 10001::float8,
              'D-48: leads stay within one expensive message of the least served (lead_floor subtracted)');

-- Given leads, the sender with the higher lead gets fewer slots in one claim.
select is((select count(*) from pepsi.workqueue_claim_fair('{x}', '{10}', '{1000}', '{x,x}', '{user:dear,user:cheap}',
                                                           '{4000,0}', 0) c where c.sender_key = 'user:dear'), 3::bigint,
          'D-53: lead 4000 against 0, avg 1000, cap 10: the leading sender gets 3 slots, the other 7');

-- The FIFO share (D-57) ------------------------------------------------------------------------------

-- Stage f: old has the 5 oldest rows and a lead that never lets it win by
-- rank; 30 younger senders have one row each.
select pg_temp.queue('f', 'old', 5) is not null as x \gset
select sum(pg_temp.queue('f', 'young' || i, 1)) as x from generate_series(10, 39) i \gset
create temp table f_old as select unnest(pg_temp.ids('f', 'old')) as workqueue_id;
insert into sim_lead values ('f', 'user:old', 1e12);
insert into sim_cost values ('user:old', 0);
select sum(pg_temp.sim_claim(2000 + i, 'f', 1, 1000, 10)) as x from generate_series(1, 30) i \gset
select is((select array_agg(call order by call) from claimed where call between 2001 and 2030 and sender_key = 'user:old'),
          '{2001,2011,2021}'::int[],
          'D-57: cap 1 at 10 %: the oldest row is served on the 1st claim (no credit: rounds up), then every 10th');
select ok((select bool_and(fifo) from claimed where call between 2001 and 2030 and sender_key = 'user:old'),
          'D-57: ... through the FIFO share (fifo = true), whatever the sender''s lead');
select is((select array_agg(workqueue_id order by call) from claimed where call between 2001 and 2030 and sender_key = 'user:old'),
          (select (array_agg(workqueue_id order by workqueue_id))[1:3] from f_old),
          'D-57: ... oldest first');
select is((select array_agg(fifo_credit order by call) from claimed where call between 2001 and 2012),
          '{9,19,29,39,49,59,69,79,89,99,9,19}'::int[],
          'D-57: fifo_credit counts hundredths of a slot: + 10 per claimed slot, one FIFO slot per 100');
select is((select count(distinct sender_key) from claimed where call between 2001 and 2030 and not fifo), 27::bigint,
          'D-57: the other 27 slots went by rank, each to a different young sender');

select count(*) >= 0 as x from (select pg_temp.sim_claim(2100 + i, 'f', 1, 1000, 0) from generate_series(1, 3) i) s \gset
select is((select count(*) from claimed where call between 2101 and 2103 and sender_key = 'user:old'), 0::bigint,
          'D-57: at 0 % the sender with the huge lead is not served while the 3 other senders wait');
select is((select count(*) from pepsi.workqueue_claim_fair('{f}', '{3}', '{1000}', '{f}', '{user:old}', '{1e12}', 100) c
            where c.fifo and c.sender_key = 'user:old'), 2::bigint,
          'D-57: at 100 % every slot is FIFO: the 2 remaining rows of old, whatever its lead');

select is((select array_agg(c.fifo_credit) from pepsi.workqueue_claim_fair('{f2}', '{16}', '{1000}', '{}', '{}', '{}', 10) c),
          null::int[], 'a stage with nothing pending returns no rows');
select sum(pg_temp.queue('f2', 'z' || i, 2)) as x from generate_series(1, 20) i \gset
select is((select count(*) from pepsi.workqueue_claim_fair('{f2}', '{16}', '{1000}', '{}', '{}', '{}', 10) c where c.fifo),
          2::bigint, 'D-57: no credit passed, cap 16 at 10 %: ceil(1.6) = 2 FIFO slots');
select is((select count(*) from pepsi.workqueue_claim_fair('{f2}', '{16}', '{1000}', '{}', '{}', '{}', 10, null, '{0}') c
            where c.fifo), 1::bigint, 'D-57: credit 0, cap 16 at 10 %: floor(1.6) = 1 FIFO slot');
select is((select array_agg(distinct c.fifo_credit) from pepsi.workqueue_claim_fair('{f2}', '{3}', '{1000}', '{}', '{}', '{}', 10, null, '{95}') c),
          '{25}'::int[], 'D-57: credit 95 + 3 slots * 10 = 125: one FIFO slot, 25 carried');

-- The 64-sender window and its rotation (D-59, D-60) ----------------------------------------------

-- 200 senders w000..w199 with two rows each, queued so that sender order
-- and id order differ (w199's rows are the oldest).
select count(*) >= 0 as x from (
    select pg_temp.queue('w', 'w' || lpad(i::text, 3, '0'), 2) from generate_series(199, 0, -1) i) q \gset
select array_agg(s order by s) as w_senders from (select distinct sender_key s from pepsi.workqueue where stage = 'w') d \gset

savepoint win;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3001, * from pepsi.workqueue_claim_fair('{w}', '{200}', '{1000}', '{}', '{}', '{}', 0);
select is((select count(distinct sender_key) from claimed where call = 3001), 64::bigint,
          'D-60: one claim considers at most 64 senders (cap 200 > 64 senders x 2 rows: 128 rows of 64 senders)');
select is((select array_agg(distinct sender_key order by sender_key) from claimed where call = 3001),
          (:'w_senders'::text[])[1:64], 'D-59: the window is the first 64 senders in sender_key order');
select is((select array_agg(distinct window_next) from claimed where call = 3001), array[(:'w_senders'::text[])[64]],
          'D-60: window_next is the window''s 64th sender');
rollback to savepoint win;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3002, * from pepsi.workqueue_claim_fair('{w}', '{200}', '{1000}', '{}', '{}', '{}', 0, array['user:w180']);
select is((select array_agg(distinct sender_key order by sender_key) from claimed where call = 3002),
          (:'w_senders'::text[])[1:45] || (:'w_senders'::text[])[182:200],
          'D-60: the window starts after p_window_after and wraps around: w181..w199, then w000..w044 (19 + 45 = 64)');
select is((select array_agg(distinct window_next) from claimed where call = 3002), array[(:'w_senders'::text[])[45]],
          'D-60: ... window_next after a wrap is the 64th sender of the window (w044)');
rollback to savepoint win;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3003, * from pepsi.workqueue_claim_fair('{w}', '{400}', '{1000}', '{}', '{}', '{}', 0, array['user:w169']);
select is((select count(distinct sender_key) from claimed where call = 3003), 64::bigint,
          'D-60: a window that starts late still takes 64 senders');
rollback to savepoint win;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3004, * from pepsi.workqueue_claim_fair('{w}', '{200}', '{1000}', '{}', '{}', '{}', 0, array['user:w190'], null,
                                              now(), false, 20);
select is((select array_agg(distinct sender_key order by sender_key) from claimed where call = 3004),
          (:'w_senders'::text[])[1:11] || (:'w_senders'::text[])[192:200],
          'D-60: p_window_size 20: the window is 20 senders (w191..w199, then w000..w010)');
select row_eq($$select distinct window_next, window_lap from claimed where call = 3004$$,
              row((:'w_senders'::text[])[11], true),
              'D-60: ... window_next is its 20th sender; window_lap: it passed the end of the sender order');
rollback to savepoint win;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 3005, * from pepsi.workqueue_claim_fair('{w}', '{200}', '{1000}', '{}', '{}', '{}', 0, null, null, now(), false, 1);
select row_eq($$select count(*), min(sender_key), bool_and(window_next = sender_key), bool_or(window_lap) from claimed where call = 3005$$,
              row(2::bigint, (:'w_senders'::text[])[1], true, false),
              'D-60: p_window_size 1: both rows of the first sender; window_next is that sender; no lap');
rollback to savepoint win;

-- The dispatcher's loop: cap 8, leads charged, window passed back.
select sum(pg_temp.sim_claim(3100 + i, 'w', 8, 1000, 0)) as x from generate_series(1, 26) i \gset
select is((select count(distinct sender_key) from claimed where call between 3101 and 3126), 200::bigint,
          'D-60: with the window passed back, all 200 senders are served within 26 claims of 8 (FIFO 0 %)');
select is((select max(n) from (select count(*) as n from claimed where call between 3101 and 3126 group by sender_key) x), 2::bigint,
          'D-53: ... and no sender has had a third row meanwhile');
rollback to savepoint win;
select sum(pg_temp.sim_claim(3300 + i, 'w', 8, 1000, 10)) as x from generate_series(1, 30) i \gset
select is((select count(distinct sender_key) from claimed where call between 3301 and 3330), 200::bigint,
          'D-60: at FIFO 10 % all 200 senders are served within 30 claims of 8');
rollback to savepoint win;
delete from sim_lead where stage = 'w';
delete from sim_state where stage = 'w';
select sum(pg_temp.sim_claim(3200 + i, 'w', 8, 1000, 0, false)) as x from generate_series(1, 16) i \gset
select is((select count(distinct sender_key) from claimed where call between 3201 and 3216 and sender_key > 'user:w099'), 0::bigint,
          'D-60: without rotation (window_next not passed back) the window stays on the first waiting senders: after 16 claims w100..w199 have had nothing');
rollback to savepoint win;

select is((select array_agg(distinct c.window_next) from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 0,
                                                                                  array['user:zzz']) c),
          array[null::text], 'D-60: a window after the last sender wraps to the first; window_next NULL with few senders');

-- lead_floor: the least-served waiting sender (D-48, D-54) ---------------------------------------------

select is((select max(c.lead_floor) from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r,r,r,r}',
                                                                   '{user:a,user:b,user:c,user:gone}', '{3000,7000,5000,1}', 0) c),
          3000::float8, 'D-54: lead_floor is the smallest lead among the waiting senders (a sender not waiting does not count)');
select is((select c.sender_key from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r,r,r}',
                                                              '{user:a,user:b,user:c}', '{3000,7000,5000}', 0) c),
          'user:a', 'D-53: ... and that sender is served first');
select is((select c.sender_key from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r,r}',
                                                              '{user:a,user:c}', '{3000,2000}', 0) c),
          'user:b', 'D-54: a waiting sender without a lead entry is level with the least served (lead 0), ahead of leads');

-- Kept leads: every sender with a lead ranks by it, past 256 senders too (issue 12) -------------

-- Stage k: 10,000 waiting senders k00000..k09999, one row each, queued in
-- an order unlike the sender order; sender i has the lead
-- 2000 + 10 * ((i * 7919 + 5000) % 10000) µs, all distinct, the smallest
-- (2000) is k05000's, the 5,001st sender. The dispatcher of incarnation 7
-- sends them all at once (p_lead_sync, cap 0: nothing claimed), as it does
-- at its first leads; claims after that pass no lead at all.
insert into pepsi.workqueue (stage, origin_user)
select 'k', 'k' || lpad(i::text, 5, '0') from generate_series(0, 9999) i order by md5(i::text);
create temp table k_lead as
select 'user:k' || lpad(i::text, 5, '0') as sender, 2000 + 10 * ((i * 7919 + 5000) % 10000)::float8 as lead
  from generate_series(0, 9999) i;
select (7::bigint << 40) + 1 as k_claim, (8::bigint << 40) + 1 as k_claim8 \gset
select is((select count(*) from pepsi.workqueue_claim_fair('{k}', '{0}', '{1000}',
                                                          (select array_agg('k'::text) from k_lead),
                                                          (select array_agg(sender) from k_lead),
                                                          (select array_agg(lead) from k_lead), 0, null, null, now(), false,
                                                          64, :k_claim, null, null, '{t}')),
          0::bigint, 'issue 12: a call with cap 0 claims nothing but keeps the 10,000 leads it was sent');
select row_eq($$select count(*), min(incarnation), max(incarnation) from pg_temp.fair_lead where stage = 'k'$$,
              row(10000::bigint, 7::bigint, 7::bigint),
              'issue 12, 19: the session''s pg_temp.fair_lead holds the 10,000 leads, for incarnation 7 (p_claim_id >> 40)');
select is((select incarnation from pg_temp.fair_stage where stage = 'k'), 7::bigint,
          'issue 12: the synced stage is marked held in full by incarnation 7 (pg_temp.fair_stage)');

savepoint kept;
-- The window: the 64 senders after k04979 (k04980..k05043), all past the 256th.
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 4001, * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}', null, now(),
                                              false, 64, :k_claim + 1);
select row_eq($$select sender_key, lead_floor, window_next, leads_lost from claimed where call = 4001$$,
              row('user:k05000'::text, 2000::float8, 'user:k05043'::text, false),
              'issue 12, D-53: 10,000 waiting senders with distinct kept leads: the claim takes first the sender with the smallest lead (k05000, the 5,001st sender), its lead the floor');
rollback to savepoint kept;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 4002, * from pepsi.workqueue_claim_fair('{k}', '{64}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}', null, now(),
                                              false, 64, :k_claim + 2);
select is((select array_agg(c.sender_key order by c.pos) from claimed c where c.call = 4002),
          (select array_agg(l.sender order by l.lead) from k_lead l where l.sender between 'user:k04980' and 'user:k05043'),
          'issue 12, D-53: cap 64 over that window: every one of its 64 senders (past the 256th) is claimed in the order of its kept lead');
rollback to savepoint kept;
select is((select c.sender_key from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}') c),
          (select w.sender_key from pepsi.workqueue w where w.stage = 'k' and w.sender_key between 'user:k04980' and 'user:k05043'
            order by w.workqueue_id limit 1),
          'issue 12: without a claim id nothing kept is read: all level, the window''s oldest row goes first (the control)');
rollback to savepoint kept;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 4003, * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}', null, now(),
                                              false, 64, :k_claim8);
select row_eq($$select sender_key, lead_floor, leads_lost from claimed where call = 4003$$,
              row((select w.sender_key from pepsi.workqueue w where w.stage = 'k' and w.sender_key between 'user:k04980' and 'user:k05043'
                    order by w.workqueue_id limit 1), 0::float8, true),
              'issue 12, D-56: another incarnation (a restarted dispatcher) reads none of them, and says leads_lost');
rollback to savepoint kept;

-- Changes after the sync: only what changed is sent.
insert into xstats_k select pg_stat_get_xact_tuples_inserted('pg_temp.fair_lead'::regclass)
                          + pg_stat_get_xact_tuples_updated('pg_temp.fair_lead'::regclass)
                          + pg_stat_get_xact_tuples_deleted('pg_temp.fair_lead'::regclass)
                          + pg_stat_get_xact_tuples_inserted('pg_temp.fair_stage'::regclass)
                          + pg_stat_get_xact_tuples_updated('pg_temp.fair_stage'::regclass);
select count(*) >= 0 as x from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}', null,
                                                         now(), false, 64, :k_claim + 3) \gset
select is((select pg_stat_get_xact_tuples_inserted('pg_temp.fair_lead'::regclass)
                + pg_stat_get_xact_tuples_updated('pg_temp.fair_lead'::regclass)
                + pg_stat_get_xact_tuples_deleted('pg_temp.fair_lead'::regclass)
                + pg_stat_get_xact_tuples_inserted('pg_temp.fair_stage'::regclass)
                + pg_stat_get_xact_tuples_updated('pg_temp.fair_stage'::regclass) - n from xstats_k), 0::bigint,
          'D-139, issue 12: a claim that sends no changed lead writes nothing to the kept leads');
rollback to savepoint kept;
select is((select c.sender_key from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{k}', '{user:k05000}', '{1e9}', 0,
                                                              '{user:k04979}', null, now(), false, 64, :k_claim + 4) c),
          (select l.sender from k_lead l where l.sender between 'user:k04980' and 'user:k05043' and l.sender <> 'user:k05000'
            order by l.lead limit 1),
          'issue 12: a changed lead sent with a claim is kept before the claim ranks: k05000 at 1e9 µs goes behind the window''s second-smallest');
select is((select v from pg_temp.fair_lead where stage = 'k' and sender_key = 'user:k05000'), 1e9::float8,
          'issue 12: ... and stays kept for the next claim');
rollback to savepoint kept;
select is((select count(*) from pepsi.workqueue_claim_fair('{k}', '{0}', '{1000}', '{k,k}', '{user:k05000,user:k05001}', '{500,0}',
                                                          0, null, null, now(), false, 64, :k_claim + 5, '{500}', '{1}')),
          0::bigint, 'setup: two leads sent at the base of the frame (lead 0: forgotten by the dispatcher)');
select is((select array_agg(sender_key order by sender_key) from pg_temp.fair_lead
            where stage = 'k' and sender_key in ('user:k05000', 'user:k05001')), null::text[],
          'D-56, issue 12: a lead sent as 0 or less (v <= base) is deleted from the kept leads');
rollback to savepoint kept;
insert into claimed (call, workqueue_id, stage, sender_key, fifo, window_next, window_lap, fifo_credit, lead_floor, leads_lost)
select 4004, * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, '{user:k04979}', null, now(),
                                              false, 64, :k_claim + 6, '{500}', '{1.5}');
select row_eq($$select sender_key, lead_floor from claimed where call = 4004$$, row('user:k05000'::text, 1000::float8),
              'issue 12, D-55: a kept lead is read in the frame passed: (2000 - base 500) / scale 1.5 = 1000 µs');
rollback to savepoint kept;
select is((select c.lead_floor from pepsi.workqueue_claim_fair('{k}', '{1}', '{10000}', '{}', '{}', '{}', 0, '{user:k04979}',
                                                              null, now(), false, 64, :k_claim + 7) c),
          0::float8, 'D-56: a kept lead worth less than half an average (here under 5000 µs) counts as 0');
rollback to savepoint kept;
select is((select count(*) from pepsi.workqueue_claim_fair('{k,k2}', '{0,0}', '{1000,1000}', '{k}', '{user:k00042}', '{7000}',
                                                          0, null, null, now(), false, 64, :k_claim + 8, null, null, '{t,f}')),
          0::bigint, 'setup: stage k synced again with one lead only');
select is((select array_agg(sender_key || '=' || v) from pg_temp.fair_lead where stage = 'k'), '{user:k00042=7000}'::text[],
          'issue 12: a sync keeps exactly the leads it was sent (the other 9,999 are deleted)');
rollback to savepoint kept;
select throws_ok(format($$select * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{q}', '{user:a}', '{5000}', 0, null,
                                                                   null, now(), false, 64, %s)$$, :k_claim + 9),
                 'PX003', null, 'PX003: a kept lead of a stage that is not in p_stages');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, null, null, now(), false,
                                                           64, null, '{0}', '{0}')$$,
                 'PX003', null, 'PX003: a scale of 0');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, null, null, now(), false,
                                                           64, null, '{Infinity}')$$,
                 'PX003', null, 'PX003: an infinite base');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{k}', '{1}', '{1000}', '{}', '{}', '{}', 0, null, null, now(), false,
                                                           64, null, null, null, '{t,f}')$$,
                 'PX003', null, 'PX003: a sync array of another length than the stages');
delete from pepsi.workqueue where stage = 'k';

-- Statuses, several stages, release of paused rows ------------------------------------------------------------

select pepsi.workqueue_inject('s', p_origin_user => 'p') as s_pending \gset
select pepsi.workqueue_inject('s', p_origin_user => 'q') as s_failed \gset
select pepsi.workqueue_inject('s', p_origin_user => 'q') as s_running \gset
select pepsi.workqueue_inject('s', p_origin_user => 'q') as s_paused \gset
select pepsi.workqueue_inject('s', p_origin_user => 'q') as s_due \gset
update pepsi.workqueue set status = 'failed' where workqueue_id = :s_failed;
update pepsi.workqueue set status = 'running', claimed_at = '2026-03-01 11:00:00+00' where workqueue_id = :s_running;
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 13:00:00+00' where workqueue_id = :s_paused;
update pepsi.workqueue set status = 'paused', timeout = '2026-03-01 11:00:00+00' where workqueue_id = :s_due;
select is((select array_agg(c.workqueue_id) from pepsi.workqueue_claim_fair('{s}', '{10}', '{1000}', '{}', '{}', '{}', 10, null,
                                                                           null, '2026-03-01 12:00:00+00') c),
          array[:s_pending]::bigint[], 'D-38: only pending rows are claimed (not failed, running or paused)');
select is((select array_agg(c.workqueue_id) from pepsi.workqueue_claim_fair('{s}', '{10}', '{1000}', '{}', '{}', '{}', 10, null,
                                                                           null, '2026-03-01 12:00:00+00', true) c),
          array[:s_due]::bigint[], 'D-93: p_release_paused releases due paused rows and claims them in the same call');
select row_eq($$select status::text, timeout, claimed_at from pepsi.workqueue where workqueue_id = $$ || :s_due,
              row('running'::text, null::timestamptz, '2026-03-01 12:00:00+00'::timestamptz),
              'D-93: the released row is running, timeout cleared, claimed_at = p_now');
select is((select status::text from pepsi.workqueue where workqueue_id = :s_paused), 'paused',
          'D-93: a paused row due later stays paused');

update pepsi.workqueue set status = 'pending', claimed_at = null where stage in ('r', 't');
select is((select array_agg(c.stage order by c.stage) from (
             select distinct c.stage from pepsi.workqueue_claim_fair('{r,t,f2}', '{2,0,1}', '{1000,1000,1000}', '{}', '{}', '{}') c) c),
          '{f2,r}'::text[], 'D-38: one call claims for several stages; cap 0 skips a stage');
select is((select array_agg(c.stage order by c.stage) from (
             select c.stage, row_number() over () as n from pepsi.workqueue_claim_fair('{t,r}', '{2,2}', '{1000,1000}', '{}', '{}', '{}') c) c
            where c.n <= 2),
          '{t,t}'::text[], 'rows come grouped by stage in p_stages order');
select is_empty($$select * from pepsi.workqueue_claim_fair('{}', '{}', '{}', '{}', '{}', '{}')$$, 'a claim with no stages returns no rows');

-- Bad arguments (PX003) -------------------------------------------------------------------------------------

select count(*) as pending0 from pepsi.workqueue where status = 'pending' \gset
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r,t}', '{1}', '{1000,1000}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: stages and caps of different lengths');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000,1000}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: more averages than stages');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', null, '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: NULL averages');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{-1}', '{1000}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: a negative cap');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r,t}', array[1, null]::int[], '{1000,1000}', '{}', '{}', '{}')$$,
                 'PX003', null, 'PX003: a NULL cap');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{0}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: an average of 0');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r,t}', '{1,1}', '{1000,-5}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: a negative average');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{NaN}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: an average that is NaN');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{Infinity}', '{}', '{}', '{}')$$, 'PX003', null,
                 'PX003: an infinite average');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r}', '{user:a,user:b}', '{1,2}')$$, 'PX003', null,
                 'PX003: lead stages and lead senders of different lengths');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r}', '{user:a}', null)$$, 'PX003', null,
                 'PX003: lead senders without leads');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r}', '{user:a}', array[null]::float8[])$$,
                 'PX003', null, 'PX003: a NULL lead');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r}', '{user:a}', '{-Infinity}')$$,
                 'PX003', null, 'PX003: an infinite lead');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{r}', array[null]::text[], '{1}')$$,
                 'PX003', null, 'PX003: a NULL lead sender');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', -1)$$, 'PX003', null,
                 'PX003: FIFO percent below 0');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 101)$$, 'PX003', null,
                 'PX003: FIFO percent above 100');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', null)$$, 'PX003', null,
                 'PX003: FIFO percent NULL');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 10, '{a,b}')$$, 'PX003', null,
                 'PX003: a window array of another length than the stages');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 10, null, '{100}')$$,
                 'PX003', null, 'PX003: a FIFO credit above 99');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r,t}', '{1,1}', '{1000,1000}', '{}', '{}', '{}', 10, null, '{5}')$$,
                 'PX003', null, 'PX003: a credit array of another length than the stages');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r,r}', '{1,1}', '{1000,1000}', '{}', '{}', '{}')$$,
                 'PX003', null, 'PX003: a stage listed twice');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 10, null, null, null)$$,
                 'PX003', null, 'PX003: p_now NULL');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 10, null, null, now(), false, 0)$$,
                 'PX003', null, 'PX003: a window of 0 senders');
select throws_ok($$select * from pepsi.workqueue_claim_fair('{r}', '{1}', '{1000}', '{}', '{}', '{}', 10, null, null, now(), false, 65)$$,
                 'PX003', null, 'PX003: a window of more than 64 senders (D-60)');
select is((select count(*) from pepsi.workqueue where status = 'pending'), :pending0::bigint,
          'a refused claim sets nothing running');

-- sender_backlog -------------------------------------------------------------------------------------------------

select has_view('pepsi', 'sender_backlog', 'sender_backlog exists');
select columns_are('pepsi', 'sender_backlog', array['stage', 'sender_key', 'waiting', 'oldest_age', 'oldest_workqueue_id'],
                   'sender_backlog: stage, sender_key, waiting, oldest_age, oldest_workqueue_id');
select table_privs_are('pepsi', 'sender_backlog', 'pepsi_reader', array['SELECT'], 'pepsi_reader may read sender_backlog');
delete from pepsi.workqueue where stage = 'b';
insert into pepsi.workqueue (stage, origin_user, arrived_at) values
    ('b', 'k1', now() - interval '1 hour'), ('b', 'k1', now() - interval '2 hours'), ('b', 'k2', now()),
    ('b2', 'k1', now() - interval '5 minutes');
insert into pepsi.workqueue (stage, origin_user, status, claimed_at) values ('b', 'k3', 'running', now());
select set_eq($$select stage, sender_key, waiting, oldest_age from pepsi.sender_backlog where stage in ('b', 'b2')$$,
              $$values ('b', 'user:k1', 2::bigint, interval '2 hours'), ('b', 'user:k2', 1::bigint, interval '0'),
                       ('b2', 'user:k1', 1::bigint, interval '5 minutes')$$,
              'sender_backlog: per stage and sender, the pending rows and the oldest arrival''s age (running rows do not wait)');
select is((select oldest_workqueue_id from pepsi.sender_backlog where stage = 'b' and sender_key = 'user:k1'),
          (select min(workqueue_id) from pepsi.workqueue where stage = 'b' and sender_key = 'user:k1'),
          'sender_backlog: oldest_workqueue_id is the sender''s next row in queue order');

select * from finish();
rollback;
