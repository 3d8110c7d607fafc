#!/usr/bin/env bash
# Issue 19: a REPEATABLE READ snapshot held by another session, another
# user, holds back the xmin horizon (a 120 s hold cost an unfused pipeline
# 90 % of its throughput). The runner's anomaly runs (ANOMALY_INTERVAL 1s
# here) must name that session in `pepsi-runner status --json`, read as
# pepsi_reader: xmin_horizon_age goes warning past its bound, then
# xmin_horizon_age_critical critical past its own (bounds lowered to 3 s
# and 8 s with anomaly_check_set, instead of 60 s and 300 s, to keep the
# test short), and both are ok again once the session commits.
. "$(dirname "$0")/lib.sh"
plan 16

out=$E2E_DIR/out
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1s RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
EOF
reader=e2e_reader_$$
holder=e2e_holder_$$
psql -XAtq -d postgres -c "create role $reader login in role pepsi_reader; create role $holder login" || exit 1
sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=$PGPORT user=$reader dbname=$E2E_DB|" "$conf" >"$E2E_DIR/reader.conf"
chmod 640 "$E2E_DIR/reader.conf"

status_json() { PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$E2E_DIR/reader.conf" status --json >"$out.json" 2>"$out.err"; }
# jget EXPR: a Python expression over the JSON document d.
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$out.json"; }
# check NAME: "state subject" of one check in the last status --json.
check() { jget "' '.join(str(c['state']) + ' ' + str(c['subject']) for c in d['checks'] if c['check_name'] == '$1')"; }
state_of() { sql "select state from pepsi.anomaly_state where check_name = '$1'"; }

sql "select pepsi.anomaly_check_set('xmin_horizon_age', '{\"max_value\": 3}');
     select pepsi.anomaly_check_set('xmin_horizon_age_critical', '{\"max_value\": 8}')" >/dev/null

ok "the runner starts" start_runner "$conf"
ok "its anomaly runs find the horizon young" wait_for "select string_agg(state, ',' order by check_name)
      from pepsi.anomaly_state where check_name like 'xmin_horizon_age%'" "ok,ok" 20

# The holder: another user's session, idle in a REPEATABLE READ transaction.
mkfifo "$E2E_DIR/holder.in"
PGAPPNAME=e2e-xmin-holder psql -XAtq -v ON_ERROR_STOP=1 -U "$holder" -d "$E2E_DB" <"$E2E_DIR/holder.in" >/dev/null 2>&1 &
holder_psql=$!
exec 5>"$E2E_DIR/holder.in"
echo "begin isolation level repeatable read; select 1;" >&5
ok "a session of $holder holds a snapshot" wait_for "select count(*) from pg_stat_activity
      where application_name = 'e2e-xmin-holder' and state = 'idle in transaction' and backend_xmin is not null" 1 10
pid=$(sql "select pid from pg_stat_activity where application_name = 'e2e-xmin-holder'")

ok "issue 19: xmin_horizon_age fires past its bound" wait_for "select state from pepsi.anomaly_state
      where check_name = 'xmin_horizon_age'" firing 20
status_json
is "$?" 1 "issue 19: status exits 1 (warning) while only the warning check fires"
is "$(jget "d['state']")" warning "status --json: state warning"
like "$(check xmin_horizon_age)" "^firing pid $pid \\(user $holder, application e2e-xmin-holder, idle in transaction, [0-9]+ s\\)\$" \
     "issue 19: it names the holder: pid, user, application, state, how long"
is "$(jget "float([c['value'] for c in d['checks'] if c['check_name'] == 'xmin_horizon_age'][0]) > 3")" True \
     "issue 19: its value is the hold's age in seconds, past the bound"

ok "issue 19: xmin_horizon_age_critical fires past its own bound" wait_for "select state from pepsi.anomaly_state
      where check_name = 'xmin_horizon_age_critical'" firing 20
status_json
is "$?" 2 "issue 19: status exits 2 (critical)"
is "$(jget "d['state']")" critical "status --json: state critical"
like "$(check xmin_horizon_age_critical)" "^firing pid $pid \\(user $holder, application e2e-xmin-holder, idle in transaction, [0-9]+ s\\)\$" \
     "issue 19: the critical check names the same session"

echo "commit;" >&5
exec 5>&-
wait "$holder_psql"
ok "issue 19: both checks are ok again once the session ends" wait_for "select string_agg(state, ',' order by check_name)
      from pepsi.anomaly_state where check_name like 'xmin_horizon_age%'" "ok,ok" 20
status_json
is "$?" 0 "issue 19: status exits 0 again"
unlike_pid() { ! grep -q "pid $pid " "$out.json"; }
ok "and no longer names the session" unlike_pid
ok "the runner is still serving" _alive "$RUNNER_PID"
stop_runner

psql -XAtq -d postgres -c "drop role if exists $reader; drop role if exists $holder" >/dev/null
done_testing
