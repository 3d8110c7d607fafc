#!/usr/bin/env bash
# `pepsi-runner queue move|pause|resume|purge|retry|show` over issue 16's
# operator functions (workqueue_reroute, workqueue_pause_stage,
# workqueue_resume_stage, workqueue_purge, workqueue_retry,
# message_history), against a live pipeline: a message moved to another
# stage; a paused stage is not claimed while the stage after it is, and
# resuming it lets its messages finish; status lists the paused stage; a
# finished message's history is shown; purge and retry say how many.
. "$(dirname "$0")/lib.sh"

plan 33

out=$E2E_DIR/out
conf=$E2E_DIR/pepsi.conf
flag=$E2E_DIR/pass-now
write_conf "$conf" ANOMALY_INTERVAL=1h RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
FUSION = no
NEXT = b
[stage-b]
PROGRAM = pepsi-stage-pass
FUSION = no
[stage-f]
PROGRAM = pepsi-stage-exec
COMMAND = test -e $flag
EOF
operator=e2e_op77_$$
reader=e2e_reader77_$$
psql -XAtq -d postgres -c "create role $operator login in role pepsi_operator;
                           create role $reader login in role pepsi_reader" || exit 1
as() { # as ROLE: a copy of the configuration that logs in as ROLE
    sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=$PGPORT user=$1 dbname=$E2E_DB|" "$conf" >"$E2E_DIR/$1.conf"
    chmod 640 "$E2E_DIR/$1.conf"
    echo "$E2E_DIR/$1.conf"
}
opconf=$(as "$operator")
readconf=$(as "$reader")
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$out.json"; }

m1=$(sql "select pepsi.workqueue_inject('a', p_body => 'x')")
run_runner "$out" -c "$opconf" queue move "$m1" --to b
is "$?" 0 "issue 16: queue move exits 0"
is "$(cat "$out")" "1 message moved to stage b" "it says what happened"
is "$(sql "select stage from pepsi.workqueue where workqueue_id = $m1")" b "issue 16: the message waits at b now"
run_runner "$out" -c "$readconf" queue move "$m1" --to a
is "$?" 1 "issue 16: pepsi_reader may not move"
like "$(cat "$out")" 'move refused: 42501 ' "with the SQLSTATE"

run_runner "$out" -c "$opconf" queue pause a --reason "maintenance window"
is "$(cat "$out")" "stage a paused" "issue 16: queue pause STAGE"
run_runner "$out" -c "$opconf" queue pause a
is "$(cat "$out")" "stage a was paused already" "pausing it again says so"
run_runner "$out" -c "$readconf" status
like "$(grep '^stage a paused' "$out")" "^stage a paused since [0-9-]+ [0-9:.+]+ by $operator: maintenance window$" \
     "issue 16: status names the paused stage, who, why"
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$readconf" status --json >"$out.json" 2>"$out.err"
is "$(jget "[s['stage'] for s in d['paused']['stages']]")" "['a']" "issue 16: status --json: paused.stages"

m2=$(sql "select pepsi.workqueue_inject('a', p_body => 'x')")
ok "the runner starts" start_runner "$conf"
ok "the message moved to b finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m1" 0 20
sleep 2
is "$(sql "select stage || '/' || status from pepsi.workqueue where workqueue_id = $m2")" a/pending \
   "issue 16: a paused stage's message is not claimed"
run_runner "$out" -c "$opconf" queue resume a
is "$(cat "$out")" "stage a resumed" "issue 16: queue resume STAGE"
ok "its message finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m2" 0 20
run_runner "$out" -c "$opconf" queue resume a
is "$(cat "$out")" "stage a was not paused" "resuming it again says so"

run_runner "$out" -c "$readconf" queue show "$m2"
is "$?" 0 "issue 16: queue show of a finished message exits 0"
like "$(cat "$out")" "^message $m2 is not in the queue" "it is not in the queue"
like "$(cat "$out")" $'\n''history \([1-9][0-9]* rows?\):' "issue 16: its history follows"
PEPSI_E2E_TAG=$E2E_TAG "$RUNNER" -c "$readconf" queue show "$m2" --json >"$out.json" 2>"$out.err"
is "$(jget "d['message'], len(d['history']) > 0")" "None True" "issue 16: show --json: message null, history rows"

m3=$(sql "select pepsi.workqueue_inject('f', p_body => 'x')")
m4=$(sql "select pepsi.workqueue_inject('f', p_body => 'y')")
ok "a message fails at f" wait_for "select status from pepsi.workqueue where workqueue_id = $m3" failed 20
ok "another fails at f" wait_for "select status from pepsi.workqueue where workqueue_id = $m4" failed 20
touch "$flag"
run_runner "$out" -c "$opconf" queue retry "$m3"
is "$(cat "$out")" "1 message retried" "issue 16: queue retry through workqueue_retry"
ok "the retried message finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m3" 0 20
stop_runner

run_runner "$out" -c "$opconf" queue purge --older-than 1s
is "$?" 1 "issue 16: a purge younger than the 1 hour floor is refused"
like "$(cat "$out")" 'purge refused: PX050 ' "with its PX code"
is "$(sql "select count(*) from pepsi.workqueue where workqueue_id = $m4")" 1 "and purges nothing"
# Age the failed message past the floor as the schema owner would see it
# after two hours; purge then takes it (and only failed/timeout rows).
sql "update pepsi.workqueue set claimed_at = now() - interval '2 hours' where workqueue_id = $m4" >/dev/null
run_runner "$out" -c "$opconf" queue purge --older-than 1h
is "$?" 0 "issue 16: queue purge exits 0"
is "$(cat "$out")" "1 message purged" "and says how many"
is "$(sql "select count(*) from pepsi.workqueue where workqueue_id = $m4")" 0 "the aged failed message left the queue"
is "$(sql "select status from pepsi.message_history($m4) where source = 'history'")" purged "its history says purged"
run_runner "$out" -c "$readconf" queue purge --older-than 1h
is "$?" 1 "issue 16: pepsi_reader may not purge"
run_runner "$out" -c "$opconf" queue pause --tube nosuchtube --for 1h
is "$?" 1 "a tube that does not exist is refused"
like "$(cat "$out")" 'pause refused: PX043 ' "with its PX code"
psql -XAtq -d postgres -c "drop role if exists $operator; drop role if exists $reader" >/dev/null 2>&1
done_testing
