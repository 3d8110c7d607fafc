-- Verify pepsi_router:router_cluster on pg

begin;

select 'pepsi_router.cluster_apply(text[], jsonb)'::regprocedure;
select 'pepsi_router.shard_identity_on(int)'::regprocedure;

rollback;
