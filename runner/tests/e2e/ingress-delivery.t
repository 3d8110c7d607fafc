#!/usr/bin/env bash
# The http delivery stage end to end: events come in through the ingress,
# pepsi-runner serve runs pepsi-stage-http against a local test server that
# answers 200, 500 then 200, 400, or is not there at all:
#   200            finished, the event marked processed (W-18)
#   500, then 200  a host error (paused, retried), then finished
#   400            failed for good (failure_class permanent), event unprocessed
#   no server      a host error, retried later
# The destination receives the exact payload, the provider's headers, and a
# fresh Standard Webhooks signature when SIGNING_SECRET is set.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 20

# ---- the test server ----
cat >"$E2E_DIR/server.py" <<'PY'
import base64, hashlib, hmac, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log_path, port_path, key_hex = sys.argv[1], sys.argv[2], sys.argv[3]
key = bytes.fromhex(key_hex)
seen = {}
lock = threading.Lock()

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            seen[self.path] = seen.get(self.path, 0) + 1
            n = seen[self.path]
        msg_id, ts, sig = (self.headers.get(h, "") for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
        mac = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
        status = {"/ok": 200, "/bad": 400}.get(self.path, 500 if n == 1 else 200)
        rec = {"path": self.path, "n": n, "status": status, "body": body.decode("utf-8", "replace"),
               "headers": {k.lower(): v for k, v in self.headers.items()},
               "signature_valid": sig == "v1," + mac}
        with lock, open(log_path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        out = b'{"error":"try later"}' if status == 500 else b'{"error":"no such customer"}' if status == 400 else b"ok"
        self.send_response(status)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_path, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
PY
python3 "$E2E_DIR/server.py" "$E2E_DIR/received.jsonl" "$E2E_DIR/server.port" "$SW_KEY_HEX" &
server=$!
ok "the test server starts" wait_cmd 10 test -s "$E2E_DIR/server.port"
base=http://127.0.0.1:$(cat "$E2E_DIR/server.port")
dead_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" <<EOF
[pepsi-ingress]
PORT = 0

[stage-deliver-ok]
PROGRAM = pepsi-stage-http
URL = $base/ok
SIGNING_SECRET = $SW_SECRET
TIMEOUT = 5s

[stage-deliver-flaky]
PROGRAM = pepsi-stage-http
URL = $base/flaky

[stage-deliver-bad]
PROGRAM = pepsi-stage-http
URL = $base/bad

[stage-deliver-down]
PROGRAM = pepsi-stage-http
URL = http://127.0.0.1:$dead_port/nobody
TIMEOUT = 2s
EOF
for p in ok flaky bad down; do
    sql "select pepsi.webhook_provider_add('$p', 'standard-webhooks', '{$SW_SECRET}', 'deliver-$p')" >/dev/null
done
ok "the ingress starts" start_ingress "$conf"
body='{"type":"customer.created","data":{"id":"cus_1"}}'
for p in ok flaky bad down; do
    post_sw "$p" "evt_$p" "$body" >/dev/null
done
is "$(sql "select count(*) from pepsi.workqueue")" 4 "four events, four messages"

ok "the runner starts" start_runner "$conf"
event_done() { sql "select processed_at is not null from pepsi.webhook_events where external_id = '$1'"; }

# 200: finished, processed.
ok "200: the message finishes" wait_for "select count(*) from pepsi.workqueue where state->>'external_id' = 'evt_ok'" 0 20
is "$(event_done evt_ok)" t "W-18: 200: the event is marked processed"
rec=$(grep '"path": "/ok"' "$E2E_DIR/received.jsonl" | head -n 1)
like "$rec" "\"body\": \"$(printf '%s' "$body" | sed 's/"/\\\\"/g')\"" "the destination got the exact payload"
like "$rec" '"content-type": "application/json"' "with the provider's headers"
like "$rec" '"signature_valid": true' "and a valid fresh Standard Webhooks signature"
like "$rec" '"webhook-id": "evt_ok"' "webhook-id is the event's external id"

# 400: failed for good.
ok "400: the message fails" wait_for "select status from pepsi.workqueue where state->>'external_id' = 'evt_bad'" failed 20
is "$(sql "select state->>'failure_class' from pepsi.workqueue where state->>'external_id' = 'evt_bad'")" permanent \
   "400: failure_class permanent (D-110)"
like "$(sql "select state->>'last_error' from pepsi.workqueue where state->>'external_id' = 'evt_bad'")" 'HTTP 400.*no such customer' \
     "the reason says what the destination answered"
is "$(event_done evt_bad)" f "a failed delivery leaves the event unprocessed"

# 500 then 200: retried, then finished.
ok "500: a host error, the message is paused for a retry" \
    wait_for "select status from pepsi.workqueue where state->>'external_id' = 'evt_flaky'" paused 20
like "$(sql "select state->>'last_error' from pepsi.workqueue where state->>'external_id' = 'evt_flaky'")" 'HTTP 500' \
     "its last_error says HTTP 500"
sql "update pepsi.workqueue set timeout = now() where state->>'external_id' = 'evt_flaky'" >/dev/null
ok "after the backoff (shortened here) the retry gets 200 and the message finishes" \
    wait_for "select count(*) from pepsi.workqueue where state->>'external_id' = 'evt_flaky'" 0 20
is "$(grep -c '"path": "/flaky"' "$E2E_DIR/received.jsonl")" 2 "the destination saw two attempts"
is "$(event_done evt_flaky)" t "W-18: retried then finished: the event is processed"

# No server: a host error, retried later.
ok "a connection refused is a host error too (paused)" \
    wait_for "select status from pepsi.workqueue where state->>'external_id' = 'evt_down'" paused 20

stop_runner
stop_ingress
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
done_testing
