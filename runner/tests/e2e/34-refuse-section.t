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
# Each retry claims them for the starting worker and gives them back when
# it refuses; between two tries (the cool-down) all five are pending.
ok "D-113: the messages wait, pending" \
    wait_for "select count(*) from pepsi.workqueue where status = 'pending'" 5 15
is "$(sql "select count(*) from pepsi.workqueue where status in ('failed', 'timeout') or state ? 'strikes'")" 0 \
   "D-113: none failed or was struck"
sql "select pepsi.config_clear('run')" >/dev/null
ok "D-113: once the overlay is fixed they flow again" wait_for "select count(*) from pepsi.workqueue" 0 30
stop_runner
is "$?" 0 "clean shutdown"
# After a clean shutdown every count is flushed (D-138): no race with a
# flush in the middle of the batch.
is "$(sql "select format('succeeded=%s failed=%s strikes=%s', sum(succeeded), sum(failed), sum(strikes))
             from pepsi.stage_stats where stage = 'run'")" "succeeded=5 failed=0 strikes=0" \
   "statistics: the five messages succeeded once each, none failed or struck"
done_testing
