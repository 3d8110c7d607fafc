#!/usr/bin/env bash
# `pepsi-runner status` (W-42): one query of pepsi.anomaly_dashboard,
# printed as a terminal table with a summary line, firing checks first;
# exit like a Nagios plugin (issue 16): 0 when no check fires, 2 while a
# critical one does, 3 with a clear message when the database cannot be
# reached, 64 for arguments. The runner's ANOMALY_INTERVAL fills it.
. "$(dirname "$0")/lib.sh"
plan 15

out=$E2E_DIR/status.out
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" ANOMALY_INTERVAL=1s RECONCILE_INTERVAL=1h <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
EOF
checks=$(sql "select count(*) from pepsi.anomaly_check")

run_runner "$out" -c "$conf" status
is "$?" 0 "W-42: status exits 0"
like "$(head -n 1 "$out")" "^pepsi: 0 of $checks checks firing .*no run yet" "before any run it says so"
is "$(grep -c '^pending ' "$out")" "$checks" "every check is listed, pending"

# dispatcher_lock fires for a slot without a runner for more than a
# minute since a run first saw it so (issue 14): a run two minutes ago,
# then one now.
sql "select count(*) from pepsi.anomaly_run(now() - interval '2 minutes')" >/dev/null
sql "select count(*) from pepsi.anomaly_run()" >/dev/null
run_runner "$out" -c "$conf" status
is "$?" 2 "issue 16: status exits 2 while a critical check fires"
like "$(head -n 1 "$out")" "^pepsi: [0-9]+ of $checks checks firing \([0-9]+ critical\), .* ok; last run [0-9-]+ [0-9:]+Z$" \
     "W-42: the summary line answers at a glance"
like "$(sed -n 3p "$out")" '^STATE +SEVERITY +FAMILY +CHECK +VALUE +EXPECTED +SUBJECT +SINCE$' "a header row"
like "$(sed -n 4p "$out")" '^firing +critical +health +dispatcher_lock +0 dispatchers +1 .. 1 dispatchers +owner slot 0 +[0-9-]+ [0-9:]+Z$' \
     "W-42: with no runner, dispatcher_lock fires, first: value, range, subject, since when"
is "$(wc -l <"$out")" $((checks + 5)) "one line per check, a summary, a header and the queue's counts"
is "$(tail -n 1 "$out")" "queue: empty" "issue 16: then the queue's counts: none"
like "$(grep ' messages_missing_event ' "$out")" '^ok +critical +referential +messages_missing_event +0 messages +<= 0 messages' \
     "a healthy check reads ok with its value and range"

ok "the runner starts" start_runner "$conf"
ok "W-42: its anomaly runs clear dispatcher_lock" \
    wait_for "select state from pepsi.anomaly_state where check_name = 'dispatcher_lock'" ok 20
run_runner "$out" -c "$conf" status
like "$(grep ' dispatcher_lock ' "$out")" '^ok +critical +health +dispatcher_lock +1 dispatchers' "status shows it"
stop_runner

noconn=$E2E_DIR/noconn.conf
sed "s|^CONNINFO = .*|CONNINFO = host=$PGHOST port=1 user=$PGUSER dbname=$E2E_DB|" "$conf" >"$noconn"
run_runner "$out" -c "$noconn" status
is "$?" 3 "issue 16: status exits 3 (unknown) when the database cannot be reached"
like "$(cat "$out")" 'status: cannot connect to the database: ' "and says so"
done_testing
