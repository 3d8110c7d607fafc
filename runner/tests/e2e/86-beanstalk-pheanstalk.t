#!/usr/bin/env bash
# The beanstalkd frontend (issue 17) with Debian's PHP client,
# php-pda-pheanstalk 4, run as a user would run it: the same script
# (clients/pheanstalk-roundtrip.php) that passes against Debian's real
# beanstalkd must pass against `pepsi-runner beanstalk`. Both servers run
# here, the script against each: a difference in a reply is a failure of
# the frontend, not of the script.
. "$(dirname "$0")/lib.sh"

if ! command -v php >/dev/null || [ ! -f /usr/share/php/Pheanstalk/autoload.php ]; then
    echo "1..0 # SKIP php-pda-pheanstalk is not installed (scripts/deps installs it)"
    exit 0
fi
script=$E2E_ROOT/runner/tests/e2e/clients/pheanstalk-roundtrip.php

# run_client PORT TUBE WHAT: one TAP line per check of the script.
run_client() {
    local st line any=0
    while IFS= read -r line; do
        any=1
        case $line in
            "ok - "*) _tap 0 "$3: ${line#ok - }" ;;
            "not ok - "*) _tap 1 "$3: ${line#not ok - }" ;;
            done) ;;
            *) diag "    $line" ;;
        esac
    done < <(timeout 60 php "$script" 127.0.0.1 "$1" "$2" </dev/null 2>&1)
    [ $any = 1 ] || _tap 1 "$3: the client printed its checks"
}

# The reference: Debian's beanstalkd, in memory, on a port of its own.
if command -v beanstalkd >/dev/null; then
    bport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    beanstalkd -l 127.0.0.1 -p "$bport" &
    bpid=$!
    wait_cmd 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $bport), 1)"
    run_client "$bport" php-ref "beanstalkd (the reference)"
    kill "$bpid"
    wait "$bpid" 2>/dev/null
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

run_client "$port" php-tube "pepsi-runner beanstalk"
is "$(sql "select count(*) from pepsi.workqueue where stage = 'beanstalk'")" 0 \
    "every job the script put was deleted: no row left"

kill -TERM "$pid"
wait "$pid"
is $? 0 "SIGTERM: the frontend exits 0"
done_testing
