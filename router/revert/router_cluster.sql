-- Revert pepsi_router:router_cluster from pg
--
-- cluster_apply makes the server pepsi_shards at run time, so it may or
-- may not be there: it goes when it is (with its user mappings).

begin;

do $$
begin
    if exists (select 1 from pg_catalog.pg_foreign_server s where s.srvname = 'pepsi_shards') then
        drop server pepsi_shards cascade;
    end if;
end
$$;
drop function pepsi_router.cluster_apply(text[], jsonb);
drop function pepsi_router.shard_identity_on(int);

commit;
