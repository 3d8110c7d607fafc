#!/usr/bin/env bash
# The beanstalkd frontend (issue 17) with a real client from Debian's
# packages, run as a user would run it: ruby-beaneater's put, reserve,
# touch, release with delay, peek, bury, kick, stats (its YAML parsed by
# the client), delete, reserve timeout, pause-tube and JOB_TOO_BIG.
. "$(dirname "$0")/lib.sh"

if ! command -v ruby >/dev/null || ! ruby -e 'require "beaneater"' 2>/dev/null; then
    echo "1..0 # SKIP ruby-beaneater is not installed (scripts/deps installs it)"
    exit 0
fi

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:0
EOF
log=$E2E_DIR/beanstalk.log
# shellcheck disable=SC2046
PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v beanstalk >"$log" 2>&1 </dev/null &
pid=$!
ok "the frontend starts" wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$log"
port=$(grep -Eo 'listening on .* port [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)

any=0
while IFS=$'\t' read -r st desc dg; do
    any=1
    if [ "$st" = ok ]; then _tap 0 "$desc"; else _tap 1 "$desc"; diag "    $dg"; fi
done < <(timeout 60 ruby "$E2E_ROOT/runner/tests/e2e/beanstalk-beaneater.rb" "$port" </dev/null 2>&1)
[ $any = 1 ] || _tap 1 "the client printed its checks"

kill -TERM "$pid"
wait "$pid"
is $? 0 "SIGTERM: the frontend exits 0"
done_testing
