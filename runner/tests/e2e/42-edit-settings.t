#!/usr/bin/env bash
# pepsi-stage-edit-settings (issue 8, D-131; made safe by issue 11): a
# settings control message from an authenticated user changes the
# per-address settings of an address that user owns (pepsi.user_address,
# checked in SQL), only the options the stage allow-lists for end users,
# and advances in one call. Another user's address, an operator-only
# option (COMMAND, CONDITION, ...), an unauthenticated sender or a bad
# line fail the message permanently and change nothing. An operator still
# sets any option with `pepsi-runner settings set`. Every other message
# passes on its metadata alone, fused into the stage before (D-131),
# while a control message is refused fusion and goes through the
# dispatcher so that its body is loaded.
. "$(dirname "$0")/lib.sh"
plan 27

out=$E2E_DIR/out
pwned=$E2E_DIR/pwned.txt
conf=$E2E_DIR/pepsi.conf
write_conf "$conf" STATS_INTERVAL=1s <<EOF
[stage-in]
PROGRAM = pepsi-stage-if
CONDITION = tube == "default"
THEN = settings
[stage-settings]
PROGRAM = pepsi-stage-edit-settings
NEXT = deliver
[stage-deliver]
PROGRAM = pepsi-stage-exec
COMMAND = echo "default \$PEPSI_MESSAGE_ID" >> $out
EOF

settings_of() { sql "select coalesce(string_agg(stage || ' ' || option || '=' || value, ', ' order by stage, option), '')
                       from pepsi.settings where address = '$1'"; }
# control USER SENDER BODY: injects a settings control message, prints its id.
control() {
    sql "select pepsi.workqueue_inject('in', p_origin_user => $1, p_envelope_sender => '$2',
                                       p_recipients => '{ops@x.org}', p_subject => '[pepsi-settings] x',
                                       p_body => convert_to(E'$3', 'UTF8'))"
}
failed_with() { wait_for "select status from pepsi.workqueue where workqueue_id = $1" failed 20; }
reason_of() { sql "select last_error from pepsi.failed where workqueue_id = $1"; }

ok "an operator says alice owns alice@x.org" \
    run_runner "$E2E_DIR/own.log" -c "$conf" settings own alice Alice@X.org
ok "an operator sets bob's COMMAND" \
    run_runner "$E2E_DIR/bob.log" -c "$conf" settings set bob@y.org deliver COMMAND "echo bob-secret-command"
ok "runner starts" start_runner "$conf"

own=$(control "'alice'" alice@x.org '# my delivery\n\ndeliver HEADERS = yes\n')
ok "issue 11: alice's control message for her own address passes" \
    wait_for "select count(*) from pepsi.workqueue where workqueue_id = $own" 0 20
is "$(settings_of alice@x.org)" "deliver HEADERS=yes" "issue 11: it set the allow-listed option"
is "$(sql "select updated_by from pepsi.settings where address = 'alice@x.org'")" "user:alice" \
   "issue 11: updated_by names the origin user"

cmd=$(control "'alice'" alice@x.org "deliver COMMAND = id > $pwned\\n")
ok "issue 11: a control message setting COMMAND fails" failed_with "$cmd"
like "$(reason_of "$cmd")" 'line 1: option "COMMAND" of stage "deliver" cannot be set by a settings control message' \
     "issue 11: naming the line and the option"
is "$(sql "select failure_class from pepsi.failed where workqueue_id = $cmd")" permanent "issue 11: permanently"

cnd=$(control "'alice'" alice@x.org 'deliver HEADERS = no\nin CONDITION = true\n')
ok "issue 11: a control message setting CONDITION fails" failed_with "$cnd"
like "$(reason_of "$cnd")" 'line 2: option "CONDITION" of stage "in" cannot be set' "issue 11: naming line 2"

del=$(control "'alice'" alice@x.org 'deliver HEADERS =\ndeliver COMMAND =\n')
ok "issue 11: deleting an operator-only override fails too" failed_with "$del"

theirs=$(control "'alice'" bob@y.org 'deliver HEADERS = yes\n')
ok "issue 11: alice's control message for bob's address fails" failed_with "$theirs"
like "$(reason_of "$theirs")" 'may not change the settings of this address' "issue 11: saying it is not hers"
ok "issue 11: the reason names none of bob's settings" test -z "$(reason_of "$theirs" | grep -E 'COMMAND|bob-secret')"
is "$(settings_of bob@y.org)" "deliver COMMAND=echo bob-secret-command" "issue 11: bob's settings are unchanged"
is "$(settings_of alice@x.org)" "deliver HEADERS=yes" "issue 11: nothing of a refused message was applied"

m=$(sql "select pepsi.workqueue_inject('in', p_envelope_sender => 'carol@z.org', p_recipients => '{alice@x.org}', p_body => 'x')")
ok "a message to alice finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m" 0 20
like "$(cat "$out")" "default $m" "it ran the section's COMMAND"
ok "issue 11: the end user's COMMAND never ran" test ! -e "$pwned"

ok "issue 11: an operator still sets COMMAND for alice" \
    run_runner "$E2E_DIR/set.log" -c "$conf" settings set alice@x.org deliver COMMAND "echo \"alt \$PEPSI_MESSAGE_ID\" >> $out"
m2=$(sql "select pepsi.workqueue_inject('in', p_envelope_sender => 'carol@z.org', p_recipients => '{alice@x.org}', p_body => 'x')")
ok "the next message to alice finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m2" 0 20
like "$(cat "$out")" "alt $m2" "D-122: and ran with the operator's COMMAND"

bad=$(sql "select pepsi.workqueue_inject('in', p_origin_addr => '192.0.2.9', p_envelope_sender => 'mallory@z.org',
                                         p_subject => '[pepsi-settings] x', p_body => 'deliver HEADERS = yes')")
ok "an unauthenticated control message fails" failed_with "$bad"
like "$(reason_of "$bad")" 'authenticated user' "and says why"

typo=$(sql "select pepsi.workqueue_inject('in', p_origin_user => 'alice', p_envelope_sender => 'alice@x.org',
                                          p_state => '{\"settings_control\": true}',
                                          p_body => convert_to(E'deliver HEADERS = no\\ndeliver PARALLELISM = 9\\n', 'UTF8'))")
ok "D-114: a control message with a bad line fails, nothing of it applied" failed_with "$typo"
ok "D-131: only control messages took a pass of their own at the settings stage (7), the others ran fused" \
    wait_for "select stages_executed || '/' || runs from pepsi.stage_stats where stage = 'settings'" "7/9" 20
stop_runner
done_testing
