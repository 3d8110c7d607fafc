-- pepsi.schema_check(changes, hashes) (D-12): the runner and workers pass
-- the sqitch plan they were built from (change names in order and the
-- SHA-1 of each deploy script, as scripts/schema-manifest prints them) and
-- learn whether the deployed schema is current, older, newer or different.
-- The build's lists are made here from sqitch.changes itself.

begin;
select plan(26);

select has_function('pepsi', 'schema_check', array['text[]', 'text[]'], 'D-12: schema_check(changes, hashes) exists');

select array_agg(change order by committed_at, change_id) as changes,
       array_agg(script_hash order by committed_at, change_id) as hashes,
       count(*) as n,
       (array_agg(change order by committed_at desc, change_id desc))[1] as last_change
  from sqitch.changes where project = 'pepsi' \gset

select ok(:n >= 12, 'setup: sqitch.changes lists the deployed pepsi changes');
select is((:'changes'::text[])[1], 'roles', 'setup: the first change is roles, as in sqitch.plan');

-- current
select is((select verdict from pepsi.schema_check(:'changes', :'hashes')), 'current',
          'D-12: the same changes and hashes give current');
select is((select detail from pepsi.schema_check(:'changes', :'hashes')),
          format('%s changes, last "%s"', :n, :'last_change'),
          'D-12: current: detail gives the number of changes and the last one');
select is((select count(*) from pepsi.schema_check(:'changes', :'hashes')), 1::bigint,
          'schema_check returns exactly one row');

-- newer: the build knows fewer changes than the database has
select is((select verdict from pepsi.schema_check(trim_array(:'changes'::text[], 1), trim_array(:'hashes'::text[], 1))),
          'newer', 'D-12: a build missing the last deployed change gives newer');
select matches((select detail from pepsi.schema_check(trim_array(:'changes'::text[], 1), trim_array(:'hashes'::text[], 1))),
               format('first unknown "%s".*upgrade the program', :'last_change'),
               'D-12: newer: detail names the first change the build does not know and says to upgrade');
select is((select verdict from pepsi.schema_check(trim_array(:'changes'::text[], 5), trim_array(:'hashes'::text[], 5))),
          'newer', 'D-12: a build missing several changes gives newer');
select is((select verdict from pepsi.schema_check('{}', '{}')), 'newer', 'D-12: an empty build gives newer');

-- older: the build has a change the database lacks
select is((select verdict from pepsi.schema_check(:'changes'::text[] || 'future_change'::text,
                                                  :'hashes'::text[] || repeat('ab', 20))),
          'older', 'D-12: a build with one more change gives older');
select matches((select detail from pepsi.schema_check(:'changes'::text[] || 'future_change'::text,
                                                      :'hashes'::text[] || repeat('ab', 20))),
               'next missing "future_change".*run sqitch deploy',
               'D-12: older: detail names the missing change and says sqitch deploy');
select is((select verdict from pepsi.schema_check(:'changes'::text[] || '{future1,future2}'::text[],
                                                  :'hashes'::text[] || array[repeat('ab', 20), repeat('cd', 20)])),
          'older', 'D-12: a build with two more changes gives older');
select matches((select detail from pepsi.schema_check(:'changes'::text[] || '{future1,future2}'::text[],
                                                      :'hashes'::text[] || array[repeat('ab', 20), repeat('cd', 20)])),
               format('has %s of %s changes; next missing "future1"', :n, :n + 2),
               'D-12: older: detail counts the changes on both sides and names the first missing one');

-- different
select is((select verdict from pepsi.schema_check(:'changes',
                                                  (:'hashes'::text[])[1:2] || repeat('0', 40) || (:'hashes'::text[])[4:])),
          'different', 'D-12: one altered hash gives different');
select matches((select detail from pepsi.schema_check(:'changes',
                                                      (:'hashes'::text[])[1:2] || repeat('0', 40) || (:'hashes'::text[])[4:])),
               format('^change 3 differs: database "%s" \(%s\), build "%s" \(000000000000\)$',
                      (:'changes'::text[])[3], left((:'hashes'::text[])[3], 12), (:'changes'::text[])[3]),
               'D-12: different: detail says which change differs, with both short hashes');
select is((select verdict from pepsi.schema_check(:'changes',
                                                  trim_array(:'hashes'::text[], 1) || repeat('f', 40))),
          'different', 'D-12: an altered hash of the last change gives different');
select is((select verdict from pepsi.schema_check(
                                  (:'changes'::text[])[1:1] || 'renamed'::text || (:'changes'::text[])[3:], :'hashes')),
          'different', 'D-12: a renamed change gives different');
select is((select verdict from pepsi.schema_check(trim_array(:'changes'::text[], 1) || 'other'::text,
                                                  trim_array(:'hashes'::text[], 1) || repeat('a', 40))),
          'different', 'D-12: the same length with another last change gives different');
select is((select verdict from pepsi.schema_check(trim_array(:'changes'::text[], 2) || 'other'::text,
                                                  trim_array(:'hashes'::text[], 2) || repeat('a', 40))),
          'different', 'D-12: a build that parts from the database before its end gives different, not newer');
select is((select verdict from pepsi.schema_check((:'changes'::text[])[1:1] || 'x'::text || (:'changes'::text[])[2:],
                                                  (:'hashes'::text[])[1:1] || repeat('a', 40) || (:'hashes'::text[])[2:])),
          'different', 'D-12: a change inserted in the middle gives different, not older');

-- bad input
select throws_ok(format($$select * from pepsi.schema_check(%L, %L)$$, :'changes', trim_array(:'hashes'::text[], 1)),
                 'PX003', null, 'PX003: changes and hashes of different lengths');
select throws_ok($$select * from pepsi.schema_check('{a}', null)$$, 'PX003', null, 'PX003: changes with NULL hashes');

-- Any duty role can ask; the registry stays private.
set local role pepsi_worker;
select is((select verdict from pepsi.schema_check(:'changes', :'hashes')), 'current',
          'D-12: pepsi_worker can run schema_check (it reads sqitch.changes as the schema owner)');
reset role;
set local role pepsi_reader;
select is((select verdict from pepsi.schema_check(:'changes', :'hashes')), 'current',
          'D-12: pepsi_reader can run schema_check');
reset role;

-- No registry at all.
alter schema sqitch rename to sqitch_hidden_by_test;
select row_eq(format($$select * from pepsi.schema_check(%L, %L)$$, :'changes', :'hashes'),
              row('different'::text, 'no sqitch registry in this database: deploy the schema with sqitch'::text),
              'D-12: a database without a sqitch registry gives different, telling how to deploy');
alter schema sqitch_hidden_by_test rename to sqitch;

select * from finish();
rollback;
