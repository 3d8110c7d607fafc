#!/usr/bin/env bash
# issue 19: the dispatcher vacuums pepsi.workqueue itself once its dead
# tuples pass VACUUM_DEAD_TUPLES, because autovacuum wakes once a minute
# and an unfused run leaves a dead tuple per hop.
#   - Autovacuum is off for the table: the table's manual vacuum_count
#     moves while a pipeline runs, with the runner's log line (duration,
#     dead tuples before) per VACUUM, each one starting past the bound;
#     with VACUUM_DEAD_TUPLES = 0 it does not move.
#   - A dispatcher whose login may not vacuum the table (PostgreSQL 15
#     would skip the VACUUM with a WARNING): it says so once with the grant
#     to make, closes its vacuum connection (a role with a connection limit
#     keeps the slot for workers: e2e 31), and the messages keep flowing.
. "$(dirname "$0")/lib.sh"
plan 16

vacuums() {
    sql "select vacuum_count from pg_stat_user_tables where relid = 'pepsi.workqueue'::regclass"
}
autovacuums() {
    sql "select autovacuum_count from pg_stat_user_tables where relid = 'pepsi.workqueue'::regclass"
}
moved_past() { [ "$(vacuums)" -gt "$1" ]; }
refusals() { grep -c "may not vacuum pepsi.workqueue" "$RUNNER_LOG"; }
said_once() { [ "$(refusals)" -ge 1 ]; }
# Each message makes three hops (three non-HOT updates) and a delete.
pipeline() {
    write_conf "$@" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
FUSION = no
NEXT = b
[stage-b]
PROGRAM = pepsi-stage-pass
FUSION = no
NEXT = c
[stage-c]
PROGRAM = pepsi-stage-pass
FUSION = no
EOF
}
inject() { sql "select count(pepsi.workqueue_inject('a')) from generate_series(1, $1)" >/dev/null; }

sql "alter table pepsi.workqueue set (autovacuum_enabled = off, toast.autovacuum_enabled = off)" || exit 1
conf=$E2E_DIR/pepsi.conf

# ---- the bound: 0 is off ----
pipeline "$conf" VACUUM_DEAD_TUPLES=0
ok "runner starts with VACUUM_DEAD_TUPLES = 0" start_runner "$conf"
v0=$(vacuums)
inject 1500
ok "1500 messages finish" wait_for "select count(*) from pepsi.workqueue" 0 120
sleep 5 # two checks' worth
is "$(vacuums)" "$v0" "issue 19: VACUUM_DEAD_TUPLES = 0: no VACUUM of pepsi.workqueue"
stop_runner

# ---- the bound: 300 ----
pipeline "$conf" VACUUM_DEAD_TUPLES=300
ok "runner starts with VACUUM_DEAD_TUPLES = 300" start_runner "$conf"
v0=$(vacuums) a0=$(autovacuums)
inject 1500
ok "1500 messages finish" wait_for "select count(*) from pepsi.workqueue" 0 120
ok "issue 19: the dispatcher ran VACUUM pepsi.workqueue (vacuum_count moved from $v0)" wait_cmd 10 moved_past "$v0"
is "$(autovacuums)" "$a0" "autovacuum stayed off for the table (its count did not move)"
lines=$(grep -Eo 'vacuum: vacuumed pepsi\.workqueue in [^:]+: dead_tuples_before=[0-9]+ bound=300' "$RUNNER_LOG")
n=$(grep -c . <<<"$lines")
ok "issue 19: one log line per VACUUM with its duration and dead tuples ($n lines)" num_between "$n" 1 1000
below=$(grep -Eo 'dead_tuples_before=[0-9]+' <<<"$lines" | cut -d= -f2 | awk '$1 <= 300' | wc -l)
is "$below" 0 "issue 19: every VACUUM started past the bound of 300 dead tuples"
stop_runner
is "$?" 0 "clean shutdown"

# ---- a login that does not own the table ----
r=e2e_vac_$$
sql "create role $r login in role pepsi_runner" >/dev/null || exit 1
pipeline /dev/stdout VACUUM_DEAD_TUPLES=300 |
    sed -e "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=$PGPORT user=$r dbname=$E2E_DB|" \
        -e "/^CONNINFO = /a WORKER_CONNINFO = host=$PGHOST port=$PGPORT user=$PGUSER dbname=$E2E_DB" >"$conf"
ok "runner starts as \"$r\" (pepsi_runner, not the owner)" start_runner "$conf"
inject 1000
ok "1000 messages finish" wait_for "select count(*) from pepsi.workqueue" 0 120
ok "the runner said it may not vacuum" wait_cmd 15 said_once
ok "issue 19: and closed its vacuum connection" wait_for "select count(*) from pg_stat_activity
                                                        where application_name = 'pepsi-runner vacuum'" 0 10
inject 1000
ok "1000 more messages finish: the runner keeps serving" wait_for "select count(*) from pepsi.workqueue" 0 120
warned=$(grep -Ec "WARNING.*vacuum: login \"$r\" may not vacuum pepsi.workqueue \(owner \"[^\"]+\"\).*grant \"[^\"]+\" to \"$r\"" "$RUNNER_LOG")
is "$warned" 1 "issue 19: the non-owner is told once, with the grant to make"
stop_runner
# Roles are the cluster's: drop it with the test's database.
psql -XAtq -d postgres -c "drop database if exists $E2E_DB with (force)" >/dev/null 2>&1
psql -XAtq -d postgres -c "drop role if exists $r" >/dev/null 2>&1
