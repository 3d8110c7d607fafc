-- Revert pepsi:topology from pg

begin;

drop function pepsi.partition_map_set(int[]);
drop function pepsi.topology_set(int, int, text);
drop function pepsi.topology_map_check(int[], int);
drop function pepsi.topology_write(text, int, int[], int, text, int[]);
drop function pepsi.topology_check(int);
drop function pepsi.topology_fingerprint();
drop function pepsi.topology_read();
drop function pepsi.topology_fingerprint_of(text, int, int[]);
drop table pepsi.partition_map;
drop table pepsi.topology;

commit;
