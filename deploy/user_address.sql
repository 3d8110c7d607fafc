-- Deploy pepsi:user_address to pg
-- requires: settings
--
-- Which addresses an authenticated end user (a message's origin_user, the
-- login of the submission) owns: the only addresses whose per-address
-- settings that user's settings control messages may change (issue 11).
-- An operator keeps the relation; a login that is itself an address owns
-- that address without a row. Nothing else grants ownership: not the
-- envelope sender a message claims, which its sender chooses freely.

begin;

create table pepsi.user_address (
    login       text not null
                constraint user_address_login_check check (login <> '' and length(login) <= 320),
    address     text not null
                constraint user_address_address_check
                check (address = lower(address) and address ~ '^("[^"]*"|[^@\s"]+)@[^@\s]+$' and length(address) <= 320),
    added_at    timestamptz not null default now(),
    added_by    text not null default session_user,
    constraint user_address_pkey primary key (login, address)
);

comment on table pepsi.user_address is
    'Addresses an authenticated end user (origin_user) owns: its settings control messages may change only these (issue 11). Kept by operators with user_address_add/remove.';

create index user_address_address_idx on pepsi.user_address (address);

create function pepsi.user_address_owns(p_login text, p_address text)
returns boolean
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Whether end user p_login owns p_address: a row of user_address, or the
-- login itself is that address (case-insensitive, as pepsi.address_key).
-- NULL or empty logins own nothing.
    select coalesce(p_login, '') <> '' and p_address is not null
       and (pepsi.address_key(p_login) = pepsi.address_key(p_address)
            or exists (select 1 from pepsi.user_address u
                        where u.login = p_login and u.address = pepsi.address_key(p_address)))
$$;

create function pepsi.user_address_add(p_login text, p_address text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Records that end user p_login owns p_address. Returns false when it
-- already did. Raises PX002 (address), PX003 (login empty, NULL or longer
-- than 320 bytes). Tables: user_address (insert).
begin
    if coalesce(p_login, '') = '' or octet_length(p_login) > 320 then
        raise exception 'invalid login "%"', left(coalesce(p_login, '<null>'), 64)
            using errcode = 'PX003', hint = 'A login is the origin_user of messages: 1 to 320 bytes.';
    end if;
    perform pepsi.address_check(p_address, 'address');
    insert into pepsi.user_address (login, address) values (p_login, pepsi.address_key(p_address))
    on conflict on constraint user_address_pkey do nothing;
    return found;
end
$$;

create function pepsi.user_address_remove(p_login text, p_address text default null)
returns int
language sql
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- Takes p_address (every address when NULL) away from end user p_login.
-- The settings already made for it stay (they belong to the address);
-- settings_delete removes them. Returns how many went. Tables: user_address.
    with gone as (
        delete from pepsi.user_address u
         where u.login = p_login
           and (p_address is null or u.address = pepsi.address_key(p_address))
        returning 1)
    select count(*)::int from gone
$$;

create function pepsi.user_address_list(p_login text default null)
returns table (login text, address text, added_at timestamptz, added_by text)
language sql stable
security definer
set search_path = pg_catalog, pepsi, pg_temp
as $$
-- The ownership rows, of one login or all, in a stable order.
    select u.login, u.address, u.added_at, u.added_by
      from pepsi.user_address u
     where p_login is null or u.login = p_login
     order by u.login, u.address
$$;

revoke all on function pepsi.user_address_owns(text, text) from public;
revoke all on function pepsi.user_address_add(text, text) from public;
revoke all on function pepsi.user_address_remove(text, text) from public;
revoke all on function pepsi.user_address_list(text) from public;
grant execute on function pepsi.user_address_list(text) to pepsi_reader;
grant select on pepsi.user_address to pepsi_reader;

commit;
