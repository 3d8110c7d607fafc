-- Revert pepsi_router:router_topology from pg

begin;

drop function pepsi_router.shard_of_id(bigint);
drop function pepsi_router.shard_of_tube(text);
drop function pepsi_router.routable();
drop function pepsi_router.topology_fingerprint();
drop function pepsi_router.topology_set(int, int, int[], int[]);
drop function pepsi_router.shard_map_even(int, int);
drop function pepsi_router.fingerprint_of(text, int, int[], int, int[]);
drop table pepsi_router.topology;
drop schema pepsi_router;
drop extension plproxy;

commit;
