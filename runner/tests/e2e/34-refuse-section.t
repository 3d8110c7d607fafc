#!/usr/bin/env bash
# A stage whose section its program cannot use (D-113, D-91): the overlay
# takes COMMAND out of a pepsi-stage-exec section. The runner's graph still
# parses (COMMAND is the stage's own key), but every worker refuses to run
# (exit 78 before ready): the messages wait pending, none fails, and they
# flow again once the overlay is fixed.
. "$(dirname "$0")/lib.sh"
plan 9

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[stage-run]
PROGRAM = pepsi-stage-exec
COMMAND = cat > /dev/null
EOF

ok "runner starts" start_runner "$conf"
sql "select pepsi.config_unset('run', 'COMMAND')" >/dev/null
ok "the overlay is reloaded" wait_cmd 10 runner_log_has 'configuration reloaded'
sql "select pepsi.workqueue_inject('run', p_body => 'x') from generate_series(1, 5)" >/dev/null
ok "D-91, D-113: the worker refuses to run, naming the cause" \
    wait_cmd 15 runner_log_has 'worker refused to run \(exit 78: configuration or schema\).*COMMAND.*is required'
ok "D-90: it is retried after the cool-down" \
    wait_cmd 15 bash -c "[ \$(grep -c 'worker refused to run' '$RUNNER_LOG') -ge 2 ]"
is "$(sql "select count(*) from pepsi.workqueue where status = 'pending'")" 5 "D-113: the messages wait, pending"
is "$(sql "select count(*) from pepsi.workqueue where status in ('failed', 'timeout') or state ? 'strikes'")" 0 \
   "D-113: none failed or was struck"
sql "select pepsi.config_clear('run')" >/dev/null
ok "D-113: once the overlay is fixed they flow again" wait_for "select count(*) from pepsi.workqueue" 0 30
like "$(sql "select coalesce(sum(succeeded), 0) from pepsi.stage_stats where stage = 'run'")" '^(0|5)$' \
     "statistics are consistent (flushed or not yet)"
stop_runner
is "$?" 0 "clean shutdown"
done_testing
