#!/usr/bin/env bash
# The ingress's limits hold before anything is allocated or queried
# (issue 11): a body cap checked against Content-Length before the body is
# read and again while a chunked body streams in, memory that grows with
# the bytes received (never with what Content-Length claims), a per-address
# and a global connection limit, an idle-connection timeout, a bounded
# header block; each a [pepsi-ingress] key that refuses 0.
#
# Memory is read from /proc/PID/status of the ingress: VmHWM (the peak
# resident set), VmRSS, and VmData (private writable memory, which counts a
# malloc'd buffer even before it is touched: what a buffer sized from
# Content-Length shows).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 39

conf=$E2E_DIR/ingress.conf
out=$E2E_DIR/out.log
cap_kb=4096                      # MAX_BODY = 4MiB
port() { echo "${INGRESS_URL##*:}"; }

# ---- each limit is a key; 0 cannot turn one off ----

ingress_conf "$E2E_DIR/zero.conf" "MAX_CONNECTIONS_PER_IP=0" </dev/null
run_runner "$out" -c "$E2E_DIR/zero.conf" ingress
is "$?" 1 "issue 11: MAX_CONNECTIONS_PER_IP = 0: exit 1"
like "$(cat "$out")" 'zero.conf:[0-9]+: key "MAX_CONNECTIONS_PER_IP" in \[pepsi-ingress\]: 0 is not allowed' \
     "the error names file, line and key, and says 0 is not allowed"
ingress_conf "$E2E_DIR/huge.conf" "MAX_BODY=1GiB" </dev/null
run_runner "$out" -c "$E2E_DIR/huge.conf" ingress
like "$(cat "$out")" 'huge.conf:[0-9]+: key "MAX_BODY" in \[pepsi-ingress\]: .*1024 to 67108864' \
     "issue 11: an absurd MAX_BODY (1GiB) is refused with its range"

# ---- one instance for the connection and body limits ----

# CLIENT_TIMEOUT bounds how long a connection its client closed can still
# count: MHD 0.9.75 sometimes notices such a close only at the timeout.
ingress_conf "$conf" "MAX_BODY=4MiB" "MAX_CONNECTIONS=200" "MAX_CONNECTIONS_PER_IP=50" "CLIENT_TIMEOUT=20s" \
    "MAX_HEADER=8KiB" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}')" >/dev/null
ok "the ingress starts" start_ingress "$conf"
tcp0=$(ingress_tcp)

# ---- connections: one address cannot take them all ----

ingress_client hold "$(port)" 1000 127.0.0.1 "$E2E_DIR/hold1" "$E2E_DIR/release1" 60 &
holder=$!
wait_cmd 60 test -f "$E2E_DIR/hold1"
note "hold 1000 from 127.0.0.1: $(cat "$E2E_DIR/hold1")"
is "$(cat "$E2E_DIR/hold1")" "open 50" "issue 11: of 1,000 idle connections from 127.0.0.1, 50 stay open (MAX_CONNECTIONS_PER_IP)"
is "$(post_sw sw from-other '{"n":1}' '' --interface 127.0.0.2 -m 10)" 200 \
   "issue 11: meanwhile a signed delivery from 127.0.0.2 gets 200"
is "$(post_sw sw from-same '{"n":2}' '' -m 3)" 000 "and a new connection from 127.0.0.1 is refused"
touch "$E2E_DIR/release1"
wait "$holder"
ok "the ingress lets go of them all" wait_output 30 "$tcp0" ingress_tcp
is "$(sql "select count(*) from pepsi.webhook_events where external_id = 'from-other'")/$(sql "select count(*) from pepsi.webhook_events where external_id = 'from-same'")" \
   1/0 "the delivery from 127.0.0.2 is stored, the refused one is not"
limit_refusals() { test "$(metric 'pepsi_ingress_rejected_total{reason="connection_limit"}')" -ge 950; }
ok "the refused connections are counted as connection_limit" wait_cmd 10 limit_refusals

# MAX_CONNECTIONS: four addresses hold 50 each (200 in all); a fifth
# address waits until one is let go.
holders=()
for a in 3 4 5 6; do
    ingress_client hold "$(port)" 50 "127.0.0.$a" "$E2E_DIR/hold$a" "$E2E_DIR/release$a" 60 &
    holders+=($!)
done
for a in 3 4 5 6; do wait_cmd 60 test -f "$E2E_DIR/hold$a"; done
is "$(cat "$E2E_DIR/hold3" "$E2E_DIR/hold4" "$E2E_DIR/hold5" "$E2E_DIR/hold6" | awk '{n += $2} END {print n}')" 200 \
   "issue 11: 4 addresses x 50 idle connections: 200 open (MAX_CONNECTIONS)"
is "$(post_sw sw from-fifth '{"n":3}' '' --interface 127.0.0.7 -m 3)" 000 \
   "issue 11: at MAX_CONNECTIONS a fifth address is not served"
touch "$E2E_DIR/release3"
ok "once 50 are let go, the fifth address is served (200)" \
    wait_output 10 200 post_sw sw from-fifth '{"n":3}' '' --interface 127.0.0.7 -m 3
touch "$E2E_DIR/release4" "$E2E_DIR/release5" "$E2E_DIR/release6"
wait "${holders[@]}"
ok "the ingress lets go of them all" wait_output 30 "$tcp0" ingress_tcp


# ---- body size and memory ----

# Warm up: every HTTP thread has served requests and has its malloc arena.
for i in $(seq 1 8); do post_sw sw "warm-$i" '{"warm":true}' >/dev/null; done
is "$(sql "select count(*) from pepsi.webhook_events where external_id like 'warm-%'")" 8 "the warm-up requests are stored"

hwm0=$(ingress_mem VmHWM) rss0=$(ingress_mem VmRSS) data0=$(ingress_mem VmData)
ingress_client declare "$(port)" 20 1000000000 65536 50 3 "$E2E_DIR/ready1" "$E2E_DIR/gb.json"
r=$(cat "$E2E_DIR/gb.json")
note "20 clients declaring 1 GB with a forged signature, then sending 64 KiB every 50 ms for 3 s: $r"
like "$r" '"answered": 20, .*"statuses": \["413"\]' \
     "issue 11: Content-Length 1 GB with a forged signature: 413 to each of 20 clients"
like "$r" '"closed_by_server": 20,' "issue 11: and each connection is closed (the body is never read)"
ok "the 413 comes at once, before the body (slowest answer under 1 s)" \
    num_between "$(sed -E 's/.*"slowest_answer_ms": ([0-9]+).*/\1/' <<<"$r")" 0 999
hwm1=$(ingress_mem VmHWM) rss1=$(ingress_mem VmRSS) data1=$(ingress_mem VmData)
note "ingress memory (kB) before/after: VmHWM $hwm0/$hwm1, VmRSS $rss0/$rss1, VmData $data0/$data1 (cap ${cap_kb} kB)"
ok "issue 11: the peak resident memory grew by less than 2x MAX_BODY" num_between $((hwm1 - hwm0)) -100000 $((2 * cap_kb))
ok "issue 11: no allocation beyond the cap (VmData grew by less than 2x MAX_BODY)" \
    num_between $((data1 - data0)) -100000 $((2 * cap_kb))

# Content-Length at the cap, but the bytes do not come: the buffer holds
# what arrived, not what was claimed (20 x 4 MiB reserved would show).
data0=$(ingress_mem VmData)
ingress_client declare "$(port)" 20 4194304 100 50 4 "$E2E_DIR/ready2" "$E2E_DIR/claim.json" &
client=$!
wait_cmd 10 test -f "$E2E_DIR/ready2"
sleep 1
data1=$(ingress_mem VmData) rss1=$(ingress_mem VmRSS)
wait "$client"
r=$(cat "$E2E_DIR/claim.json")
note "20 clients declaring exactly MAX_BODY, sending 100 bytes every 50 ms: $r; VmData $data0 -> $data1 kB"
like "$r" '"answered": 0, "closed_by_server": 0,' "the server waits for their bodies (no answer, connections kept)"
ok "issue 11: 20 connections claiming 4 MiB each hold less than 2x MAX_BODY in all (VmData)" \
    num_between $((data1 - data0)) -100000 $((2 * cap_kb))

# Real bodies: under the cap (chunked, so the buffer grows piece by piece)
# stored whole; over it refused, signed or not, and nothing stored.
head -c $((3 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$E2E_DIR/3m"
head -c $((5 * 1024 * 1024)) /dev/zero | tr '\0' 'b' >"$E2E_DIR/5m"
head -c $((20 * 1024 * 1024)) /dev/zero | tr '\0' 'c' >"$E2E_DIR/20m"
is "$(post_sw_file sw chunked-3m "$E2E_DIR/3m" '' -H 'Transfer-Encoding: chunked')" 200 \
   "a signed 3 MiB chunked body (under the cap) is stored"
is "$(sql "select length(payload) from pepsi.webhook_events where external_id = 'chunked-3m'")" 3145728 \
   "all 3 MiB of it"
tl0=$(metric 'pepsi_ingress_rejected_total{reason="body_too_large"}')
is "$(post_sw_file sw chunked-5m "$E2E_DIR/5m" '' -H 'Transfer-Encoding: chunked')" 413 \
   "issue 11: a signed chunked body that grows past MAX_BODY: 413"
like "$(cat "$E2E_DIR/last-answer")" body_too_large "its answer says body_too_large"
is "$(post_sw_file sw length-5m "$E2E_DIR/5m")" 413 "issue 11: a signed body whose Content-Length is over MAX_BODY: 413"
is "$(post_sw_file sw chunked-20m "$E2E_DIR/20m" '' -H 'Transfer-Encoding: chunked' -H 'Expect:')" 000 \
   "issue 11: a chunked body that goes on past twice MAX_BODY: the connection is cut"
is "$(sql "select count(*) from pepsi.webhook_events where external_id in ('chunked-5m', 'length-5m', 'chunked-20m')")" 0 \
   "issue 11: none of the oversized bodies is stored"
is "$(metric 'pepsi_ingress_rejected_total{reason="body_too_large"}')" $((tl0 + 3)) "all three counted as body_too_large"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"

# ---- idle connections, header size ----

ingress_conf "$conf" "CLIENT_TIMEOUT=2s" "MAX_HEADER=8KiB" </dev/null
ok "the ingress starts with CLIENT_TIMEOUT = 2s" start_ingress "$conf"
start=$(date +%s%N)
exec 3<>"/dev/tcp/127.0.0.1/$(port)"
timeout 15 cat <&3 >/dev/null
rc=$?
exec 3>&-
is "$rc" 0 "issue 11: an idle connection (nothing sent) is closed by the server"
ok "after CLIENT_TIMEOUT (2 s), not before" num_between "$(elapsed_ms "$start")" 1800 5000
start=$(date +%s%N)
exec 3<>"/dev/tcp/127.0.0.1/$(port)"
printf 'POST /hooks/sw HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":' >&3
timeout 15 cat <&3 >/dev/null
exec 3>&-
ok "a client that stops in the middle of its body is closed after CLIENT_TIMEOUT too" \
    num_between "$(elapsed_ms "$start")" 1800 5000

mid=$(head -c 6000 /dev/zero | tr '\0' m)
big=$(head -c 9000 /dev/zero | tr '\0' b)
is "$(post_sw sw hdr-6k '{"h":1}' '' -H "X-Padding: $mid")" 200 "a signed request with 6 kB of headers (under MAX_HEADER 8KiB): 200"
is "$(post_sw sw hdr-9k '{"h":2}' '' -H "X-Padding: $big")" 431 \
   "issue 11: a signed request with 9 kB of headers (over MAX_HEADER): 431 Request Header Fields Too Large"
is "$(sql "select string_agg(external_id, ',' order by external_id) from pepsi.webhook_events where external_id like 'hdr-%'")" \
   hdr-6k "only the request within MAX_HEADER is stored"
stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
