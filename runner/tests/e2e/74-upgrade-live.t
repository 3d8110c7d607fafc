#!/usr/bin/env bash
# issue 15, D-12: upgrades in place. The runner and its workers check the
# API level the schema declares (pepsi.schema_api(): oldest .. level), not
# the exact deploy files, so a compatible `sqitch deploy` under a live
# service stops no stage; README "Upgrading".
#   - A compatible change (a new function; level raised, oldest kept) is
#     deployed with sqitch while messages flow: every message finishes, no
#     stage stops, a worker started after the deploy runs, and the runner
#     restarted after it serves (the exact-manifest check refused here:
#     "newer").
#   - A breaking change (oldest raised above this build's level): a
#     restarted runner exits 78, says to upgrade the program, and touches
#     no message; reverting it, the runner serves again.
. "$(dirname "$0")/lib.sh"
plan 13

level=$("$RUNNER" --version | sed -E 's/.*API level ([0-9]+).*/\1/')
# A copy of the project's sqitch files with two changes of a later release.
proj=$E2E_DIR/proj
mkdir -p "$proj"
cp -r "$E2E_ROOT/sqitch.conf" "$E2E_ROOT/sqitch.plan" "$E2E_ROOT/deploy" "$E2E_ROOT/revert" "$E2E_ROOT/verify" "$proj/"
# The range the schema declares now: the newest definition, i.e. the last
# change of the plan that declares one (scripts/schema-manifest, issue 16).
orig=$(while read -r name _; do
           sed -nE 's/^[[:space:]]*select ([0-9]+) as level, ([0-9]+) as oldest[[:space:]]*$/\1 \2/p' \
               "$proj/deploy/$name.sql"
       done < <(grep -Ev '^(%|#|@|[[:space:]]*$)' "$proj/sqitch.plan") | tail -n 1)
# api_sql "LEVEL OLDEST": the statement that declares that range.
# shellcheck disable=SC2086 # the range is two words, on purpose
api_sql() { printf 'create or replace function pepsi.schema_api(out level int, out oldest int) language sql immutable parallel safe\nas $$ select %s as level, %s as oldest $$;\n' $1; }
# add_change NAME "LEVEL OLDEST" "LEVEL OLDEST" SQL: a change that runs SQL
# and declares the first range; its revert declares the second again.
add_change() {
    local name=$1 body=$4
    printf 'begin;\n%s\n%scommit;\n' "$body" "$(api_sql "$2")" >"$proj/deploy/$name.sql"
    printf 'begin;\n%scommit;\n' "$(api_sql "$3")" >"$proj/revert/$name.sql"
    printf 'begin;\nselect 1 / (level = %s)::int from pepsi.schema_api();\nrollback;\n' "${2%% *}" >"$proj/verify/$name.sql"
    echo "$name 2026-12-01T19:00:00Z e2e <e2e@example.org> # issue 15: a change of a later release" >>"$proj/sqitch.plan"
}
add_change e2e_additive "$((level + 1)) ${orig#* }" "$orig" \
    "create function pepsi.e2e_new_feature() returns int language sql as 'select 42';"
sqitch_deploy() { (cd "$proj" && sqitch deploy "db:pg:$E2E_DB") >>"$E2E_DIR/sqitch.log" 2>&1; }
sqitch_revert_to() { (cd "$proj" && sqitch revert -y --to "$1" "db:pg:$E2E_DB") >>"$E2E_DIR/sqitch.log" 2>&1; }

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
NEXT = b

[stage-b]
PROGRAM = pepsi-stage-exec
COMMAND = sleep 0.01
PARALLELISM = 2
EOF
start_runner "$conf"
sql "select pepsi.workqueue_inject('a', p_subject => 'before') from generate_series(1, 300)" >/dev/null
# Deploy while the messages are in flight.
wait_for "select count(*) > 0 from pepsi.workqueue where stage = 'b'" t 20 >/dev/null
ok "issue 15: sqitch deploy of a compatible change (API level $((level + 1)), oldest ${orig#* }) under a live runner" \
    sqitch_deploy
sql "select pepsi.workqueue_inject('a', p_subject => 'after') from generate_series(1, 100)" >/dev/null
ok "issue 15: every message, in flight at the deploy or injected after it, finishes" \
    wait_for "select count(*) from pepsi.workqueue" 0 90
ok "issue 15: the runner kept serving (still running)" _alive "$RUNNER_PID"
is "$(grep -cE 'refused|exit 78|older than|newer than' "$RUNNER_LOG")" 0 \
   "issue 15: no stage stopped or refused (no refusal in the runner's log)"
# A worker of this build started now checks the schema itself: it runs.
PEPSI_STAGE=a PEPSI_CONNINFO=$E2E_CONNINFO timeout 20 "$(dirname "$RUNNER")/pepsi-stage-pass" -c "$conf" worker \
    </dev/null >"$E2E_DIR/w.out" 2>"$E2E_DIR/w.err"
is "$?:$(head -n 1 "$E2E_DIR/w.out")" "0:ready" \
   "issue 15: a worker started after the deploy checks the schema (levels ${orig#* }..$((level + 1))) and runs"
stop_runner

start_runner "$conf"
ok "issue 15: the runner restarted after the deploy serves (the exact-file check said \"newer\" here)" \
    runner_log_has 'serving [0-9]+ stage'
sql "select pepsi.workqueue_inject('a', p_subject => 'restarted') from generate_series(1, 50)" >/dev/null
ok "issue 15: ... and its messages finish" wait_for "select count(*) from pepsi.workqueue" 0 60
stop_runner

# A breaking change: this build's level is no longer served.
add_change e2e_breaking "$((level + 2)) $((level + 2))" "$((level + 1)) ${orig#* }" "drop function pepsi.e2e_new_feature();"
ok "issue 15: sqitch deploy of a breaking change (API level and oldest $((level + 2)))" sqitch_deploy
sql "select pepsi.workqueue_inject('a', p_subject => 'waits')" >/dev/null
run_runner "$E2E_DIR/breaking.log" -c "$conf" serve
is "$?" 78 "D-12, issue 15: a runner made for level $level exits 78 against a schema serving $((level + 2)) only"
like "$(cat "$E2E_DIR/breaking.log")" "newer than this program: it serves API levels $((level + 2)) to $((level + 2)), this program is made for $level: upgrade the program" \
     "D-12: it says the schema is newer and to upgrade the program"
is "$(sql "select status || '/' || stage from pepsi.workqueue")" "pending/a" \
   "D-02: the refused start touched no message"

ok "sqitch revert of the breaking change" sqitch_revert_to e2e_additive
start_runner "$conf"
ok "issue 15: after the revert the runner serves again and the message finishes" \
    wait_for "select count(*) from pepsi.workqueue" 0 30
stop_runner
done_testing
