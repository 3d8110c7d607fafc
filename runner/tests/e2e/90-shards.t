#!/usr/bin/env bash
# Shards (issue 18): a router database (PL/Proxy, router/) and two shard
# clusters started here, each an ordinary pepsi database deployed from the
# main plan and given the sharded topology (256 partitions, shard 0 owning
# partitions 0..127, shard 1 128..255), one runner per shard.
#   1. 200 tubes, PEPSI_E2E_SHARD_MESSAGES (default 50,000, the issue's
#      size) messages injected through the router in batches of 1,000
#      while no runner runs: every message is on the shard owning its
#      tube's partition, and the router's views add up to each shard's own
#      counts. Then the runners: every message processed exactly once, by
#      its shard's runner.
#   2. Shard 1's PostgreSQL stops mid-run: injects (and an operator call)
#      for its tubes fail with PX070 naming shard 1, shard 0's tubes keep
#      flowing and finish, the views fail rather than sum part of the
#      queue; shard 1 back, its rows finish, none lost.
#   3. A shard deployed with another topology: its runner refuses (78), and
#      so does the router's cluster_apply (PX071); a runner on a shard
#      without TOPOLOGY_FINGERPRINT refuses too.
. "$(dirname "$0")/lib.sh"
plan 36

n=${PEPSI_E2E_SHARD_MESSAGES:-50000}
batch=1000
PG=$E2E_ROOT/scripts/pg
ROUTER_DB=${E2E_DB}_router

_shards_cleanup() {
    local rc=$? s
    for s in 0 1; do
        "$PG" destroy "$E2E_DIR/pg$s" >/dev/null 2>&1
    done
    dropdb --if-exists --force "$ROUTER_DB" >/dev/null 2>&1
    (exit $rc)
    _e2e_cleanup
}
trap _shards_cleanup EXIT

# ssql N "SQL": on shard N; rsql "SQL": on the router.
ssql() { psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$1")" -c "$2" </dev/null; }
rsql() { psql -XAtq -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d "$ROUTER_DB" -c "$1" </dev/null; }

# ---- the shards and the router ---------------------------------------------------------

setup_shard() { # setup_shard N: a cluster of its own, the pepsi schema from the e2e template
    local s=$1
    PEPSI_DBNAME=pepsi_shard$s "$PG" start "$E2E_DIR/pg$s" --fast >"$E2E_DIR/conninfo$s" || return 1
    psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$s")" -f "$E2E_ROOT/deploy/roles.sql" >/dev/null || return 1
    pg_dump -d "${PEPSI_E2E_TEMPLATE:-pepsi_tmpl}" |
        psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$s")" >/dev/null || return 1
    # Every claim and every finish, with the row's partition and the
    # message's number: processed exactly once, on the right shard.
    ssql "$s" "create table e2e_claim (workqueue_id bigint, partition int, n int);
               create table e2e_finish (workqueue_id bigint, partition int, n int);
               create function e2e_rec() returns trigger language plpgsql as \$\$
               begin
                   if tg_op = 'DELETE' then
                       insert into public.e2e_finish values (old.workqueue_id, old.partition, (old.state->>'n')::int);
                   elsif old.status = 'pending' and new.status = 'running' then
                       insert into public.e2e_claim values (new.workqueue_id, new.partition, (new.state->>'n')::int);
                   end if;
                   return null;
               end \$\$;
               create trigger e2e_rec after update or delete on pepsi.workqueue for each row execute function e2e_rec();"
}
setup_shards() { setup_shard 0 && setup_shard 1; }
ok "two shard clusters, each with the pepsi schema" setup_shards
map="pepsi_router.shard_map_even(256, 2)"
for s in 0 1; do
    ssql "$s" "select pepsi.topology_set(256, 1); select pepsi.shard_topology_set(2, array(select (g * 2 / 256) from generate_series(0, 255) g), $s)" >/dev/null
done
createdb "$ROUTER_DB" &&
    sqitch --chdir "$E2E_ROOT/router" deploy "db:pg:$ROUTER_DB" >"$E2E_DIR/router-sqitch.log" 2>&1
ok "the router database deploys (sqitch --chdir router)" test $? = 0
fp=$(rsql "select pepsi_router.topology_set(256, 2, $map)")
is "$fp" "$(ssql 1 "select pepsi.topology_fingerprint()")" "issue 18: the router's fingerprint is each shard's"
conninfos="array['$(cat "$E2E_DIR/conninfo0")', '$(cat "$E2E_DIR/conninfo1")']"
is "$(rsql "select string_agg(shard::text, ',' order by shard) from pepsi_router.cluster_apply($conninfos)")" "0,1" \
   "issue 18: cluster_apply finds both shards with the router's topology"
is "$(rsql "select enum_range(null::pepsi.workqueue_status)::text")" \
   "$(ssql 0 "select enum_range(null::pepsi.workqueue_status)::text")" "the router's status type is the shards'"

stages() {
    cat <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
PARALLELISM = 2
QUEUE_LIMIT = 64
NEXT = b

[stage-b]
PROGRAM = pepsi-stage-pass
PARALLELISM = 1
QUEUE_LIMIT = 64
FUSION = no
EOF
}
# shard_conf N FILE [KEY=VALUE...]: a runner configuration for shard N
shard_conf() {
    local E2E_CONNINFO
    E2E_CONNINFO=$(cat "$E2E_DIR/conninfo$1")
    stages | write_conf "${@:2}"
}
for s in 0 1; do
    shard_conf "$s" "$E2E_DIR/shard$s.conf" PARTITION_COUNT=256 TOPOLOGY_FINGERPRINT="$fp"
done

# inject COUNT FIRST: COUNT messages over the 200 tubes through the router,
# batches of $batch, message number in state.n.
inject() {
    local first=$2 last=$(($2 + $1 - 1)) b
    for ((b = first; b <= last; b += batch)); do
        rsql "select count(*) from pepsi.workqueue_inject_batch((
                  select jsonb_agg(jsonb_build_object('stage', 'a', 'tube', 'tube.' || (g % 200), 'state', jsonb_build_object('n', g)))
                    from generate_series($b, least($b + $batch - 1, $last)) g))" >/dev/null || return 1
    done
}

# ---- 1. every message on its shard, views add up, processed exactly once ------------------

t0=$(date +%s%N)
ok "$n messages injected through the router in batches of $batch" inject "$n" 1
ms=$(elapsed_ms "$t0")
note "inject: $n messages through the router in $ms ms ($((n * 1000 / (ms + 1))) messages/s)"
c0=$(ssql 0 "select count(*) from pepsi.workqueue")
c1=$(ssql 1 "select count(*) from pepsi.workqueue")
is "$((c0 + c1))" "$n" "issue 18: the shards hold $n messages between them ($c0 + $c1)"
ok "both shards got messages" test "$c0" -gt 0 -a "$c1" -gt 0
misplaced() { # misplaced N: rows on shard N whose partition another shard owns, or whose id is not N's
    ssql "$1" "select count(*) from pepsi.workqueue w join pepsi.shard_map m on m.partition = w.partition
                where m.shard <> $1 or (w.workqueue_id >> 48) <> $1
                   or w.partition <> pepsi.tube_partition(w.tube, 256)"
}
is "$(misplaced 0)/$(misplaced 1)" "0/0" \
   "issue 18: every message is on the shard that owns its tube's partition, with an id of that shard"
is "$(rsql "select string_agg(shard || ':' || total, ',' order by shard) from (select shard, sum(messages) as total from pepsi.queue_overview group by shard) v")" \
   "0:$c0,1:$c1" "issue 18: the router's queue_overview sums to each shard's own count"
is "$(rsql "select sum(waiting) from pepsi.sender_backlog")" "$n" "issue 18: the router's sender_backlog sums to all $n"
is "$(rsql "select count(*) from pepsi.queue_overview where shard = 1")" \
   "$(ssql 1 "select count(*) from pepsi.queue_overview")" "issue 18: the router's rows of shard 1 are shard 1's view"

ok "shard 0's runner starts" start_runner "$E2E_DIR/shard0.conf"
pid0=$RUNNER_PID
log0=$RUNNER_LOG
ok "issue 18: it serves shard 0's partitions only" grep -q "shard 0, owner slot 0 owns 128 of its partitions" "$log0"
ok "shard 1's runner starts" start_runner "$E2E_DIR/shard1.conf"
pid1=$RUNNER_PID
log1=$RUNNER_LOG
t0=$(date +%s%N)
drained() { [ "$(ssql 0 "select count(*) from pepsi.workqueue")/$(ssql 1 "select count(*) from pepsi.workqueue")" = 0/0 ]; }
ok "issue 18: all $n messages finish on their shards" wait_cmd 900 drained
ms=$(elapsed_ms "$t0")
note "processing: $n messages (2 hops each) on two shards in $ms ms ($((2 * n * 1000 / (ms + 1))) hops/s)"
is "$(ssql 0 "select count(*) || '/' || count(distinct n) from e2e_finish")/$(ssql 1 "select count(*) || '/' || count(distinct n) from e2e_finish")" \
   "$c0/$c0/$c1/$c1" "issue 18: each shard finished each of its messages exactly once"
is "$(ssql 0 "select count(*) from e2e_claim") $(ssql 1 "select count(*) from e2e_claim")" "$((2 * c0)) $((2 * c1))" \
   "issue 18: each shard's runner claimed each of its messages once per stage"
both=$( { ssql 0 "select n from e2e_finish"; ssql 1 "select n from e2e_finish"; } | sort -n | uniq | wc -l)
is "$both" "$n" "issue 18: the numbers 1..$n all finished, none on both shards"
is "$(ssql 0 "select count(*) from e2e_claim c join pepsi.shard_map m using (partition) where m.shard <> 0")/$(ssql 1 "select count(*) from e2e_claim c join pepsi.shard_map m using (partition) where m.shard <> 1")" \
   "0/0" "issue 18: no runner claimed a partition of another shard"

# ---- 2. shard 1 stops mid-run --------------------------------------------------------

m=$((n / 10 < 2000 ? 2000 : n / 10))
ssql 0 "truncate e2e_finish" && ssql 1 "truncate e2e_finish"
# Shard 1's stage b is paused on shard 1 alone, so that its messages are
# still there (pending at b) when its PostgreSQL stops, whatever the speed.
ssql 1 "select pepsi.workqueue_pause_stage('b', 'e2e 90: shard 1 mid-run')" >/dev/null
inject "$m" $((n + 1))
wait_s1_at_b() { [ "$(ssql 1 "select count(*) from pepsi.workqueue where stage = 'a'")" = 0 ]; }
wait_cmd 120 wait_s1_at_b
s1_before=$(ssql 1 "select count(*) from pepsi.workqueue")
ok "shard 1's PostgreSQL stops while $s1_before of its messages are on their way" "$PG" stop "$E2E_DIR/pg1"
ok "... (it held messages of the round)" test "$s1_before" -gt 0
tube0=$(rsql "select t from (select 'tube.' || g as t from generate_series(0, 199) g) x where pepsi_router.shard_of_tube(t) = 0 limit 1")
tube1=$(rsql "select t from (select 'tube.' || g as t from generate_series(0, 199) g) x where pepsi_router.shard_of_tube(t) = 1 limit 1")
err=$(rsql "select pepsi.workqueue_inject('a', p_tube => '$tube1', p_state => '{\"n\": -1}')" 2>&1)
like "$err" "PX070: shard 1 did not answer" "issue 18: an inject for a tube of the stopped shard fails with PX070 naming shard 1"
t0=$(date +%s%N)
quiet() { "$@" >/dev/null; }
ok "issue 18: ... while one for shard 0's tube goes through" \
   quiet rsql "select pepsi.workqueue_inject('a', p_tube => '$tube0', p_state => '{\"n\": -2}')"
ok "issue 18: a batch for shard 0's tubes goes through while shard 1 is down" \
   quiet rsql "select count(*) from pepsi.workqueue_inject_batch('[{\"stage\": \"a\", \"tube\": \"$tube0\", \"state\": {\"n\": -3}}]')"
ok "issue 18: an operator call by tube for shard 0 works while shard 1 is down" \
   quiet rsql "select pepsi.workqueue_resume(p_tube => '$tube0')"
err=$(rsql "select pepsi.workqueue_resume(p_tube => '$tube1')" 2>&1)
like "$err" "PX070: shard 1 did not answer" "issue 18: ... and one for shard 1's tube fails with PX070"
err=$(rsql "select count(*) from pepsi.queue_overview" 2>&1)
like "$err" "\\[pepsi_shard1\\]" "issue 18: a view over all shards fails while one is down, naming its database (never a partial sum)"
s0done() { [ "$(ssql 0 "select count(*) from pepsi.workqueue")" = 0 ]; }
ok "issue 18: shard 0's messages all finish while shard 1 is down" wait_cmd 300 s0done
note "shard 0 drained $(elapsed_ms "$t0") ms after shard 1 stopped"
ok "shard 1's PostgreSQL starts again" quiet "$PG" start "$E2E_DIR/pg1" --fast
ssql 1 "select pepsi.workqueue_resume_stage('b')" >/dev/null
s1done() { [ "$(ssql 1 "select count(*) from pepsi.workqueue")" = 0 ]; }
ok "issue 18: shard 1's runner reconnects and its messages finish" wait_cmd 300 s1done
s1_total=$(ssql 1 "select count(distinct n) from e2e_finish where n > $n")
s0_total=$(ssql 0 "select count(distinct n) from e2e_finish where n > $n")
is "$((s0_total + s1_total))" "$m" "issue 18: none of the $m messages of the round is lost (shard 0: $s0_total, shard 1: $s1_total)"

# ---- 3. a shard with another topology ------------------------------------------------------

RUNNER_PID=$pid1
stop_runner >/dev/null
RUNNER_PID=$pid0
stop_runner >/dev/null
ssql 1 "select pepsi.shard_topology_set(2, array(select (case when g < 100 then 0 else 1 end) from generate_series(0, 255) g), 1)" >/dev/null
run_runner "$E2E_DIR/refused.log" -c "$E2E_DIR/shard1.conf" serve
is "$?" 78 "issue 18: a shard deployed with another topology: its runner refuses (78)"
ok "... saying the fingerprint differs" grep -q "TOPOLOGY_FINGERPRINT = $fp, but the database's topology" "$E2E_DIR/refused.log"
err=$(rsql "select * from pepsi_router.cluster_apply($conninfos)" 2>&1)
like "$err" "PX071: shard 1 is not the router's topology" "issue 18: ... and the router's cluster_apply refuses it (PX071)"
shard_conf 0 "$E2E_DIR/nofp.conf"
run_runner "$E2E_DIR/nofp.log" -c "$E2E_DIR/nofp.conf" serve
is "$?" 78 "issue 18: a runner on a shard without TOPOLOGY_FINGERPRINT refuses (78)"

done_testing
