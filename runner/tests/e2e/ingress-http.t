#!/usr/bin/env bash
# pepsi-runner ingress over real HTTP: start-up checks, verification before
# anything else (W-04..W-06), the answers for each kind of bad input, the
# limits, providers reloaded on NOTIFY (no restart), secret rotation, a
# published vector end to end, and 503 (never 2xx) while the database is
# unreachable.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 50

conf=$E2E_DIR/ingress.conf
out=$E2E_DIR/out.log

# ---- start-up ----

ingress_conf "$E2E_DIR/bad.conf" "MAX_BODY=lots" </dev/null
run_runner "$out" -c "$E2E_DIR/bad.conf" ingress
is "$?" 1 "a bad [pepsi-ingress] value: exit 1"
like "$(cat "$out")" 'bad.conf:[0-9]+: key "MAX_BODY" in \[pepsi-ingress\]' "the error names file, line and key"

ingress_conf "$E2E_DIR/typo.conf" "MAX_BODDY=1MiB" </dev/null
run_runner "$out" -c "$E2E_DIR/typo.conf" ingress
like "$(cat "$out")" 'key "MAX_BODDY" in \[pepsi-ingress\]: unknown key' "an unknown key is refused"

# A schema that no longer serves this build's API level (a breaking
# release deployed first): the ingress refuses with 78 before it listens.
api_def=$(sql "select pg_get_functiondef('pepsi.schema_api()'::regprocedure)")
sql "create or replace function pepsi.schema_api(out level int, out oldest int) language sql immutable
     as 'select 1000, 1000'" >/dev/null
ingress_conf "$conf" </dev/null
run_runner "$out" -c "$conf" ingress
is "$?" 78 "D-12: a schema that no longer serves this build's API level: exit 78"
sql "$api_def" >/dev/null

# ---- serving ----

ingress_conf "$conf" "MAX_BODY=4KiB" "CLIENT_TIMEOUT=2s" "MAX_HEADER=8KiB" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
ok "the ingress starts" start_ingress "$conf"
like "$(curl -s "$INGRESS_URL/healthz")" '"status":"ok".*"providers":1' "GET /healthz: ok, one provider"

body='{"type":"invoice.paid","id":"evt_1"}'
is "$(post_sw sw evt_1 "$body")" 200 "W-06: a verified request: 200"
like "$(cat "$E2E_DIR/last-answer")" '"outcome":"new"' "its answer says new"
is "$(sql "select convert_from(payload, 'UTF8') from pepsi.webhook_events where external_id = 'evt_1'")" "$body" \
   "W-07: the exact body is stored"
is "$(post_sw sw evt_1 "$body")" 200 "W-01: a duplicate gets 200 like the first delivery"
like "$(cat "$E2E_DIR/last-answer")" '"outcome":"refreshed"' "its answer says refreshed"
is "$(sql "select count(*) from pepsi.webhook_events")/$(sql "select count(*) from pepsi.workqueue")" "1/1" \
   "W-13: one event, one message"

commits0=$(metric pepsi_ingress_bursts_total)
ts=$(date +%s)
sig=$(sw_signature "$SW_KEY_HEX" evt_2 "$ts" "$body")
code() { curl -s -o "$E2E_DIR/last-answer" -w '%{http_code}' "$@"; }
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: evt_2" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: v1,AAAA$sig" --data-binary "$body")" 401 "W-05: a forged signature: 401"
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: evt_2" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $sig" --data-binary "$body ")" 401 "W-04: a changed body (one trailing space): 401"
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: evt_2" -H "webhook-timestamp: $ts" \
        --data-binary "$body")" 401 "a missing signature: 401"
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-timestamp: $ts" -H "webhook-signature: $sig" \
        --data-binary "$body")" 400 "a missing id: 400"
old=$((ts - 400))
is "$(post_sw sw evt_2 "$body" "$old")" 400 "a timestamp outside the 5-minute tolerance: 400"
like "$(cat "$E2E_DIR/last-answer")" 'stale_timestamp' "its answer says stale_timestamp"
is "$(code -X POST "$INGRESS_URL/hooks/nobody" --data-binary "$body")" 404 "an unknown provider: 404"
is "$(code "$INGRESS_URL/hooks/sw")" 405 "GET on a hook: 405"
is "$(code -X POST "$INGRESS_URL/elsewhere" --data-binary x)" 404 "another path: 404"
big=$(head -c 5000 /dev/zero | tr '\0' x)
is "$(post_sw sw evt_big "$big")" 413 "a body over MAX_BODY (Content-Length): 413 before it is read"
is "$(post_sw sw evt_big "$big" "$(date +%s)" -H 'Transfer-Encoding: chunked')" 413 \
   "issue 11: a chunked body that grows over MAX_BODY: 413 when it ends (nothing kept past the cap)"
longhdr=$(head -c 9000 /dev/zero | tr '\0' y)
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "X-Long: $longhdr" --data-binary x)" 431 \
   "headers over MAX_HEADER: 431 from the HTTP layer"
is "$(metric pepsi_ingress_bursts_total)" "$commits0" "W-05: none of these rejections reached the database"
is "$(sql "select count(*) from pepsi.webhook_events")" 1 "W-05: nothing was stored"
m=$(curl -s "$INGRESS_URL/metrics")
like "$m" 'pepsi_ingress_rejected_total\{reason="bad_signature"\} 2' "metrics count bad_signature"
like "$m" 'pepsi_ingress_rejected_total\{reason="missing_id"\} 1' "metrics count missing_id"
like "$m" 'pepsi_ingress_rejected_total\{reason="body_too_large"\} 2' "metrics count body_too_large"
like "$m" 'pepsi_ingress_burst_size_bucket\{le="1"\}' "metrics have the burst-size histogram"

# A slow client: headers, then nothing. CLIENT_TIMEOUT cuts it off.
start=$(date +%s%N)
exec 3<>"/dev/tcp/127.0.0.1/${INGRESS_URL##*:}"
printf 'POST /hooks/sw HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":' >&3
timeout 10 cat <&3 >/dev/null
exec 3>&-
num_between "$(elapsed_ms "$start")" 1000 6000
ok "a client that stops sending is cut off after CLIENT_TIMEOUT" test $? = 0
ok "and counted as client_timeout" wait_output 5 1 metric 'pepsi_ingress_rejected_total{reason="client_timeout"}'

# ---- reload on NOTIFY, rotation ----

sql "select pepsi.webhook_provider_add('gh', 'github', '{It''s a Secret to Everybody}')" >/dev/null
ok "a provider added is loaded without a restart (NOTIFY webhook_provider_changed)" \
    wait_ingress_log 'loaded 2 webhook provider' 10
ghsig=sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17
is "$(code -X POST "$INGRESS_URL/hooks/gh" -H "X-Hub-Signature-256: $ghsig" -H "X-GitHub-Delivery: d-1" \
        --data-binary 'Hello, World!')" 200 "W-04: GitHub's published example (github-1) verifies end to end"
is "$(sql "select external_id from pepsi.webhook_events where provider = 'gh'")" d-1 "its id comes from X-GitHub-Delivery"

sql "select pepsi.webhook_provider_add_secret('sw', 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD')" >/dev/null
newkey=0b6155b0140886bb1c0a195020c57e6f9b1262ca686fba03
rot1() {
    local t
    t=$(date +%s)
    code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: rot-1" -H "webhook-timestamp: $t" \
        -H "webhook-signature: $(sw_signature "$newkey" rot-1 "$t" x)" --data-binary x
}
ok "rotation: the new secret verifies once reloaded" wait_output 10 200 rot1
is "$(post_sw sw rot-2 x)" 200 "rotation: the old secret still verifies during the changeover"
sql "select pepsi.webhook_provider_retire_secret('sw', '$SW_SECRET')" >/dev/null
ok "rotation: the retired secret stops verifying once reloaded" wait_output 10 401 post_sw sw rot-3 x

sql "select pepsi.webhook_provider_disable('gh')" >/dev/null
ok "a disabled provider: 404 once reloaded" \
    wait_output 10 404 code -X POST "$INGRESS_URL/hooks/gh" -H "X-Hub-Signature-256: $ghsig" \
        -H "X-GitHub-Delivery: d-2" --data-binary 'Hello, World!'

# ---- the database goes away: 503, never 2xx ----

ts=$(date +%s)
psql -XAtq -d postgres -c "alter database $E2E_DB allow_connections false" >/dev/null
psql -XAtq -d postgres -c "select pg_terminate_backend(pid) from pg_stat_activity
                            where datname = '$E2E_DB' and application_name like 'pepsi-ingress%'" >/dev/null
sleep 0.5
is "$(code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: down-1" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_signature "$newkey" down-1 "$ts" x)" --data-binary x)" 503 \
   "database unreachable: 503, so the provider retries"
like "$(curl -s "$INGRESS_URL/healthz")" '"database":false' "GET /healthz says the database is down"
psql -XAtq -d postgres -c "alter database $E2E_DB allow_connections true" >/dev/null
ok "database back: the same delivery is stored (the writer reconnects)" \
    wait_output 10 200 code -X POST "$INGRESS_URL/hooks/sw" -H "webhook-id: down-1" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_signature "$newkey" down-1 "$ts" x)" --data-binary x
is "$(sql "select count(*) from pepsi.webhook_events where external_id = 'down-1'")" 1 "and it is there once"

# ---- the counters the rate checks read (pepsi.ingress_stats) ----
# The duplicate_rate and rejection_rate anomaly checks (W-37, W-43) read
# pepsi.ingress_stats, so it must hold the ingress's own counts exactly:
# stored and duplicate commit with each burst, rejections are flushed
# every 30 s and at shutdown. One more rejection right before SIGTERM is
# one the periodic flush has not written: only the shutdown flush can.
is "$(post_sw sw late-forged x "$(date +%s)" -H "webhook-signature: v1,AAAA")" 401 "a last forged request: 401"
accepted=$(metric pepsi_ingress_accepted_total)
duplicates=$(metric pepsi_ingress_duplicate_total)
curl -s "$INGRESS_URL/metrics" | sed -n 's/^pepsi_ingress_rejected_total{reason="\([a-z_]*\)"} \([0-9]*\)$/rejected.\1 \2/p' |
    awk '$2 > 0' | sort >"$E2E_DIR/rejected.metrics"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
is "$(sql "select coalesce(sum(value), 0) from pepsi.ingress_stats where counter = 'stored'")" "$accepted" \
   "issue 12: pepsi.ingress_stats counts every event stored ($accepted), as GET /metrics does"
is "$accepted" "$(sql "select count(*) from pepsi.webhook_events")" "which is every event in the table"
is "$(sql "select coalesce(sum(value), 0) from pepsi.ingress_stats where counter = 'duplicate'")" "$duplicates" \
   "issue 12: and every redelivery ($duplicates)"
sql "select counter || ' ' || sum(value) from pepsi.ingress_stats where counter like 'rejected.%'
      group by counter having sum(value) > 0 order by 1" >"$E2E_DIR/rejected.stats"
note "rejections: $(tr '\n' ' ' <"$E2E_DIR/rejected.metrics")"
ok "issue 12: every rejection reason and count of GET /metrics is in pepsi.ingress_stats, the last one flushed at shutdown" \
    cmp -s "$E2E_DIR/rejected.metrics" "$E2E_DIR/rejected.stats"
grep -q '^rejected.bad_signature ' "$E2E_DIR/rejected.metrics"
ok "(and there are some to compare: bad_signature among them)" test $? = 0
done_testing
