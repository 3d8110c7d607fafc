#!/usr/bin/env bash
# Fusion never changes an outcome (D-126..D-136): the same 2,000 messages
# (mixed senders and recipients, per-address settings that split some of
# them and fail others) through a pipeline of built-in metadata stages
# (if -> pass -> if -> discard/pass) end in identical rows and identical
# per-stage run counts with ALLOW_FUSION = yes and = no; with fusion on,
# a message is claimed once instead of once per stage.
. "$(dirname "$0")/lib.sh"
plan 12

pipeline() {
    cat <<EOF
[stage-in]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
NEXT = route
[stage-route]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = 16
CONDITION = state.n > 700 or sender_key == "from:big.example"
THEN = big
ELSE = small
[stage-big]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
NEXT = tag
[stage-small]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = 16
CONDITION = recipient ~ "@drop\\\\.example$"
THEN = drop
ELSE = tag
[stage-drop]
PROGRAM = pepsi-stage-discard
QUEUE_LIMIT = 16
[stage-tag]
PROGRAM = pepsi-stage-if
QUEUE_LIMIT = 16
CONDITION = state.n < 100
THEN = low
[stage-low]
PROGRAM = pepsi-stage-pass
QUEUE_LIMIT = 16
EOF
}

# Some recipients have settings of stage "small": a CONDITION that sends
# them to drop (so their messages split from the others), and one that
# cannot be parsed (so their messages fail there, D-114).
settings() {
    sql "select pepsi.settings_set('x@split.example', 'small', 'CONDITION', 'tube == \"default\"');
         select pepsi.settings_set('y@broken.example', 'small', 'CONDITION', 'tube === 1')" >/dev/null
}

inject() {
    sql "select pepsi.workqueue_inject_batch((
           select jsonb_agg(jsonb_build_object(
               'stage', 'in',
               'body', format('message %s', n),
               'envelope_sender', case n % 5 when 0 then 'a@big.example' else format('s%s@mail.example', n % 7) end,
               'recipients', case n % 11
                   when 0 then jsonb_build_array('r@drop.example')
                   when 1 then jsonb_build_array(format('r%s@keep.example', n), 'x@split.example')
                   when 2 then jsonb_build_array('y@broken.example')
                   else jsonb_build_array(format('r%s@keep.example', n)) end,
               'state', jsonb_build_object('n', n)))
             from generate_series(1, 2000) n))" >/dev/null
}

# What must be the same either way: the rows left, and the runs per stage.
outcome() {
    sql "select coalesce(string_agg(format('%s/%s/%s/%s', stage, status, state->>'failure_class', state->>'n'), ' '
                                    order by (state->>'n')::int, stage), '')
           from pepsi.workqueue"
}
runs() {
    sql "select string_agg(format('%s:%s', stage, runs), ' ' order by stage) from pepsi.stage_totals"
}
settled() { [ "$(sql "select count(*) from pepsi.workqueue where status in ('pending', 'running')")" = 0 ]; }

run_mode() {
    local fusion=$1 conf=$E2E_DIR/pepsi-$1.conf
    {
        echo "[pepsi]"
        echo "ALLOW_FUSION = $fusion"
        echo
        pipeline
    } | write_conf "$conf" STATS_INTERVAL=1s
    sql "truncate pepsi.workqueue, pepsi.stage_stats, pepsi.dispatch_stats, pepsi.settings, e2e_inserted"
    settings
    inject
    start_runner "$conf"
    # On a failure the runner is stopped too, so the other mode still starts.
    wait_cmd 120 settled || { stop_runner; return 1; }
    # The idle flush writes the figures (D-138).
    wait_for "select coalesce(sum(stages_executed), 0) >= 2000 from pepsi.stage_stats where stage = 'in'" t 20 ||
        { stop_runner; return 1; }
    sleep 1.2
    stop_runner
}

# Every row inserted into the queue, as inserted: the injects at "in" and
# the rows workqueue_split creates (D-124), which finish and are deleted
# before the end, so only this log shows them.
sql "create table e2e_inserted (id bigint not null, stage text not null, recipients text[] not null,
                                body_id bigint, n int);
     create function public.e2e_log_insert() returns trigger language plpgsql set search_path = public, pg_catalog as \$\$
     begin
         insert into public.e2e_inserted values (new.workqueue_id, new.stage, new.recipients, new.body_id,
                                          (new.state->>'n')::int);
         return null;
     end
     \$\$;
     create trigger e2e_log_insert after insert on pepsi.workqueue
        for each row execute function public.e2e_log_insert()" >/dev/null
# The split-offs: rows inserted at small that share the body of the
# message of the same n injected at in, with only x@split.example.
split_rows() {
    sql "select count(*) || '/' || count(distinct s.n) from e2e_inserted s join e2e_inserted i on i.n = s.n and i.stage = 'in'
          where s.stage = 'small' and s.body_id = i.body_id and s.recipients = '{x@split.example}'"
}
# Reached small (n <= 700, not from big.example) with x@split.example
# among two recipients: one split each.
splits=$(sql "select count(*) from generate_series(1, 2000) n where n % 11 = 1 and n <= 700 and n % 5 <> 0")

ok "ALLOW_FUSION = no: the 2,000 messages settle" run_mode no
split_off_rows=$(split_rows)
rows_off=$(outcome)
runs_off=$(runs)
claimed_off=$(sql "select claimed from pepsi.dispatch_stats")
split_off=$(sql "select count(*) from pepsi.workqueue where state->>'n' is not null")

ok "ALLOW_FUSION = yes: the same 2,000 messages settle" run_mode yes
split_on_rows=$(split_rows)
rows_on=$(outcome)
runs_on=$(runs)
claimed_on=$(sql "select claimed from pepsi.dispatch_stats")

is "$rows_on" "$rows_off" "D-130: the rows left are identical with and without fusion"
is "$runs_on" "$runs_off" "D-135: per-stage run counts are identical (fused stages counted from the report)"
like "$rows_on" 'small/failed/permanent/' "D-114: a per-address setting that breaks the section fails those messages"
# The broken address is reached by the messages that route sends to small.
is "$(sql "select count(*) from pepsi.workqueue where status = 'failed'")" \
   "$(sql "select count(*) from generate_series(1, 2000) n where n % 11 = 2 and n <= 700 and n % 5 <> 0")" \
   "D-114: exactly the messages of the broken address that reached small failed"
is "$split_off_rows $split_on_rows" "$splits/$splits $splits/$splits" \
   "D-124: with and without fusion, each message of x@split.example that reached small was split: one new row at small with that recipient alone, sharing the body"
# drop: the messages to r@drop.example that reached small, and the
# split-offs; tag: every message of big, and those of small that were
# neither dropped whole nor failed (the split originals included).
is "$(sql "select string_agg(format('%s:%s', stage, runs), ' ' order by stage) from pepsi.stage_totals
            where stage in ('drop', 'tag')")" \
   "$(sql "select format('drop:%s tag:%s',
                         count(*) filter (where small and n % 11 in (0, 1)),
                         count(*) filter (where not small or n % 11 not in (0, 2)))
             from (select n, n <= 700 and n % 5 <> 0 as small from generate_series(1, 2000) n) x")" \
   "D-124: the split-offs took the drop branch, their originals the tag branch (runs of drop and tag)"
ok "D-129: with fusion a message is claimed fewer times (claimed $claimed_on vs $claimed_off)" \
    test "$claimed_on" -lt "$claimed_off"
ok "D-129: without fusion every hop is a claim (at least 4 per message)" \
    test "$claimed_off" -ge 8000
# in (pass) loads nothing, so route (if: needs the metadata) is a hop of
# its own (D-126); big (pass) after route is always fused.
is "$(sql "select coalesce(sum(stages_executed), 0) || '/' || coalesce(sum(runs), 0)
             from pepsi.stage_stats where stage = 'big'")" \
   "0/$(sql "select count(*) from generate_series(1, 2000) n where n > 700 or n % 5 = 0")" \
   "D-141, D-135: with fusion big ran only inside route's passes, each run reported"
is "$split_off" "$(sql "select count(*) from pepsi.workqueue where state->>'n' is not null")" \
   "the same number of rows left in both modes"
done_testing
