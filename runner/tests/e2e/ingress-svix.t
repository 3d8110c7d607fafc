#!/usr/bin/env bash
# Svix sends Standard Webhooks signatures under its own header names:
# svix-id, svix-timestamp, svix-signature (issue 11). The ingress takes
# them as aliases of webhook-*: a delivery with svix-* headers is verified,
# its id taken from svix-id, and stored; when both names are sent they must
# agree.
#
# The signatures here are made with openssl (sw_signature), which is what
# the svix library computes: testdata/svix-vectors.json holds the library's
# own output and test_signature checks it. With PEPSI_SVIX_NODE_MODULES set
# to a node_modules directory holding the svix npm package, one more
# delivery is signed by the library itself at the current time.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 14

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sv', 'standard-webhooks', '{$SW_SECRET}', p_stage => 'deliver', p_tube => 'svix')" \
    >/dev/null
ok "the ingress starts" start_ingress "$conf"
code() { curl -s -o "$E2E_DIR/last-answer" -w '%{http_code}' "$@"; }
stored() { sql "select count(*) from pepsi.webhook_events where external_id = '$1'"; }

body='{"type":"invoice.paid","data":{"id":"in_1"}}'
is "$(post_svix sv msg_svix_1 "$body")" 200 "issue 11: a delivery with svix-id, svix-timestamp, svix-signature: 200"
like "$(cat "$E2E_DIR/last-answer")" '"outcome":"new"' "its answer says new"
is "$(sql "select external_id || ' ' || convert_from(payload, 'UTF8') from pepsi.webhook_events where provider = 'sv'")" \
   "msg_svix_1 $body" "issue 11: stored once, its external id from svix-id, the exact body"
is "$(sql "select headers->>'svix-id' from pepsi.webhook_events where external_id = 'msg_svix_1'")/$(sql "select count(*) from pepsi.workqueue where tube = 'svix'")" \
   "msg_svix_1/1" "its headers are kept, and it became a message at its stage"

ts=$(date +%s)
sig=$(sw_signature "$SW_KEY_HEX" msg_svix_2 "$ts" "$body")
is "$(code -X POST "$INGRESS_URL/hooks/sv" -H "svix-id: msg_svix_2" -H "svix-timestamp: $ts" \
        -H "svix-signature: $sig" --data-binary "$body ")" 401 "issue 11: svix-* headers over a changed body: 401"
is "$(code -X POST "$INGRESS_URL/hooks/sv" -H "svix-id: msg_svix_2" -H "svix-timestamp: $ts" \
        -H "svix-signature: $sig" -H "webhook-id: msg_svix_2" -H "webhook-timestamp: $ts" -H "webhook-signature: $sig" \
        --data-binary "$body")" 200 "both header sets, with the same values: 200"
is "$(code -X POST "$INGRESS_URL/hooks/sv" -H "svix-id: msg_svix_3" -H "svix-timestamp: $ts" \
        -H "svix-signature: $(sw_signature "$SW_KEY_HEX" msg_svix_3 "$ts" "$body")" -H "webhook-id: msg_other" \
        --data-binary "$body")" 400 "issue 11: webhook-id and svix-id that differ: 400"
like "$(cat "$E2E_DIR/last-answer")" conflicting_headers "its answer says conflicting_headers"
is "$(code -X POST "$INGRESS_URL/hooks/sv" -H "webhook-id: msg_svix_4" -H "webhook-timestamp: $ts" \
        -H "webhook-signature: $(sw_signature "$SW_KEY_HEX" msg_svix_4 "$ts" "$body")" \
        -H "svix-signature: v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=" --data-binary "$body")" 400 \
   "issue 11: a valid webhook-signature beside a different svix-signature: 400, not stored on either"
is "$(stored msg_svix_2)/$(stored msg_svix_3)/$(stored msg_other)/$(stored msg_svix_4)" 1/0/0/0 \
   "only the agreeing delivery is stored"
is "$(metric 'pepsi_ingress_rejected_total{reason="conflicting_headers"}')" 2 "both counted as conflicting_headers"

# The svix library itself, when there is one to run.
svix_sign() {
    NODE_PATH=$PEPSI_SVIX_NODE_MODULES node -e '
        const { Webhook } = require("svix");
        const [secret, id, body] = process.argv.slice(1);
        const ts = Math.floor(Date.now() / 1000);
        process.stdout.write(ts + " " + new Webhook(secret).sign(id, new Date(ts * 1000), body));' \
        "$SW_SECRET" "$1" "$2"
}
if [ -n "${PEPSI_SVIX_NODE_MODULES:-}" ] && command -v node >/dev/null &&
    NODE_PATH=$PEPSI_SVIX_NODE_MODULES node -e 'require("svix")' 2>/dev/null; then
    read -r lts lsig <<<"$(svix_sign msg_svix_lib "$body")"
    is "$(code -X POST "$INGRESS_URL/hooks/sv" -H "svix-id: msg_svix_lib" -H "svix-timestamp: $lts" \
            -H "svix-signature: $lsig" --data-binary "$body")/$(stored msg_svix_lib)" 200/1 \
       "issue 11: a delivery signed now by the svix library, with svix-* headers: 200 and stored"
else
    _tap 0 "a delivery signed by the svix library # SKIP PEPSI_SVIX_NODE_MODULES names no node_modules with svix"
fi

stop_ingress
is "$?" 0 "SIGTERM: exit 0"
done_testing
