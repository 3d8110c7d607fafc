-- Verify pepsi:control_signal on pg

begin;

select channel, version, changed_at, changed_by from pepsi.control_signal where false;
select 1 / ((select count(*) from pepsi.control_signal_versions()) = 3)::int;
select pepsi.control_signal_send('config_changed');
select 'pepsi.control_signal_versions()'::regprocedure;

-- issue 13: every function of the change, by its exact signature.
select 'pepsi.control_signal_send(text)'::regprocedure;
-- issue 13: every index of the change, by name.
select 'pepsi.control_signal_pkey'::regclass;

rollback;
