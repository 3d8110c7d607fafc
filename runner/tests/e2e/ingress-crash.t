#!/usr/bin/env bash
# D-78: an event acknowledged is an event stored. The ingress is killed
# with SIGKILL in the middle of a stream of bursts; every event that got a
# 2xx is in the database. A restarted ingress then takes the provider's
# redeliveries of everything: each event is stored once, with one message.
# Last, SIGTERM under load: exit 0, and again every 2xx is stored (what is
# verified after the signal is answered 503, never 2xx unstored).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 13

N=20000
conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('sw', 'standard-webhooks', '{$SW_SECRET}', 'deliver')" >/dev/null
ok "the ingress starts" start_ingress "$conf"
port=${INGRESS_URL##*:}

webhook_load -p "$port" -P /hooks/sw -s "$SW_SECRET" -c 16 -n $N -r 1 -i crash_ -a "$E2E_DIR/acked" \
    >"$E2E_DIR/load.out" 2>&1 &
load=$!
bursts_over() { [ "$(metric pepsi_ingress_bursts_total)" -gt "$1" ]; }
ok "bursts are being written" wait_cmd 30 bursts_over 20
kill_ingress
wait "$load"
note "$(cat "$E2E_DIR/load.out")"
acked=$(wc -l <"$E2E_DIR/acked")
note "acknowledged before the crash: $acked of $N"
num_between "$acked" 1 $((N - 1))
ok "the crash came in the middle of the stream" test $? = 0
psql -XAtq -d "$E2E_DB" -c "create table e2e_acked (id text)" -c "\\copy e2e_acked from '$E2E_DIR/acked'" >/dev/null
is "$(sql "select count(*) from e2e_acked")" "$acked" "the acknowledged ids are loaded"
is "$(sql "select count(*) from e2e_acked a where not exists
             (select 1 from pepsi.webhook_events e where e.provider = 'sw' and e.external_id = a.id)")" 0 \
   "D-78: every event answered 2xx is in the database"
is "$(sql "select count(*) from pepsi.webhook_events")" "$(sql "select count(*) from pepsi.workqueue")" \
   "every stored event has its message (same transaction)"

ok "the ingress starts again" start_ingress "$conf"
out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n $N -r 1 -i crash_)
note "$out"
like "$out" '"status_2xx": '$N',' "W-01: the provider's redeliveries after the restart: all 2xx"
is "$(sql "select count(*) from pepsi.webhook_events")/$(sql "select count(*) from pepsi.workqueue")" "$N/$N" \
   "W-13: every event once, with one message"

webhook_load -p "${INGRESS_URL##*:}" -P /hooks/sw -s "$SW_SECRET" -c 16 -n $N -r 1 -i term_ -a "$E2E_DIR/acked2" \
    >"$E2E_DIR/load2.out" 2>&1 &
load=$!
b0=$(metric pepsi_ingress_bursts_total)
ok "bursts are being written again" wait_cmd 30 bursts_over $((b0 + 20))
stop_ingress
is "$?" 0 "SIGTERM under load: exit 0"
wait "$load"
note "$(cat "$E2E_DIR/load2.out")"
psql -XAtq -d "$E2E_DB" -c "create table e2e_acked2 (id text)" -c "\\copy e2e_acked2 from '$E2E_DIR/acked2'" >/dev/null
num_between "$(sql "select count(*) from e2e_acked2")" 1 $((N - 1))
ok "the signal came in the middle of the stream" test $? = 0
is "$(sql "select count(*) from e2e_acked2 a where not exists
             (select 1 from pepsi.webhook_events e where e.provider = 'sw' and e.external_id = a.id)")" 0 \
   "D-78: after SIGTERM too, every event answered 2xx is in the database"
done_testing
