#!/usr/bin/env bash
# Pull mode with real concurrent sessions (W-15..W-19): a puller holds its
# rows for its whole transaction, a second puller gets other rows at once
# (SKIP LOCKED, nobody waits), a redelivery of a held event is answered 200
# without waiting for the holder and applied once the row is free (the
# newest delivery for an event still unprocessed, W-11; nothing for one the
# holder processed, W-12; issue 12), and four pullers working at once
# process every event exactly once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ingress-lib.sh"
plan 19

conf=$E2E_DIR/ingress.conf
ingress_conf "$conf" </dev/null
sql "select pepsi.webhook_provider_add('app', 'standard-webhooks', '{$SW_SECRET}')" >/dev/null
ok "the ingress starts" start_ingress "$conf"
out=$(webhook_load -p "${INGRESS_URL##*:}" -P /hooks/app -s "$SW_SECRET" -c 8 -n 200 -r 1 -i ev_)
like "$out" '"status_2xx": 200,' "200 events delivered to a pulled provider"
is "$(sql "select count(*) from pepsi.workqueue")" 0 "W-15: a pulled provider's events make no message"

# Session A: pulls 50 and keeps its transaction open.
mkfifo "$E2E_DIR/a.in"
psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/a.in" >"$E2E_DIR/a.out" 2>&1 &
session_a=$!
exec 4>"$E2E_DIR/a.in"
cat >&4 <<EOF
begin;
create temp table mine as select webhook_event_id, external_id from pepsi.webhook_events_pull('app', 50);
\\copy mine to '$E2E_DIR/a.ids'
EOF
a_count() { cat "$E2E_DIR/a.ids" 2>/dev/null | wc -l; }
ok "session A pulled 50 events and holds them" wait_output 10 50 a_count

# Session B, while A holds its rows: no wait (lock_timeout would fire), other rows.
start=$(date +%s%N)
sql "set lock_timeout = '1s'; select webhook_event_id from pepsi.webhook_events_pull('app', 50)" >"$E2E_DIR/b.ids"
is "$?" 0 "W-17: session B's pull does not block on A's rows"
num_between "$(elapsed_ms "$start")" 0 900
ok "W-17: and returns at once" test $? = 0
is "$(wc -l <"$E2E_DIR/b.ids")" 50 "W-15: B gets 50 events too"
is "$(cut -f1 "$E2E_DIR/a.ids" | sort | comm -12 - <(sort "$E2E_DIR/b.ids") | wc -l)" 0 \
   "W-17: no event is held by both"

# A redelivery of an event A holds: answered at once, not refreshed under A.
held=$(head -n 1 "$E2E_DIR/a.ids" | cut -f2)
start=$(date +%s%N)
is "$(post_sw app "$held" '{"again":true}')" 200 "a redelivery of an event a puller holds: 200"
like "$(cat "$E2E_DIR/last-answer")$(elapsed_ms "$start")" '"outcome":"busy"' \
     "without waiting for the puller (outcome busy, $(elapsed_ms "$start") ms)"

echo "select pepsi.webhook_events_mark_processed(array(select webhook_event_id from mine)); commit;" >&4
exec 4>&-
wait "$session_a"
is "$(sql "select count(*) from pepsi.webhook_events where processed_at is not null")" 50 \
   "W-18: A marked its 50 and committed"
is "$(sql "select convert_from(payload, 'UTF8') <> '{\"again\":true}' from pepsi.webhook_events where external_id = '$held'")" t \
   "W-12: A processed the event it held, so the redelivery that came meanwhile changes nothing"

# Session C pulls, a redelivery comes, C gives up (rollback): the next pull
# hands out the redelivery, not the payload C had.
mkfifo "$E2E_DIR/c.in"
psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <"$E2E_DIR/c.in" >"$E2E_DIR/c.out" 2>&1 &
session_c=$!
exec 5>"$E2E_DIR/c.in"
cat >&5 <<EOF
begin;
create temp table mine as select webhook_event_id, external_id from pepsi.webhook_events_pull('app', 1);
\\copy mine to '$E2E_DIR/c.ids'
EOF
c_count() { cat "$E2E_DIR/c.ids" 2>/dev/null | wc -l; }
ok "session C pulled an event and holds it" wait_output 10 1 c_count
held_c=$(cut -f2 "$E2E_DIR/c.ids")
is "$(post_sw app "$held_c" '{"newer":true}')" 200 "a redelivery of it: 200"
like "$(cat "$E2E_DIR/last-answer")" '"outcome":"busy"' "outcome busy"
echo "rollback;" >&5
exec 5>&-
wait "$session_c"
is "$(sql "select convert_from(p.payload, 'UTF8') from pepsi.webhook_events_pull('app', 200) p
            where p.external_id = '$held_c'")" '{"newer":true}' \
   "W-11, issue 12: C gave up; the next pull hands out the redelivery, the newest payload"

# Four pullers at once, until nothing is left; each claim is recorded in a
# table whose primary key refuses a second claim of the same event.
sql "create table e2e_claims (webhook_event_id bigint primary key, worker int not null)" >/dev/null
puller() {
    local n
    for _ in $(seq 1 200); do
        n=$(psql -XAtq -v ON_ERROR_STOP=1 -d "$E2E_DB" <<EOF
set lock_timeout = '2s';
begin;
create temp table batch on commit drop as select webhook_event_id from pepsi.webhook_events_pull('app', 7);
insert into e2e_claims select webhook_event_id, $1 from batch;
select pepsi.webhook_events_mark_processed(array(select webhook_event_id from batch)) \\g /dev/null
select pg_sleep(0.02) \\g /dev/null
select count(*) from batch;
commit;
EOF
        ) || { echo "puller $1 failed" >>"$E2E_DIR/pullers.err"; return 1; }
        [ "$n" = 0 ] && return 0
    done
}
pids=()
for w in 1 2 3 4; do
    puller "$w" &
    pids+=($!)
done
wait "${pids[@]}"
ok "W-17: four concurrent pullers never failed (no lock wait, no double claim)" test ! -s "$E2E_DIR/pullers.err"
is "$(sql "select count(*) || '/' || count(distinct worker) from e2e_claims")" "150/4" \
   "W-17: the other 150 events were claimed once each, by all four pullers"
is "$(sql "select count(*) from pepsi.webhook_events where processed_at is null")" 0 "W-18: every event is processed"
stop_ingress
done_testing
