#!/usr/bin/env bash
# Issue 17's worker loop with a real client: 10,000 jobs put with Debian's
# Pheanstalk through one frontend, worked by two PHP client processes, one
# on each of two frontends (two generations, one database): every job is
# reserved and deleted exactly once, and none is left.
. "$(dirname "$0")/lib.sh"

if ! command -v php >/dev/null || [ ! -f /usr/share/php/Pheanstalk/autoload.php ]; then
    echo "1..0 # SKIP php-pda-pheanstalk is not installed (scripts/deps installs it)"
    exit 0
fi
N=${PEPSI_E2E_LOOP_JOBS:-10000}
loop=$E2E_ROOT/runner/tests/e2e/clients/pheanstalk-loop.php

pids=() ports=()
for f in a b; do
    write_conf "$E2E_DIR/$f.conf" <<EOF
[pepsi-beanstalk]
LISTEN = 127.0.0.1:0
EOF
    # shellcheck disable=SC2046
    PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$E2E_DIR/$f.conf" -v beanstalk >"$E2E_DIR/$f.log" 2>&1 </dev/null &
    pids+=($!)
    ok "frontend $f starts" wait_cmd 60 grep -Eqs 'listening on .* port [0-9]+' "$E2E_DIR/$f.log"
    ports+=("$(grep -Eo 'listening on .* port [0-9]+' "$E2E_DIR/$f.log" | grep -Eo '[0-9]+$' | tail -n 1)")
done

t0=$(date +%s%N)
php "$loop" 127.0.0.1 "${ports[0]}" put loop "$N" </dev/null
is $? 0 "$N jobs put through frontend a"
note "$N puts in $(elapsed_ms "$t0") ms"
t0=$(date +%s%N)
php "$loop" 127.0.0.1 "${ports[0]}" work loop >"$E2E_DIR/done.a" </dev/null &
wa=$!
php "$loop" 127.0.0.1 "${ports[1]}" work loop >"$E2E_DIR/done.b" </dev/null &
wb=$!
wait "$wa"; ra=$?
wait "$wb"; rb=$?
note "worked in $(elapsed_ms "$t0") ms: $(wc -l <"$E2E_DIR/done.a") by the worker on a, $(wc -l <"$E2E_DIR/done.b") on b"
ok "both workers ended cleanly" test "$ra$rb" = 00
is "$(cat "$E2E_DIR/done.a" "$E2E_DIR/done.b" | wc -l)" "$N" "$N deletes in all"
is "$(cat "$E2E_DIR/done.a" "$E2E_DIR/done.b" | sort -n | uniq | wc -l)" "$N" "every job exactly once (no body twice)"
is "$(cat "$E2E_DIR/done.a" "$E2E_DIR/done.b" | sort -n | awk -v n="$N" 'NR != $1 {bad++} END {print bad + 0}')" 0 \
   "the bodies are 1..$N: none missing"
ok "both workers took part" test -s "$E2E_DIR/done.a" -a -s "$E2E_DIR/done.b"
is "$(sql "select count(*) from pepsi.workqueue where stage = 'beanstalk'")" 0 "no job left in the queue"
for i in 0 1; do
    kill -TERM "${pids[$i]}"
    wait "${pids[$i]}"
    is $? 0 "SIGTERM: frontend $((i + 1)) exits 0"
done
done_testing
