#!/usr/bin/env bash
# Issue 15: what used to be found only when a message reached the stage is
# refused at start-up, exit 78 (EX_CONFIG), naming the file and the line:
# a PROGRAM that does not exist or cannot be executed (after the PATH
# lookup the dispatcher makes), and a key a built-in stage program does not
# know (COMAND in a pepsi-stage-exec section). And the runner publishes the
# graph it serves (pepsi.stage_served), which config_set checks against.
. "$(dirname "$0")/lib.sh"
plan 14

conf=$E2E_DIR/pepsi.conf

# refused CONF: runs `serve` in the foreground; its exit status.
refused() { run_runner "$E2E_DIR/refused.log" -c "$1" serve; }

write_conf "$conf" <<EOF
[stage-a]
PROGRAM = pepsi-stage-pass
NEXT = b

[stage-b]
PROGRAM = $E2E_DIR/no-such-program
EOF
refused "$conf"
is "$?" 78 "issue 15: a PROGRAM that does not exist: exit 78 at start-up"
like "$(cat "$E2E_DIR/refused.log")" "$conf:[0-9]+: key \"PROGRAM\" in \[stage-b\]: \"$E2E_DIR/no-such-program\" does not exist" \
     "issue 15: the error names the file, the line and the key"
line=$(grep -n '^PROGRAM = .*no-such-program' "$conf" | cut -d: -f1)
like "$(cat "$E2E_DIR/refused.log")" "$conf:$line: " "issue 15: the line is the PROGRAM line ($line)"

printf '#!/bin/sh\nexit 0\n' >"$E2E_DIR/no-such-program"
chmod 644 "$E2E_DIR/no-such-program"
refused "$conf"
is "$?" 78 "issue 15: a PROGRAM that is not executable: exit 78"
like "$(cat "$E2E_DIR/refused.log")" 'key "PROGRAM" in \[stage-b\]: .* cannot be executed' "and says so"

sed -i "s|^PROGRAM = $E2E_DIR/no-such-program|PROGRAM = e2e-no-such-program-$$|" "$conf"
refused "$conf"
is "$?" 78 "issue 15: a PROGRAM that PATH does not hold: exit 78"
like "$(cat "$E2E_DIR/refused.log")" "key \"PROGRAM\" in \[stage-b\]: \"e2e-no-such-program-$$\" is not found in PATH" \
     "and says so"

write_conf "$conf" <<EOF
[stage-run]
PROGRAM = pepsi-stage-exec
COMAND = cat > /dev/null
EOF
refused "$conf"
is "$?" 78 "issue 15: COMAND in a pepsi-stage-exec section: exit 78 at start-up"
line=$(grep -n '^COMAND' "$conf" | cut -d: -f1)
like "$(cat "$E2E_DIR/refused.log")" \
     "$conf:$line: key \"COMAND\" in \[stage-run\]: not a key of pepsi-stage-exec \(did you mean COMMAND\?\)" \
     "issue 15: the error names the file, the COMAND line and the key it resembles"
is "$(sql "select count(*) from pepsi.workqueue")" 0 "nothing was queued or touched"

# A good file starts, and its graph is published for config_set's checks.
write_conf "$conf" <<EOF
[stage-run]
PROGRAM = pepsi-stage-exec
COMMAND = cat > /dev/null
NEXT = end

[stage-end]
PROGRAM = pepsi-stage-discard
EOF
ok "issue 15: the corrected file starts" start_runner "$conf"
is "$(sql "select string_agg(stage || '=' || program || coalesce(':' || (refs->>'NEXT'), ''), ' ' order by stage)
             from pepsi.stage_served where owner_slot = 0")" "end=pepsi-stage-discard run=pepsi-stage-exec:end" \
   "issue 15: the runner published the graph it serves"
like "$(sql "select pepsi.config_remove_stage('end')" 2>&1)" 'key "NEXT" in \[stage-run\]: no section \[stage-end\]' \
     "issue 15: so config_remove_stage refuses to remove a stage the file's NEXT names"
stop_runner
is "$?" 0 "clean shutdown"
done_testing
