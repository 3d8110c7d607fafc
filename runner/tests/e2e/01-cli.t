#!/usr/bin/env bash
# The command line and start-up failures: help and version, a flag after
# the subcommand, a malformed configuration, a schema older than the
# build, a database that cannot be reached.
. "$(dirname "$0")/lib.sh"
plan 17

out=$E2E_DIR/out.log

run_runner "$out" -V
is "$?" 0 "D-07: -V exits 0"
like "$(cat "$out")" '^pepsi-runner [0-9]' "D-07: -V prints the version"

run_runner "$out" --help
is "$?" 0 "D-07: --help exits 0"
like "$(cat "$out")" 'usage: .*serve' "D-07: --help prints a usage summary"

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
EOF

run_runner "$out" -c "$conf" serve -v
is "$?" 64 "D-03: a flag after the subcommand exits 64"
like "$(cat "$out")" '"-v" must come before the subcommand' "D-03: and says where flags go"

bad=$E2E_DIR/unknown-key.conf
sed 's/^\[pepsi-dispatch\]$/[pepsi-dispatch]\nFROBNICATE = yes/' "$conf" >"$bad"
line=$(grep -n '^FROBNICATE = yes' "$bad" | cut -d: -f1)
run_runner "$out" -c "$bad" serve
is "$?" 1 "D-10: a configuration with an unknown key exits 1"
like "$(cat "$out")" "$bad:$line: .*FROBNICATE" "D-10: the error names the file, the line and the key"

run_runner "$out" -c "$E2E_DIR/missing.conf" serve
is "$?" 1 "D-10: a configuration file that does not exist exits 1"

noconn=$E2E_DIR/noconn.conf
sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=1 user=$PGUSER dbname=$E2E_DB|" "$conf" >"$noconn"
run_runner "$out" -c "$noconn" serve
is "$?" 1 "D-10: a database that cannot be reached exits 1"
like "$(cat "$out")" 'cannot connect to the database' "D-10: and the log says so"

nodb=$E2E_DIR/nodb.conf
sed "s|dbname=$E2E_DB|dbname=${E2E_DB}_missing|" "$conf" >"$nodb"
run_runner "$out" -c "$nodb" serve
is "$?" 1 "D-10: a database that does not exist exits 1"

# Revert pepsi.schema_api() and what follows it: the database is now
# older than the build.
if (cd "$E2E_ROOT" && sqitch revert -y --to schema_api^ "db:pg:$E2E_DB") >"$E2E_DIR/sqitch.log" 2>&1; then
    revert_ok=0
else
    revert_ok=1
    diag "$(cat "$E2E_DIR/sqitch.log")"
fi
is "$revert_ok" 0 "sqitch revert --to schema_api^ of the test database"
sql "select pepsi.workqueue_inject('a')" >/dev/null
run_runner "$out" -c "$conf" serve
is "$?" 78 "D-12: a schema older than the build exits 78"
like "$(cat "$out")" 'older.*sqitch deploy' "D-12: the message says older and to run sqitch deploy"
is "$(sql "select status from pepsi.workqueue")" pending "D-02: a refused start touches no message"

# Deploy again: the same configuration now serves.
(cd "$E2E_ROOT" && sqitch deploy "db:pg:$E2E_DB") >>"$E2E_DIR/sqitch.log" 2>&1
start_runner "$conf"
stop_runner
is "$?" 0 "D-12: after sqitch deploy the runner serves and stops cleanly"
done_testing
