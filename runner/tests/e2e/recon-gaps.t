#!/usr/bin/env bash
# The gap scenario end to end (W-29..W-36): a provider's ids evt_0001 ..
# evt_1000 with 20 deliveries dropped (none after the last one that
# arrived: a missing id is only visible below an id that came). Passes find exactly the 20 gaps;
# still missing after a retry, each becomes a back-fill request that
# pepsi-stage-http (METHOD = GET) sends to a local server playing the
# provider's API: 15 answers are the event, stored through the ingest
# upsert and delivered exactly once (also when the original delivery
# arrives later, through the ingress); 5 answers are 404 and become
# tombstones. A second pass flags nothing, and a re-scan from the first
# id never flags the tombstoned ids again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 25

ids() { for n in "$@"; do printf 'evt_%04d\n' "$n"; done; }
dropped_n=(7 50 51 52 99 100 101 250 333 334 400 512 600 601 777 800 888 901 950 999)
empty_n=(51 250 601 888 999)   # the API has nothing for these: never sent
dropped=$(ids "${dropped_n[@]}" | sort)
empty=$(ids "${empty_n[@]}" | sort)
found=$(comm -23 <(echo "$dropped") <(echo "$empty"))

# ---- the provider's API and the destination ----
printf '%s\n' $found >"$E2E_DIR/api.found"
cat >"$E2E_DIR/server.py" <<'PY'
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log_path, port_path, found_path = sys.argv[1], sys.argv[2], sys.argv[3]
found = set(open(found_path).read().split())
lock = threading.Lock()

def record(rec):
    with lock, open(log_path, "a") as f:
        f.write(json.dumps(rec) + "\n")

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):                       # the provider's API: GET /v1/events/<id>
        ext = self.path.rsplit("/", 1)[-1]
        record({"kind": "api", "id": ext, "authorization": self.headers.get("Authorization", "")})
        if ext in found:
            out = json.dumps({"id": ext, "type": "invoice.paid", "source": "api"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            out = b'{"error": "no such event"}'
            self.send_response(404)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):                      # the destination: POST /deliver
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        record({"kind": "delivery", "id": json.loads(body)["id"]})
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_path, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
PY
python3 "$E2E_DIR/server.py" "$E2E_DIR/server.jsonl" "$E2E_DIR/server.port" "$E2E_DIR/api.found" &
server=$!
ok "the test server starts" wait_cmd 10 test -s "$E2E_DIR/server.port"
base=http://127.0.0.1:$(cat "$E2E_DIR/server.port")

conf=$E2E_DIR/pepsi.conf
write_conf "$conf" RECONCILE_INTERVAL=1h ANOMALY_INTERVAL=1h <<EOF
[pepsi-ingress]
PORT = 0

[stage-deliver]
PROGRAM = pepsi-stage-http
URL = $base/deliver
PARALLELISM = 2

[stage-backfill-acme]
PROGRAM = pepsi-stage-http
METHOD = GET
URL = $base/v1/events/{external_id}
AUTHORIZATION = Bearer sk_test_api
EOF
sql "select pepsi.webhook_provider_add('acme', 'standard-webhooks', '{$SW_SECRET}', 'deliver', p_id_source => 'json:id')" >/dev/null
sql "select pepsi.webhook_id_sequence_set('acme', 'prefixed', 'evt_', 4, p_retry_after => '0',
                                          p_backfill_stage => 'backfill-acme')" >/dev/null

# ---- 980 of 1000 events are delivered (one burst through the ingest upsert) ----
dropped_sql=$(IFS=,; echo "${dropped_n[*]}")
sql "select count(*) from pepsi.webhook_events_ingest(
       (select jsonb_agg(jsonb_build_object('provider', 'acme', 'external_id', format('evt_%s', lpad(n::text, 4, '0')),
                                            'payload', format('{\"id\":\"evt_%s\",\"type\":\"invoice.paid\"}', lpad(n::text, 4, '0')),
                                            'headers', '{\"content-type\": \"application/json\"}'::jsonb)
                         order by n)
          from generate_series(1, 1000) n where n not in ($dropped_sql)))" >/dev/null
is "$(sql "select count(*) from pepsi.webhook_events")" 980 "980 of the 1000 events arrived"
ok "the runner starts" start_runner "$conf"
ok "they are delivered and processed" \
    wait_for "select count(*) from pepsi.webhook_events where processed_at is not null" 980 60

# ---- gap detection ----
is "$(sql "select findings from pepsi.reconcile()")" 0 "W-36: the first pass only reads the high water"
is "$(sql "select findings from pepsi.reconcile()")" 20 "W-29: the second pass scans 1..1000 and records 20 gaps"
is "$(sql "select external_id from pepsi.webhook_gaps order by 1")" "$dropped" "W-30: exactly the 20 dropped ids"
is "$(sql "select scan_from from pepsi.webhook_id_sequence")" 1001 "W-36: the window advanced past them"

# ---- back-fill ----
is "$(sql "select findings from pepsi.reconcile()")" 20 "W-33: still missing after a retry: 20 back-fill requests"
ok "W-33: the http stage asks the API for each (GET), and every request is answered" \
    wait_for "select count(*) from pepsi.workqueue" 0 60
is "$(grep -c '"kind": "api"' "$E2E_DIR/server.jsonl")" 20 "W-33: 20 GETs, one per gap"
is "$(grep '"kind": "api"' "$E2E_DIR/server.jsonl" | grep -vc 'Bearer sk_test_api')" 0 \
   "each GET carried the API credential (AUTHORIZATION)"
is "$(sql "select external_id from pepsi.webhook_gaps where state = 'found' order by 1")" "$found" \
   "W-34: the 15 the API returned are stored (gaps found)"
is "$(sql "select external_id from pepsi.webhook_tombstones where source = 'backfill' order by 1")" "$empty" \
   "W-35: the 5 it had nothing for are tombstoned"
like "$(sql "select distinct reason from pepsi.webhook_tombstones")" 'HTTP 404' "W-35: with the reason"
is "$(sql "select count(*) from pepsi.webhook_events where processed_at is not null")" 995 \
   "W-34: 995 events stored and processed"
deliveries() { grep '"kind": "delivery"' "$E2E_DIR/server.jsonl" | sed 's/.*"id": "\([^"]*\)".*/\1/' | sort; }
is "$(deliveries | uniq -d | wc -l)" 0 "W-34: no event was delivered twice"
is "$(deliveries | wc -l)" 995 "W-34: every stored event was delivered once (980 + 15)"

# ---- the original delivery arrives later ----
ok "the ingress starts" start_ingress "$conf"
late=$(echo "$found" | head -n 1)
code=$(post_sw acme "msg_late" "{\"id\":\"$late\",\"type\":\"invoice.paid\"}")
is "$code $(cat "$E2E_DIR/last-answer")" '200 {"outcome":"processed"}' \
   "W-34: the original delivery of a back-filled event, arriving later: 200, already processed"
sleep 1
is "$(deliveries | grep -c "^$late\$")" 1 "W-34: and it is not delivered a second time"

# ---- nothing more to flag ----
is "$(sql "select findings from pepsi.reconcile()")" 0 "W-32: a second pass flags nothing"
sql "select pepsi.webhook_id_sequence_rewind('acme', 1)" >/dev/null
is "$(sql "select findings from pepsi.reconcile()")" 0 "W-32: a re-scan from evt_0001 never flags the tombstoned ids again"

stop_ingress
is "$?" 0 "the ingress stops cleanly"
stop_runner
is "$?" 0 "the runner stops cleanly"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
done_testing
