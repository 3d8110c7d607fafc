#!/usr/bin/env bash
# The webhook ingress through the router (issue 18): a router database and
# two shard clusters started here (as in 90-shards.t, smaller: 16
# partitions, no runner), two Standard Webhooks providers configured alike
# on both shards through the router, sw0's tube owned by shard 0 and sw1's
# by shard 1, and `pepsi-runner ingress` whose CONNINFO is the router (a
# login that is only pepsi_ingress there).
#   1. Signed webhooks of each provider are stored on the shard owning the
#      provider's tube, once (each sent twice: the second is a duplicate);
#      a forged signature is refused and nothing is stored anywhere; the
#      ingress's counters land on shard 0 (router_ingress.sql).
#   2. Shard 1's PostgreSQL stops: sw1's events are answered 5xx (the
#      provider retries), sw0's are stored; shard 1 back, the retried
#      event is stored once.
#   3. Provider changes through the router reach the ingress on SIGHUP
#      (nothing notifies through the router); providers that differ
#      between the shards make the ingress refuse them (log line), on
#      SIGHUP and at start (exit 1).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 29

PG=$E2E_ROOT/scripts/pg
ROUTER_DB=${E2E_DB}_router
LOGIN=e2e_ringress_$$

_ringress_cleanup() {
    local rc=$? s
    for s in 0 1; do
        "$PG" destroy "$E2E_DIR/pg$s" >/dev/null 2>&1
    done
    dropdb --if-exists --force "$ROUTER_DB" >/dev/null 2>&1
    psql -XAtq -d postgres -c "drop role if exists $LOGIN" >/dev/null 2>&1
    (exit $rc)
    _ingress_cleanup
}
trap _ringress_cleanup EXIT

ssql() { psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$1")" -c "$2" </dev/null; }
rsql() { psql -XAtq -v ON_ERROR_STOP=1 -d "$ROUTER_DB" -c "$1" </dev/null; }
quiet() { "$@" >/dev/null; }

# ---- the shards and the router -----------------------------------------------------

setup_shard() {
    local s=$1
    PEPSI_DBNAME=pepsi_shard$s "$PG" start "$E2E_DIR/pg$s" --fast >"$E2E_DIR/conninfo$s" || return 1
    psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$s")" -f "$E2E_ROOT/deploy/roles.sql" >/dev/null || return 1
    pg_dump -d "${PEPSI_E2E_TEMPLATE:-pepsi_tmpl}" |
        psql -XAtq -v ON_ERROR_STOP=1 -d "$(cat "$E2E_DIR/conninfo$s")" >/dev/null || return 1
    ssql "$s" "select pepsi.topology_set(16, 1)" >/dev/null &&
        ssql "$s" "select pepsi.shard_topology_set(2, array(select g * 2 / 16 from generate_series(0, 15) g), $s)" >/dev/null
}
setup_all() {
    setup_shard 0 && setup_shard 1 || return 1
    createdb "$ROUTER_DB" &&
        sqitch --chdir "$E2E_ROOT/router" deploy "db:pg:$ROUTER_DB" >"$E2E_DIR/router-sqitch.log" 2>&1 || return 1
    rsql "select pepsi_router.topology_set(16, 2, pepsi_router.shard_map_even(16, 2))" >/dev/null &&
        rsql "select count(*) from pepsi_router.cluster_apply(array['$(cat "$E2E_DIR/conninfo0")', '$(cat "$E2E_DIR/conninfo1")'])" >/dev/null
}
ok "two shard clusters and a router with the applied topology" setup_all

tube_of() { rsql "select t from (select 'hooks.' || g as t from generate_series(1, 100) g) x where pepsi_router.shard_of_tube(t) = $1 order by t limit 1"; }
t0=$(tube_of 0)
t1=$(tube_of 1)
add_providers() {
    rsql "select pepsi.webhook_provider_add('sw0', 'standard-webhooks', '{$SW_SECRET}', 'deliver', '$t0')" >/dev/null &&
        rsql "select pepsi.webhook_provider_add('sw1', 'standard-webhooks', '{$SW_SECRET}', 'deliver', '$t1')" >/dev/null
}
ok "issue 18: two providers added through the router (webhook_provider_add on every shard)" add_providers
is "$(ssql 0 "select string_agg(provider || '=' || tube, ',' order by provider) from pepsi.webhook_provider")/$(ssql 1 "select string_agg(provider || '=' || tube, ',' order by provider) from pepsi.webhook_provider")" \
   "sw0=$t0,sw1=$t1/sw0=$t0,sw1=$t1" "... alike on both shards, sw0's tube on shard 0, sw1's on shard 1"

# The ingress logs in to the router as a login that is only pepsi_ingress.
psql -XAtq -v ON_ERROR_STOP=1 -d postgres -c "create role $LOGIN login in role pepsi_ingress" >/dev/null
E2E_CONNINFO="host=$PGHOST port=$PGPORT user=$LOGIN dbname=$ROUTER_DB" ingress_conf "$E2E_DIR/ingress.conf" </dev/null
ok "issue 18: pepsi-runner ingress starts with CONNINFO = the router" start_ingress "$E2E_DIR/ingress.conf"
ok "... having loaded both providers from the router" grep -q "loaded 2 webhook provider(s)" "$INGRESS_LOG"

# ---- 1. each provider's events on its tube's shard, once --------------------------------

events() { # events SHARD: provider:external_id of its webhook events
    ssql "$1" "select coalesce(string_agg(provider || ':' || external_id, ',' order by provider, external_id), '') from pepsi.webhook_events"
}
is "$(post_sw sw0 e0a '{"n":"e0a"}')" 200 "issue 18: a signed webhook of sw0 through the router: 200"
is "$(post_sw sw1 e1a '{"n":"e1a"}')" 200 "issue 18: a signed webhook of sw1 through the router: 200"
is "$(post_sw sw0 e0a '{"n":"e0a"}')/$(post_sw sw1 e1a '{"n":"e1a"}')" 200/200 "each sent again: 200 both"
like "$(cat "$E2E_DIR/last-answer")" '"outcome":"(refreshed|duplicate)"' "... the second delivery is a duplicate"
is "$(events 0)|$(events 1)" "sw0:e0a|sw1:e1a" \
   "issue 18: each event stored once, on the shard that owns its provider's tube (none on the other)"
is "$(ssql 0 "select string_agg(tube, ',') from pepsi.workqueue")|$(ssql 1 "select string_agg(tube, ',') from pepsi.workqueue")" \
   "$t0|$t1" "issue 18: ... and its message queued there, in the provider's tube"
ts=$(date +%s)
sig=$(sw_signature "$SW_KEY_HEX" e1x "$ts" '{"n":"e1x"}')
forged=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$INGRESS_URL/hooks/sw1" -H "webhook-id: e1x" \
         -H "webhook-timestamp: $ts" -H "webhook-signature: v1,AAAA$sig" --data-binary '{"n":"e1x"}')
is "$forged" 401 "issue 18: a forged signature through the router: 401"
is "$(events 0)|$(events 1)" "sw0:e0a|sw1:e1a" "... and nothing more stored on any shard"
stats() { ssql "$1" "select coalesce(string_agg(counter || '=' || value, ',' order by counter), 'none') from (select counter, sum(value) as value from pepsi.ingress_stats where counter in ('stored', 'duplicate') group by counter) s"; }
is "$(stats 0)|$(stats 1)" "duplicate=2,stored=2|none" \
   "issue 18: the ingress's burst counters land on shard 0 alone (the documented shard), all four events counted"

# ---- 2. shard 1 stops ------------------------------------------------------------------

ok "shard 1's PostgreSQL stops" quiet "$PG" stop "$E2E_DIR/pg1"
code1=$(post_sw sw1 e1b '{"n":"e1b"}')
like "$code1" '^5[0-9][0-9]$' "issue 18: shard 1 down: sw1's event is answered 5xx (the provider retries), got $code1"
ok "... the writer logged the router's PX070 naming shard 1" grep -q "shard 1 did not answer" "$INGRESS_LOG"
is "$(post_sw sw0 e0b '{"n":"e0b"}')" 200 "issue 18: shard 1 down: sw0's event is still accepted"
is "$(events 0)" "sw0:e0a,sw0:e0b" "... and stored on shard 0"
ok "shard 1's PostgreSQL starts again" quiet "$PG" start "$E2E_DIR/pg1" --fast
retry_e1b() { post_sw sw1 e1b '{"n":"e1b"}'; }
ok "issue 18: shard 1 back: the provider's retry of sw1's event is accepted" wait_output 30 200 retry_e1b
is "$(post_sw sw1 e1b '{"n":"e1b"}')" 200 "... and once more (a duplicate)"
is "$(events 0)|$(events 1)" "sw0:e0a,sw0:e0b|sw1:e1a,sw1:e1b" "issue 18: the retried event is stored once, on shard 1"

# ---- 3. provider changes: SIGHUP; providers that differ are refused ------------------------

rsql "select pepsi.webhook_provider_add('sw2', 'standard-webhooks', '{$SW_SECRET}', 'deliver', '$t0')" >/dev/null
kill -HUP "$INGRESS_PID"
ok "issue 18: a provider added through the router reaches the ingress on SIGHUP" \
   wait_ingress_log "loaded 3 webhook provider\(s\)" 10
is "$(post_sw sw2 e2a '{"n":"e2a"}')" 200 "... and its webhooks are accepted"
ssql 1 "select pepsi.webhook_provider_add_secret('sw1', 'whsec_c2hhcmQxb25seQ==')" >/dev/null
kill -HUP "$INGRESS_PID"
ok "issue 18: sw1 given a secret on shard 1 only: on SIGHUP the ingress refuses the providers, naming sw1" \
   wait_ingress_log 'cannot load the webhook providers: .*webhook providers differ: "sw1"' 10
is "$(post_sw sw0 e0c '{"n":"e0c"}')" 200 "... and keeps serving with the providers it had"
stop_ingress
run_runner "$E2E_DIR/refused.log" -c "$E2E_DIR/ingress.conf" ingress
is "$?" 1 "issue 18: an ingress started while the shards' providers differ refuses to start (exit 1)"
ok "... with a clear log line" grep -Eq 'cannot load the webhook providers: .*webhook providers differ: "sw1" not the same on every shard' "$E2E_DIR/refused.log"

done_testing
