-- Verify pepsi:user_address on pg

begin;

select login, address, added_at, added_by from pepsi.user_address where false;
select 'pepsi.user_address_owns(text, text)'::regprocedure;
select 'pepsi.user_address_add(text, text)'::regprocedure;
select 'pepsi.user_address_remove(text, text)'::regprocedure;
select 'pepsi.user_address_list(text)'::regprocedure;
select 1 / (pepsi.user_address_owns('Al@X.org', 'al@x.org'))::int;
select 1 / (not pepsi.user_address_owns('al', 'al@x.org'))::int;
select 'pepsi.user_address_address_idx'::regclass;

-- issue 13: every index of the change, by name.
select 'pepsi.user_address_pkey'::regclass;

rollback;
