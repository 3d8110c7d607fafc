-- Issue 19, sqitch change workqueue_rules: the value rules of
-- pepsi.workqueue are AFTER INSERT OR UPDATE OF <column> row triggers named
-- as the CHECK constraints they replace, the WHEN clause the CHECK negated,
-- so that a statement which sets none of those columns (every claim: status,
-- claimed_at, claim_id) neither builds nor tests them. What it saves is
-- measured by bench/claim-idle-cost (make bench), not here.
-- What is tested: every rule refuses its bad values on INSERT and on
-- UPDATE with the CHECK's error (23514, message, constraint, table,
-- schema) and takes the edges and NULL (tests 1-28); a row that breaks a
-- rule, written with the triggers off, can still be claimed, and is refused
-- as soon as a statement sets the column (tests 29-31: with CHECKs, the
-- insert itself fails on revert/workqueue_rules, and test 29 with it);
-- the paused/timeout rule stays a CHECK (test 32).

begin;
select plan(32);

insert into pepsi.workqueue (stage) values ('wr_a');
create temp table r as select max(workqueue_id) as id from pepsi.workqueue;

-- rule, column, a bad value, a good edge value (as SQL literals)
create temp table rules (rule text, col text, bad text, edge text);
insert into rules values
    ('workqueue_stage_check',       'stage',       $$'bad name!'$$,             $$repeat('s', 63)$$),
    ('workqueue_tube_check',        'tube',        $$'-tube'$$,                 $$repeat('t', 200)$$),
    ('workqueue_state_check',       'state',       $$'[]'$$,                    $$'{}'$$),
    ('workqueue_partition_check',   'partition',   '-1',                        '0'),
    ('workqueue_owner_slot_check',  'owner_slot',  '-1',                        '0'),
    ('workqueue_priority_check',    'priority',    '1001',                      '-1000'),
    ('workqueue_dedupe_key_check',  'dedupe_key',  $$''$$,                      $$repeat('k', 255)$$),
    ('workqueue_bs_priority_check', 'bs_priority', '4294967296',                '4294967295');

-- the error a statement raised, as 'SQLSTATE constraint schema.table: message'
create function pg_temp.refusal(p_sql text) returns text
language plpgsql as $$
declare
    v_state text; v_constraint text; v_schema text; v_table text; v_message text;
begin
    execute p_sql;
    return 'accepted';
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_constraint = constraint_name,
        v_schema = schema_name, v_table = table_name, v_message = message_text;
    return format('%s %s %s.%s: %s', v_state, v_constraint, v_schema, v_table, v_message);
end
$$;

select is(pg_temp.refusal(case col when 'stage' then format('insert into pepsi.workqueue (stage) values (%s)', bad)
                          else format('insert into pepsi.workqueue (stage, %I) values (''wr_a'', %s)', col, bad) end),
          format('23514 %s pepsi.workqueue: new row for relation "workqueue" violates check constraint "%s"', rule, rule),
          format('issue 19: %s refuses %s on insert, with the CHECK''s error', rule, bad))
  from rules order by rule;
select is(pg_temp.refusal(format('update pepsi.workqueue set %I = %s where workqueue_id = %s', col, bad, (select id from r))),
          format('23514 %s pepsi.workqueue: new row for relation "workqueue" violates check constraint "%s"', rule, rule),
          format('issue 19: %s refuses %s on update', rule, bad))
  from rules order by rule;
select is(pg_temp.refusal(format('update pepsi.workqueue set %I = %s where workqueue_id = %s', col, edge, (select id from r))),
          'accepted', format('issue 19: %s takes %s', rule, edge))
  from rules order by rule;
select is(pg_temp.refusal($$insert into pepsi.workqueue (stage, dedupe_key, bs_priority) values ('wr_a', null, null)$$),
          'accepted', 'issue 19: NULL passes the rules, as it passed the CHECKs (dedupe_key, bs_priority)');
select is(pg_temp.refusal(format('update pepsi.workqueue set stage = ''wr_b'', tube = ''wr'', priority = 5, state = ''{"a": 1}'' where workqueue_id = %s', (select id from r))),
          'accepted', 'issue 19: a statement setting several columns, all valid, is accepted');
select is(pg_temp.refusal(format('update pepsi.workqueue set stage = ''wr_c'', priority = 2000 where workqueue_id = %s', (select id from r))),
          '23514 workqueue_priority_check pepsi.workqueue: new row for relation "workqueue" violates check constraint "workqueue_priority_check"',
          'issue 19: a statement setting a valid and an invalid column names the broken rule');
select is((select stage from pepsi.workqueue where workqueue_id = (select id from r)), 'wr_b',
          'issue 19: the refused statement changed nothing');

-- A row that breaks the stage rule, written with the triggers off (only the
-- owner can): the rules run only for the columns a statement sets.
set local session_replication_role = replica;
insert into pepsi.workqueue (stage) values ('bad name!');
set local session_replication_role = origin;
select is(pg_temp.refusal($$update pepsi.workqueue set status = 'running', claimed_at = now(), claim_id = 7 where stage = 'bad name!'$$),
          'accepted', 'issue 19: an UPDATE that sets no ruled column (a claim) does not test the rules');
select is((select status::text from pepsi.workqueue where stage = 'bad name!'), 'running',
          'issue 19: and the claim-shaped UPDATE took effect');
select is(pg_temp.refusal($$update pepsi.workqueue set stage = stage where stage = 'bad name!'$$),
          '23514 workqueue_stage_check pepsi.workqueue: new row for relation "workqueue" violates check constraint "workqueue_stage_check"',
          'issue 19: a statement that sets the column tests it, even to the same value');

select is(pg_temp.refusal($$insert into pepsi.workqueue (stage, status) values ('wr_a', 'paused')$$),
          '23514 workqueue_paused_timeout_check pepsi.workqueue: new row for relation "workqueue" violates check constraint "workqueue_paused_timeout_check"',
          'D-92: the paused/timeout rule stays a table CHECK, with the same error');

select * from finish();
rollback;
