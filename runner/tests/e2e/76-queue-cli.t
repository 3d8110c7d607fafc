#!/usr/bin/env bash
# `pepsi-runner queue ...` and `pepsi-runner status [--json]` against a live
# pipeline (issue 16). A stage whose command fails until a flag file
# exists fails three messages; an operator lists them, shows one, deletes
# one (with a reason, leaving a tombstone), retries another once the
# command would pass, pauses the default tube and resumes it. status
# counts the queue per stage and status and exits like a Nagios plugin:
# 0 ok, 1 a warning check firing, 2 a critical one, 3 unknown (no
# connection, nothing readable). Usage errors exit 64, a refusal 1 with
# its SQLSTATE, no connection 69 (queue).
. "$(dirname "$0")/lib.sh"
plan 55

out=$E2E_DIR/out
conf=$E2E_DIR/pepsi.conf
flag=$E2E_DIR/pass-now
write_conf "$conf" ANOMALY_INTERVAL=1h RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-exec
COMMAND = test -e $flag
EOF
operator=e2e_op_$$
reader=e2e_reader_$$
nobody=e2e_nobody_$$
psql -XAtq -d postgres -c "create role $operator login in role pepsi_operator;
                           create role $reader login in role pepsi_reader; create role $nobody login" || exit 1
as() { # as ROLE: a copy of the configuration that logs in as ROLE
    sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=$PGPORT user=$1 dbname=$E2E_DB|" "$conf" >"$E2E_DIR/$1.conf"
    chmod 640 "$E2E_DIR/$1.conf"
    echo "$E2E_DIR/$1.conf"
}
opconf=$(as "$operator")
readconf=$(as "$reader")
# status_json CONF: runs status --json, stdout to $out.json, stderr to
# $out.err; its exit status.
status_json() { PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$1" status --json >"$out.json" 2>"$out.err"; }
# jget EXPR: a Python expression over the JSON document d.
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$out.json"; }

subject="a subject much longer than the forty characters a list shows"
ids=$(sql "select string_agg(pepsi.workqueue_inject('a', p_envelope_sender => 'ann@x.org',
                                                   p_subject => '$subject ' || g, p_body => 'x')::text, ' ')
             from generate_series(1, 3) g")
read -r m1 m2 m3 <<<"$ids"

run_runner "$out" -c "$readconf" queue list
is "$?" 0 "issue 16: queue list exits 0 (as pepsi_reader)"
like "$(head -n 1 "$out")" '^ID +TUBE +STAGE +STATUS +AGE +SENDER +SUBJECT$' "a header row"
like "$(grep "^$m1 " "$out")" "^$m1 +default +a +pending +[0-9]+s +ann@x.org +a subject much longer than the forty \.\.\.$" \
     "issue 16: one line per message: id, tube, stage, status, age, sender, subject clipped"
is "$(wc -l <"$out")" 4 "three messages and the header"
run_runner "$out" -c "$readconf" queue list --stage a --status pending --limit 2
is "$(grep -c '^[0-9]' "$out")" 2 "issue 16: --limit 2 lists two"
run_runner "$out" -c "$readconf" queue list --stage b
is "$(wc -l <"$out")" 1 "--stage b: none, the header only"
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$readconf" queue list --json >"$out.json" 2>"$out.err"
is "$?" 0 "queue list --json exits 0"
is "$(jget "' '.join(str(r['workqueue_id']) for r in d)")" "$m1 $m2 $m3" "issue 16: --json is an array of the messages"
is "$(jget "d[0]['subject']")" "$subject 1" "the subject unclipped in JSON"

run_runner "$out" -c "$readconf" queue show "$m2"
is "$?" 0 "queue show exits 0"
like "$(cat "$out")" "workqueue_id: $m2"$'\n'"tube: default"$'\n'"stage: a"$'\n'"status: pending" \
     "issue 16: queue show prints every column of pepsi.messages"
like "$(grep '^body_bytes: ' "$out")" '^body_bytes: 1$' "down to body_bytes, never the body"
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$readconf" queue show "$m2" --json >"$out.json" 2>"$out.err"
is "$(jget "d['message']['workqueue_id'], d['message']['state']")" "$m2 {}" "show --json: the message, state parsed"
run_runner "$out" -c "$readconf" queue show 999999999
is "$?" 1 "an unknown id exits 1"
like "$(cat "$out")" 'message 999999999 not found' "and says so"

ok "issue 16: status --json exits 0 while no check fires" status_json "$conf"
is "$(jget "d['state'], d['queue']['a']['pending'], len(d['checks']) > 30, d['paused']")" \
   "ok 3 True {'stages': [], 'tubes': []}" "issue 16: --json has state, checks, queue per stage, paused"

ok "the runner starts" start_runner "$conf"
ok "the command fails all three" wait_for "select count(*) from pepsi.workqueue where status = 'failed'" 3 20
run_runner "$out" -c "$readconf" status
is "$?" 0 "status as pepsi_reader exits 0: no check has run"
like "$(cat "$out")" $'\n''STAGE +PENDING +RUNNING +PAUSED +FAILED +TIMEOUT'$'\n''a +0 +0 +0 +3 +0' \
     "issue 16: status counts messages per stage and status"

run_runner "$out" -c "$opconf" queue delete "$m1"
is "$?" 64 "issue 16: delete without --reason is a usage error"
run_runner "$out" -c "$readconf" queue delete "$m1" --reason "bad address"
is "$?" 1 "issue 16: pepsi_reader may not delete: exit 1"
like "$(cat "$out")" 'queue: delete refused: 42501 permission denied' "with the SQLSTATE and message"
run_runner "$out" -c "$opconf" queue delete "$m1" --reason "bad address"
is "$?" 0 "issue 16: pepsi_operator deletes"
is "$(cat "$out")" "1 message deleted" "it says what happened"
is "$(sql "select reason || '/' || deleted_by from pepsi.workqueue_tombstones where workqueue_id = $m1")" \
   "bad address/$operator" "a tombstone with the reason and the operator"
run_runner "$out" -c "$opconf" queue delete "$m1" --reason "again"
is "$?" 1 "deleting it again is refused"
like "$(cat "$out")" "delete refused: PX004 unknown message id $m1" "issue 16: a refusal prints the PX code"

touch "$flag"
run_runner "$out" -c "$opconf" queue retry "$m2"
is "$(cat "$out")" "1 message retried" "issue 16: queue retry"
ok "the retried message finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m2" 0 20
is "$(sql "select status from pepsi.workqueue where workqueue_id = $m3")" failed "the other stays failed"

run_runner "$out" -c "$opconf" queue pause --tube default --for 1h
like "$(cat "$out")" '^tube default paused until [0-9-]+ [0-9:]+Z$' "issue 16: queue pause --tube T --for 1h"
m4=$(sql "select pepsi.workqueue_inject('a', p_body => 'x')")
sleep 2
is "$(sql "select status from pepsi.workqueue where workqueue_id = $m4")" pending "a paused tube's message waits"
ok "status --json names the paused tube" status_json "$readconf"
is "$(jget "[t['tube'] for t in d['paused']['tubes']]")" "['default']" "issue 16: paused.tubes"
run_runner "$out" -c "$opconf" queue pause --tube nosuchtube --for 1h
is "$?" 1 "a tube that does not exist is refused: exit 1"
like "$(cat "$out")" 'pause refused: PX043 tube "nosuchtube" not found' "issue 16: with its PX code and message"
run_runner "$out" -c "$opconf" queue resume --tube default
is "$(cat "$out")" "tube default resumed" "issue 16: queue resume --tube T"
ok "the message finishes once the tube is resumed" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m4" 0 20
stop_runner

# Nagios exit codes. dispatcher_lock (critical) fires for a slot without
# a runner for more than a minute since a run first saw it so.
sql "select count(*) from pepsi.anomaly_run(now() - interval '2 minutes')" >/dev/null
sql "select count(*) from pepsi.anomaly_run()" >/dev/null
status_json "$readconf"
is "$?" 2 "issue 16: a critical check firing: status exits 2"
is "$(jget "d['state'], [c['severity'] for c in d['checks'] if c['check_name'] == 'dispatcher_lock' and c['state'] == 'firing']")" \
   "critical ['critical']" "state critical, the check firing in checks"
run_runner "$out" -c "$readconf" status
is "$?" 2 "the table exits 2 too"
sql "select pepsi.anomaly_check_set('dispatcher_lock', '{\"severity\": \"warning\"}')" >/dev/null
status_json "$readconf"
is "$?" 1 "issue 16: only warning checks firing: status exits 1"
is "$(jget "d['state']")" warning "state warning"
sql "update pepsi.anomaly_check set enabled = false where name <> 'dispatcher_lock';
     select pepsi.anomaly_check_set('dispatcher_lock', '{\"severity\": \"info\"}');
     select count(*) from pepsi.anomaly_run()" >/dev/null
status_json "$readconf"
is "$?" 0 "issue 16: an info check firing is not a warning: exit 0"

status_json "$(as "$nobody")"
is "$?" 3 "issue 16: a login that may read nothing: status exits 3 (unknown)"
noconn=$E2E_DIR/noconn.conf
sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=1 user=$PGUSER dbname=$E2E_DB|" "$conf" >"$noconn"
status_json "$noconn"
is "$?" 3 "issue 16: no database: status exits 3"
like "$(cat "$out.err")" 'status: cannot connect to the database: ' "and says why on stderr"
run_runner "$out" -c "$noconn" queue list
is "$?" 69 "issue 16: no database: queue exits 69"

run_runner "$out" -c "$conf" queue list --limit 0
is "$?" 64 "--limit 0 is a usage error"
run_runner "$out" -c "$conf" queue retry 0
is "$?" 64 "id 0 is a usage error"
run_runner "$out" -c "$conf" queue retry $(seq 1 10001)
is "$?" 64 "10,001 ids are a usage error"
like "$(cat "$out")" 'at most 10000 ids per call' "and says the limit"
run_runner "$out" -c "$conf" status --verbose
is "$?" 64 "status takes only --json"
psql -XAtq -d postgres -c "drop role if exists $operator; drop role if exists $reader; drop role if exists $nobody" \
    >/dev/null 2>&1
done_testing
