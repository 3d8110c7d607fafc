#!/usr/bin/env bash
# Per-address settings and the lazy split (D-122..D-125): a 5-recipient
# message whose recipients have 3 distinct overrides of the stage about to
# run is split into exactly 3 messages, sharing one body, each run under
# its own settings; a message whose recipients agree is not split; the
# settings of a local-origin message are its sender's. Overrides are set
# with `pepsi-runner settings`, which refuses unknown stages and options.
. "$(dirname "$0")/lib.sh"
plan 14

out=$E2E_DIR/out
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-deliver]
PROGRAM = pepsi-stage-exec
COMMAND = echo "default \$PEPSI_RECIPIENTS" >> $out
EOF

settings() { "$RUNNER" -c "$conf" settings "$@" 2>&1; }
ok "settings set for one address" settings set A2@x.org deliver COMMAND "echo \"alt \$PEPSI_RECIPIENTS\" >> $out"
ok "settings set for two more" bash -c "'$RUNNER' -c '$conf' settings set a3@x.org deliver COMMAND 'echo \"alt \$PEPSI_RECIPIENTS\" >> $out' &&
                                          '$RUNNER' -c '$conf' settings set a4@y.org deliver COMMAND 'echo \"third \$PEPSI_RECIPIENTS\" >> $out'"
like "$( (settings set a@x.org nosuch COMMAND true; echo "exit $?") | tr "\n" " ")" 'there is no stage "nosuch".*exit 1' \
     "pepsi-runner settings refuses an unknown stage"
like "$( (settings set a@x.org deliver PARALLELISM 2; echo "exit $?") | tr "\n" " ")" 'cannot be set per address.*exit 1' \
     "and an option that cannot be set per address"
like "$( (settings set a@x.org deliver HEADERS maybe; echo "exit $?") | tr "\n" " ")" 'HEADERS: expected yes or no.*exit 1' \
     "D-114: and a value the stage cannot use"
like "$(settings list a2@x.org)" 'a2@x.org +deliver +COMMAND' "settings list shows the override (address lower-cased)"

ok "runner starts" start_runner "$conf"
m=$(sql "select pepsi.workqueue_inject('deliver', p_body => 'hello', p_envelope_sender => 's@z.org',
                                       p_recipients => '{a1@x.org,a2@x.org,a3@x.org,a4@y.org,a5@y.org}')")
ok "the messages finish" wait_for "select count(*) from pepsi.workqueue" 0 20
sort "$out" >"$out.sorted"
is "$(cat "$out.sorted")" "$(printf '%s\n' 'alt a2@x.org a3@x.org' 'default a1@x.org a5@y.org' 'third a4@y.org')" \
   "D-124: split into exactly 3 messages, one per distinct override, each run with its own COMMAND"
is "$(sql "select count(*) from pepsi.workqueue_body")" 0 "D-144: the shared body went with the last of them"

: >"$out"
sql "select pepsi.workqueue_inject('deliver', p_body => 'x', p_recipients => '{a2@x.org,A3@x.org}')" >/dev/null
ok "agreeing recipients: finished" wait_for "select count(*) from pepsi.workqueue" 0 20
is "$(cat "$out")" "alt a2@x.org A3@x.org" "D-125: recipients that agree are not split (and match case-insensitively)"

: >"$out"
sql "select pepsi.workqueue_inject('deliver', p_body => 'x', p_envelope_sender => 'a4@y.org',
                                   p_recipients => '{a1@x.org,a2@x.org}', p_state => '{\"local_origin\": true}')" >/dev/null
ok "local origin: finished" wait_for "select count(*) from pepsi.workqueue" 0 20
is "$(cat "$out")" "third a1@x.org a2@x.org" "D-122: a local-origin message runs with its sender's settings, unsplit"
stop_runner
done_testing
