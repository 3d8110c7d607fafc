# runner/tests/e2e/ingress-lib.sh — sourced by the ingress end-to-end tests
# (ingress*.t) after lib.sh. Gives:
#   ingress_conf FILE [KEY=VALUE ...]   [pepsi-postgres] + [pepsi-ingress] (PORT 0)
#                                       + whatever stage sections come on stdin
#   start_ingress CONF                  pepsi-runner -c CONF -v ingress in the
#                                       background; sets INGRESS_PID, INGRESS_LOG,
#                                       INGRESS_URL (the port it bound)
#   stop_ingress [SIGNAL]               signal it, wait, return its exit status
#   kill_ingress                        SIGKILL, as a crash
#   sw_secret / sw_key_hex              the Standard Webhooks test secret and key
#   post_sw PROVIDER ID BODY [TS] [CURL ARGS...]   a signed Standard Webhooks POST;
#                                       prints the HTTP status (000: no answer)
#   post_sw_file PROVIDER ID FILE [TS] [CURL ARGS...]  the same with the body in FILE
#                                       (bodies too large for an argument)
#   post_svix PROVIDER ID BODY [TS] [CURL ARGS...]     the same signature under Svix's
#                                       header names svix-id, svix-timestamp, svix-signature
#   ingress_mem FIELD                   FIELD (VmRSS, VmHWM, VmData) of the ingress
#                                       process in /proc/PID/status, in kB
#   ingress_client ARGS...              runner/tests/e2e/ingress-client.py (raw sockets)
#   ingress_tcp                         TCP sockets the ingress holds (listening one included)
#   metric NAME                         a value of GET /metrics (0 when absent)
#   webhook_load ARGS...                runner/tests/webhook_load.c, built once
#   wait_ingress_log ERE [SECS]         waits until the ingress log matches
#   wait_output SECS WANT CMD ARGS...   runs CMD every 100 ms until it prints WANT

SW_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
SW_KEY_HEX=31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0
INGRESS_PID=
INGRESS_LOG=
INGRESS_URL=
_ingress_n=0

ingress_conf() {
    local file=$1 kv
    shift
    {
        echo "[pepsi-postgres]"
        echo "CONNINFO = $E2E_CONNINFO"
        echo
        echo "[pepsi-ingress]"
        echo "PORT = 0"
        echo "RELOAD_INTERVAL = 1h"
        for kv in "$@"; do
            echo "${kv%%=*} = ${kv#*=}"
        done
        echo
        cat
    } >"$file"
}

wait_output() {
    local secs=$1 want=$2 got deadline
    shift 2
    deadline=$(($(date +%s%N) + secs * 1000000000))
    while :; do
        got=$("$@")
        [ "$got" = "$want" ] && return 0
        [ "$(date +%s%N)" -ge "$deadline" ] && break
        sleep 0.1
    done
    diag "waited ${secs}s for $* to print '$want'; last: '$got'"
    return 1
}

wait_ingress_log() {
    local ere=$1 secs=${2:-30}
    wait_cmd "$secs" grep -Eqs -- "$ere" "$INGRESS_LOG"
}

start_ingress() {
    local conf=$1
    _ingress_n=$((_ingress_n + 1))
    INGRESS_LOG=$E2E_DIR/ingress.$_ingress_n.log
    # shellcheck disable=SC2046
    PEPSI_E2E_TAG=$E2E_TAG $(_runner_cmd) "$RUNNER" -c "$conf" -v ingress >"$INGRESS_LOG" 2>&1 </dev/null &
    INGRESS_PID=$!
    if ! wait_ingress_log 'listening on .* port [0-9]+' 60; then
        diag "the ingress did not start; its log:" "$(tail -n 30 "$INGRESS_LOG")"
        return 1
    fi
    INGRESS_URL=http://127.0.0.1:$(grep -Eo 'listening on .* port [0-9]+' "$INGRESS_LOG" | grep -Eo '[0-9]+$' | tail -n 1)
}

stop_ingress() {
    local sig=${1:-TERM} pid=$INGRESS_PID rc
    [ -n "$pid" ] || return 0
    kill -"$sig" "$pid" 2>/dev/null
    for _ in $(seq 1 600); do
        _alive "$pid" || break
        sleep 0.1
    done
    if _alive "$pid"; then
        diag "the ingress (pid $pid) did not exit within 60 s of SIG$sig; killing it"
        kill -KILL "$pid" 2>/dev/null
        rc=124
        wait "$pid" 2>/dev/null
    else
        wait "$pid" 2>/dev/null
        rc=$?
    fi
    INGRESS_PID=
    return $rc
}

kill_ingress() {
    [ -n "$INGRESS_PID" ] || return 0
    kill -KILL "$INGRESS_PID" 2>/dev/null
    wait "$INGRESS_PID" 2>/dev/null
    INGRESS_PID=
}

# sw_signature KEYHEX ID TS BODY: "v1,<base64>" of HMAC-SHA256(key, id.ts.body).
sw_signature() {
    printf '%s' "$2.$3.$4" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" -binary | base64 -w0 |
        sed 's/^/v1,/'
}

post_sw() {
    local provider=$1 id=$2 body=$3 ts=${4:-$(date +%s)}
    shift 3
    [ $# -gt 0 ] && shift
    curl -s -o "$E2E_DIR/last-answer" -w '%{http_code}' -X POST "$INGRESS_URL/hooks/$provider" \
        -H 'Content-Type: application/json' -H "webhook-id: $id" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_signature "$SW_KEY_HEX" "$id" "$ts" "$body")" \
        --data-binary "$body" "$@"
}

# sw_file_signature KEYHEX ID TS FILE: the same over a body held in a file.
sw_file_signature() {
    { printf '%s.%s.' "$2" "$3"; cat "$4"; } | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$1" -binary |
        base64 -w0 | sed 's/^/v1,/'
}

post_sw_file() {
    local provider=$1 id=$2 file=$3 ts=${4:-$(date +%s)}
    shift 3
    [ $# -gt 0 ] && shift
    curl -s -o "$E2E_DIR/last-answer" -w '%{http_code}' -X POST "$INGRESS_URL/hooks/$provider" \
        -H 'Content-Type: application/json' -H "webhook-id: $id" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_file_signature "$SW_KEY_HEX" "$id" "$ts" "$file")" \
        --data-binary "@$file" "$@"
}

post_svix() {
    local provider=$1 id=$2 body=$3 ts=${4:-$(date +%s)}
    shift 3
    [ $# -gt 0 ] && shift
    curl -s -o "$E2E_DIR/last-answer" -w '%{http_code}' -X POST "$INGRESS_URL/hooks/$provider" \
        -H 'Content-Type: application/json' -H "svix-id: $id" -H "svix-timestamp: $ts" \
        -H "svix-signature: $(sw_signature "$SW_KEY_HEX" "$id" "$ts" "$body")" \
        --data-binary "$body" "$@"
}

ingress_mem() {
    awk -v f="$1:" '$1 == f { print $2 }' "/proc/$INGRESS_PID/status"
}

ingress_tcp() {
    local fd
    for fd in /proc/"$INGRESS_PID"/fd/*; do readlink "$fd"; done 2>/dev/null |
        awk 'FNR == NR { if (FNR > 1) tcp["socket:[" $10 "]"] = 1; next } $0 in tcp { n++ } END { print n + 0 }' \
            <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null) -
}

ingress_client() {
    python3 "$E2E_ROOT/runner/tests/e2e/ingress-client.py" "$@"
}

metric() {
    local v
    v=$(curl -s "$INGRESS_URL/metrics" | grep -F -- "$1 " | grep -v '^#' | awk '{print $2}' | head -n 1)
    echo "${v:-0}"
}

webhook_load() {
    local bin=$PEPSI_E2E_TMP/webhook-load
    if [ ! -x "$bin" ]; then
        cc -O2 -std=c11 -Wall -Wextra -o "$bin.$$" "$E2E_ROOT/runner/tests/webhook_load.c" -lcrypto -lpthread &&
            mv "$bin.$$" "$bin" || return 1
    fi
    "$bin" "$@"
}

_ingress_cleanup() {
    local rc=$?
    if [ -n "$INGRESS_PID" ] && _alive "$INGRESS_PID"; then
        kill -KILL "$INGRESS_PID" 2>/dev/null
        wait "$INGRESS_PID" 2>/dev/null
    fi
    if [ "$_t_done" != 1 ] || [ "$_t_fail" -gt 0 ]; then
        local f
        for f in "$E2E_DIR"/ingress.*.log; do
            [ -f "$f" ] || continue
            diag "---- last lines of $f ----" "$(tail -n 40 "$f")"
        done
    fi
    (exit $rc)
    _e2e_cleanup
}
trap _ingress_cleanup EXIT
