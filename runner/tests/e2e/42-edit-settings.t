#!/usr/bin/env bash
# pepsi-stage-edit-settings (issue 8, D-131): a settings control message
# from an authenticated user changes that user's per-address settings and
# advances in one call; an unauthenticated one, or one with a bad line,
# fails permanently; every other message passes on its metadata alone,
# fused into the stage before (D-131), while a control message is refused
# fusion and goes through the dispatcher so that its body is loaded.
. "$(dirname "$0")/lib.sh"
plan 10

out=$E2E_DIR/out
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

ok "runner starts" start_runner "$conf"
ctl=$(sql "select pepsi.workqueue_inject('in', p_origin_user => 'alice', p_envelope_sender => 'Alice@x.org',
                                         p_recipients => '{ops@x.org}', p_subject => '[pepsi-settings] mine',
                                         p_body => convert_to(E'# my delivery\\n\\ndeliver COMMAND = echo \"alt \$PEPSI_MESSAGE_ID\" >> $out\\n', 'UTF8'))")
ok "the control message passes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $ctl" 0 20
is "$(sql "select option || '=' || value from pepsi.settings where address = 'alice@x.org' and stage = 'deliver'")" \
   "COMMAND=echo \"alt \$PEPSI_MESSAGE_ID\" >> $out" "D-122: the control message set its sender's override"

m=$(sql "select pepsi.workqueue_inject('in', p_envelope_sender => 'bob@y.org', p_recipients => '{alice@x.org}', p_body => 'x')")
ok "a message to alice finishes" wait_for "select count(*) from pepsi.workqueue where workqueue_id = $m" 0 20
like "$(cat "$out")" "alt $m" "D-122: and ran with alice's new COMMAND"

bad=$(sql "select pepsi.workqueue_inject('in', p_origin_addr => '192.0.2.9', p_envelope_sender => 'mallory@z.org',
                                         p_subject => '[pepsi-settings] x', p_body => 'deliver COMMAND = rm -rf /')")
ok "an unauthenticated control message fails" wait_for "select status from pepsi.workqueue where workqueue_id = $bad" failed 20
like "$(sql "select last_error from pepsi.failed where workqueue_id = $bad")" 'authenticated user' "and says why"

typo=$(sql "select pepsi.workqueue_inject('in', p_origin_user => 'alice', p_envelope_sender => 'alice@x.org',
                                          p_state => '{\"settings_control\": true}',
                                          p_body => convert_to(E'deliver HEADERS = yes\\ndeliver PARALLELISM = 9\\n', 'UTF8'))")
ok "D-114: a control message with a bad line fails" wait_for "select status from pepsi.workqueue where workqueue_id = $typo" failed 20
like "$(sql "select last_error from pepsi.failed where workqueue_id = $typo")" 'settings line 2: .*PARALLELISM.*cannot be set per address' \
     "D-114: naming the line, and nothing of it was applied"
ok "D-131: only control messages took a pass of their own at the settings stage (3), the others ran fused" \
    wait_for "select stages_executed || '/' || runs from pepsi.stage_stats where stage = 'settings'" "3/4" 20
stop_runner
done_testing
